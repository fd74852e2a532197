// Package fakedcgm builds and drives a fake libdcgm.so.4 (libdcgm/fakedcgm.c) so
// that tests run the real go-dcgm bindings, and the code above them, without
// a GPU, a driver or a DCGM hostengine.
//
// go-dcgm dlopens "libdcgm.so.4" by name inside dcgm.Init and resolves every
// dcgm* function lazily, through the process's global symbol scope, on first
// call. There are two ways to put the fake there:
//
//   - In the test process: Load builds the library and dlopens it by
//     absolute path with RTLD_GLOBAL before dcgm.Init runs. The library's
//     SONAME is libdcgm.so.4, and the dynamic loader matches an already
//     loaded object by SONAME, so go-dcgm's own dlopen gets the fake and no
//     LD_LIBRARY_PATH (which the loader reads only at process start) is
//     needed.
//   - In a child process (the exporter binary in an end-to-end test): Build
//     the library and start the child with LD_LIBRARY_PATH=Lib.Dir and the
//     variables of Env.Environ.
//
// The fake's behaviour comes from a state file (FAKEDCGM_STATE) that it
// re-reads on every call; see the comment at the top of libdcgm/fakedcgm.c for its
// format, which State.Render writes. After every call the fake rewrites a
// calls file (FAKEDCGM_CALLS) that Env.Calls parses.
//
// Building needs gcc and go-dcgm's bundled headers; by hand:
//
//	gcc -shared -fPIC -O1 -fvisibility=hidden \
//	    -I"$(go list -m -f '{{.Dir}}' github.com/NVIDIA/go-dcgm)/pkg/dcgm" \
//	    -Wl,-soname,libdcgm.so.4 -o libdcgm.so.4 tests/fakedcgm/libdcgm/fakedcgm.c -lpthread
package fakedcgm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// SOName is the file name and SONAME go-dcgm loads.
const SOName = "libdcgm.so.4"

const dcgmModule = "github.com/NVIDIA/go-dcgm"

// Lib is a built fake library.
type Lib struct {
	// Dir holds libdcgm.so.4: the value for LD_LIBRARY_PATH.
	Dir string
	// Path is the library's absolute path.
	Path string
}

// ErrNoCompiler reports that gcc (or $CC) is not installed.
var ErrNoCompiler = errors.New("fakedcgm: no C compiler (gcc) in PATH")

// Build compiles the fake library, or reuses a copy built from the same
// source and headers, and returns it. It skips the test when no C compiler is
// installed and fails it on any other error.
func Build(t testing.TB) *Lib {
	t.Helper()
	lib, err := BuildCached()
	if errors.Is(err, ErrNoCompiler) {
		t.Skipf("skipping: %v; install gcc to run the go-dcgm tests against the fake libdcgm", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// BuildCached builds the library into a content-addressed directory under
// the user cache directory (or the temp directory), keyed by the source,
// the headers' location and the compiler, so that test binaries share one
// build.
func BuildCached() (*Lib, error) {
	cc, err := compiler()
	if err != nil {
		return nil, err
	}
	src, err := sourcePath()
	if err != nil {
		return nil, err
	}
	inc, err := includeDir()
	if err != nil {
		return nil, err
	}
	code, err := os.ReadFile(src)
	if err != nil {
		return nil, fmt.Errorf("fakedcgm: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", cc, inc, strings.Join(cflags(inc), " "))
	h.Write(code)
	key := hex.EncodeToString(h.Sum(nil))[:20]

	var bases []string
	if base, err := os.UserCacheDir(); err == nil {
		bases = append(bases, base)
	}
	bases = append(bases, os.TempDir())
	var lastErr error
	for _, base := range bases {
		dir := filepath.Join(base, "gpu-exporter", "fakedcgm", key)
		path := filepath.Join(dir, SOName)
		if _, err := os.Stat(path); err == nil {
			return &Lib{Dir: dir, Path: path}, nil
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			lastErr = fmt.Errorf("fakedcgm: %w", err)
			continue // read-only cache: try the next place
		}
		if err := compile(cc, inc, src, path); err != nil {
			return nil, err
		}
		return &Lib{Dir: dir, Path: path}, nil
	}
	return nil, lastErr
}

// BuildTo compiles the library into dir (created if needed), for scripts
// and harnesses that want it in a place of their choosing.
func BuildTo(dir string) (*Lib, error) {
	cc, err := compiler()
	if err != nil {
		return nil, err
	}
	src, err := sourcePath()
	if err != nil {
		return nil, err
	}
	inc, err := includeDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("fakedcgm: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("fakedcgm: %w", err)
	}
	path := filepath.Join(abs, SOName)
	if err := compile(cc, inc, src, path); err != nil {
		return nil, err
	}
	return &Lib{Dir: abs, Path: path}, nil
}

// BuildProgram compiles the C program src (a DCGM client written against
// dcgm_agent.h) into dir, linked against lib as a real program links
// against libdcgm.so.4, and returns the executable's path. Run it with
// LD_LIBRARY_PATH=lib.Dir and the Env's variables.
func BuildProgram(t testing.TB, lib *Lib, src string) string {
	t.Helper()
	cc, err := compiler()
	if errors.Is(err, ErrNoCompiler) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	inc, err := includeDir()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(src), ".c"))
	args := []string{"-O1", "-Wall", "-Wextra", "-I" + inc, "-o", exe, src, lib.Path}
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("fakedcgm: %s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
	}
	return exe
}

func cflags(inc string) []string {
	return []string{"-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-fvisibility=hidden",
		"-I" + inc, "-Wl,-soname," + SOName}
}

// compile writes the library next to path and renames it into place, so a
// concurrent build in another test binary never sees a partial file.
func compile(cc, inc, src, path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".build-*.so")
	if err != nil {
		return fmt.Errorf("fakedcgm: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := append(cflags(inc), "-o", tmp.Name(), src, "-lpthread")
	var out bytes.Buffer
	cmd := exec.Command(cc, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("fakedcgm: %s %s: %w\n%s", cc, strings.Join(args, " "), err, out.String())
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("fakedcgm: %w", err)
	}
	return nil
}

func compiler() (string, error) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	path, err := exec.LookPath(cc)
	if err != nil {
		return "", ErrNoCompiler
	}
	return path, nil
}

// sourcePath finds fakedcgm.c next to this file.
func sourcePath() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok {
		src := filepath.Join(filepath.Dir(file), "libdcgm", "fakedcgm.c")
		if _, err := os.Stat(src); err == nil {
			return src, nil
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "github.com/gpu-exporter/gpu-exporter/tests/fakedcgm").Output()
	if err != nil {
		return "", fmt.Errorf("fakedcgm: cannot find fakedcgm.c: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "libdcgm", "fakedcgm.c"), nil
}

// includeDir returns go-dcgm's bundled header directory; FAKEDCGM_INCLUDE
// overrides it.
func includeDir() (string, error) {
	if dir := os.Getenv("FAKEDCGM_INCLUDE"); dir != "" {
		return dir, nil
	}
	src, err := sourcePath()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", dcgmModule)
	cmd.Dir = filepath.Dir(src)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("fakedcgm: locating %s headers: %w: %s", dcgmModule, err, stderr.String())
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "pkg", "dcgm")
	if _, err := os.Stat(filepath.Join(dir, "dcgm_agent.h")); err != nil {
		return "", fmt.Errorf("fakedcgm: go-dcgm headers not found in %s (run go mod download %s): %w", dir, dcgmModule, err)
	}
	return dir, nil
}
