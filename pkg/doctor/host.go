package doctor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// Libraries the GPU sources load with dlopen.
const (
	LibDCGM = cgocall.LibDCGM
	LibNVML = cgocall.LibNVML
)

// capSysAdmin is CAP_SYS_ADMIN's bit in CapEff (linux/capability.h).
const capSysAdmin = 21

// Host probes the machine. Tests replace its members.
type Host struct {
	// FindLibrary returns where the dynamic loader would find name, or an
	// error naming the places searched.
	FindLibrary func(name string) (string, error)
	// DeviceNodes returns the NVIDIA device nodes present (/dev/nvidia*).
	DeviceNodes func() ([]string, error)
	// Access returns nil when the process may read and write path.
	Access func(path string) error
	// CapSysAdmin reports whether the process holds CAP_SYS_ADMIN.
	CapSysAdmin func() (bool, error)
}

func (h Host) withDefaults() Host {
	if h.FindLibrary == nil {
		h.FindLibrary = func(name string) (string, error) {
			return findLibrary(name, libraryDirs(os.Getenv("LD_LIBRARY_PATH"), "/etc/ld.so.conf.d"))
		}
	}
	if h.DeviceNodes == nil {
		h.DeviceNodes = func() ([]string, error) {
			return bounded.Glob(context.Background(), "/dev/nvidia*", hostReadTimeout)
		}
	}
	if h.Access == nil {
		h.Access = accessRW
	}
	if h.CapSysAdmin == nil {
		h.CapSysAdmin = func() (bool, error) { return capEffHas("/proc/self/status", capSysAdmin) }
	}
	return h
}

// standardLibDirs are where distributions and the NVIDIA container toolkit
// put the driver's and DCGM's libraries (the toolkit mounts them into
// /usr/lib/x86_64-linux-gnu or /usr/lib64; GKE into /usr/local/nvidia/lib64).
var standardLibDirs = []string{
	"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib",
	"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu", "/lib/aarch64-linux-gnu",
	"/usr/lib64", "/lib64", "/usr/lib", "/lib",
}

// libraryDirs lists the directories the dynamic loader searches:
// LD_LIBRARY_PATH, the directories of ld.so.conf.d, the standard ones.
// It does not read ld.so.cache, so a library found nowhere here may still
// load; the source check says whether it did.
func libraryDirs(ldLibraryPath, confDir string) []string {
	var dirs []string
	for _, d := range strings.Split(ldLibraryPath, ":") {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	confs, _ := bounded.Glob(context.Background(), filepath.Join(confDir, "*.conf"), hostReadTimeout)
	for _, c := range confs {
		data, err := readHostFile(c)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(line, "/") {
				dirs = append(dirs, line)
			}
		}
	}
	return append(dirs, standardLibDirs...)
}

// findLibrary returns the first dirs/name that exists.
func findLibrary(name string, dirs []string) (string, error) {
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if _, err := bounded.Stat(context.Background(), p, hostReadTimeout); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in LD_LIBRARY_PATH, ld.so.conf.d or the standard library directories", name)
}

// accessRW opens path for reading and writing, as the driver's libraries
// open device nodes, and closes it at once; the open is bounded as reads
// are, and nothing is read.
func accessRW(path string) error {
	_, err := bounded.Call(context.Background(), path, hostReadTimeout, func() (struct{}, error) {
		f, err := os.OpenFile(path, os.O_RDWR, 0) //nolint:gosec // G304: an NVIDIA device node from /dev/nvidia*; bounded:exempt opens to test permission, reads nothing
		if err != nil {
			return struct{}{}, err
		}
		return struct{}{}, f.Close()
	})
	return err
}

// hostReadTimeout bounds each read of a host file by the doctor.
const hostReadTimeout = 5 * time.Second

// maxHostFileBytes caps a loader configuration or /proc/self/status file,
// a few KiB each.
const maxHostFileBytes = 1 << 20

// readHostFile reads a small host file (ld.so.conf.d, /proc/self/status),
// bounded in time and size.
func readHostFile(path string) ([]byte, error) {
	return bounded.ReadFile(context.Background(), path, maxHostFileBytes, hostReadTimeout)
}

// capEffHas reads the CapEff line of a /proc/<pid>/status file.
func capEffHas(statusFile string, bit uint) (bool, error) {
	data, err := readHostFile(statusFile)
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		v, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			return false, fmt.Errorf("%s: CapEff %q: %w", statusFile, strings.TrimSpace(v), err)
		}
		return mask&(1<<bit) != 0, nil
	}
	return false, errors.New(statusFile + ": no CapEff line")
}
