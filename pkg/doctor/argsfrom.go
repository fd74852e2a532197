package doctor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
)

// exporterProgram is the exporter's program name (the image's
// /usr/bin/gpu-exporter, the systemd unit's).
const exporterProgram = "gpu-exporter"

// exporterCommandLine refuses an --args-from file whose program is not the
// exporter, rather than reading another program's arguments as flags. The
// documented /proc/1/cmdline is the exporter's only in a pod with its own
// PID namespace: with hostPID (process accounting) the pod shares the
// host's, whose PID 1 is the host's init (pid_namespaces(7)). For a
// /proc/<pid>/cmdline file it names the exporters the same procfs shows.
func exporterCommandLine(file, program string) error {
	base := filepath.Base(program)
	if base == exporterProgram {
		return nil
	}
	if self, err := os.Executable(); err == nil && base == filepath.Base(self) {
		return nil // a renamed binary running its own doctor
	}
	msg := fmt.Sprintf("--args-from %s: the command line of %s, not of %s", file, program, exporterProgram)
	if filepath.Base(file) != "cmdline" {
		return fmt.Errorf("%s: name the exporter's command line (/proc/<pid>/cmdline)", msg)
	}
	procfs := filepath.Dir(filepath.Dir(file))
	ctx, cancel := context.WithTimeout(context.Background(), cmdlineScanTimeout)
	defer cancel()
	found, err := exporterCommandLines(ctx, procfs)
	if err != nil {
		return fmt.Errorf("%s; with hostPID (process accounting) PID 1 is the host's init, and listing the command lines of %s: %w: name the exporter's /proc/<pid>/cmdline", msg, procfs, err)
	}
	if len(found) == 0 {
		return fmt.Errorf("%s; with hostPID (process accounting) PID 1 is the host's init, and %s shows no running %s: name its /proc/<pid>/cmdline", msg, procfs, exporterProgram)
	}
	return fmt.Errorf("%s; with hostPID (process accounting) PID 1 is the host's init: use --args-from=%s", msg, strings.Join(found, " or --args-from="))
}

// cmdlineScanTimeout bounds the reading of every process's command line
// (a process whose memory map is locked blocks the read of its cmdline, as
// it blocks ps); a variable for tests.
var cmdlineScanTimeout = 5 * time.Second

// maxProcfsEntries caps a listing of a procfs: far above the PID limit of
// any node (pid_max is at most 4194304, proc(5)), plus its other entries.
const maxProcfsEntries = 1<<22 + 1024

// maxCmdlineBytes caps one /proc/<pid>/cmdline: an exporter's command line
// is a few hundred bytes; other processes' longer ones are skipped.
const maxCmdlineBytes = 256 << 10

// exporterCommandLines lists the cmdline files under procfs of running
// exporters (not doctors), by PID. It fails when ctx ends first: a
// process whose memory map is locked blocks the read of its cmdline.
func exporterCommandLines(ctx context.Context, procfs string) ([]string, error) {
	entries, err := bounded.ReadDir(ctx, procfs, maxProcfsEntries, 0)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		data, err := bounded.ReadFile(ctx, filepath.Join(procfs, e.Name(), "cmdline"), maxCmdlineBytes, 0)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no answer within %s: %w", cmdlineScanTimeout, context.Cause(ctx))
		}
		if err != nil {
			continue // exited, or not readable
		}
		argv := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
		if filepath.Base(argv[0]) == exporterProgram && (len(argv) == 1 || argv[1] != "doctor") {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	out := make([]string, 0, len(pids))
	for _, pid := range pids {
		out = append(out, filepath.Join(procfs, strconv.Itoa(pid), "cmdline"))
	}
	return out, nil
}
