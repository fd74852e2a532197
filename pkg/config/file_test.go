//go:build unix

package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// mkfifo makes a named pipe nobody writes to: opening or reading it blocks.
func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return p
}

func TestReadFileRefusesWhatIsNotARegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	regular := filepath.Join(dir, "ok.csv")
	if err := os.WriteFile(regular, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.csv")
	if err := os.WriteFile(big, make([]byte, MaxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		path string
		want string // "" for success
	}{
		{"regular file", regular, ""},
		{"symlink to a regular file (ConfigMap mounts)", link, ""},
		{"named pipe", mkfifo(t), "not a regular file (it is a named pipe)"},
		{"directory", dir, "not a regular file (it is a directory)"},
		{"character device", os.DevNull, "not a regular file (it is a character device)"},
		{"missing", filepath.Join(dir, "none"), "no such file"},
		{"too large", big, "larger than 16 MiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A read that hung (a named pipe opened for reading blocks
			// until a writer comes) would end with this deadline's error
			// instead of the one wanted; no case waits for it.
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			data, err := ReadFile(ctx, tc.path)
			if tc.want == "" {
				if err != nil || string(data) != "x\n" {
					t.Errorf("ReadFile = %q, %v", data, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.path) {
				t.Errorf("err = %v, want it to name the path", err)
			}
		})
	}
}

func TestLoadCountersFIFOFailsFast(t *testing.T) {
	t.Parallel()
	done := make(chan error, 1)
	go func() {
		_, err := LoadCounters(mkfifo(t), fields.MustNew())
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("err = %v, want ErrNotRegular", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("LoadCounters on a named pipe did not return")
	}
}

// ReadFileLimit reads at most limit+1 bytes whatever the path is: a file of
// the limit reads, one byte more is refused, and so is a file whose size
// says less than it holds (a /proc file says 0) or a symbolic link to a
// large file; the error names the path and the cap.
func TestReadFileLimit(t *testing.T) {
	t.Parallel()
	const limit = 64
	dir := t.TempDir()
	file := func(name string, size int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("x", size)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	atLimit, over := file("at-limit", limit), file("over", limit+1)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file("large", 1<<20), link); err != nil {
		t.Fatal(err)
	}
	proc := "/proc/self/maps"
	if st, err := os.Stat(proc); err != nil || st.Size() != 0 {
		proc = "" // no procfs here
	}
	for _, tc := range []struct {
		name, path string
		want       string // "" for success
	}{
		{"at the limit", atLimit, ""},
		{"a byte over", over, "larger than 64 bytes"},
		{"symlink to a large file", link, "larger than 64 bytes"},
		{"a file whose size says 0", proc, "larger than 64 bytes"},
		{"named pipe", mkfifo(t), "not a regular file (it is a named pipe)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.path == "" {
				t.Skip("no procfs")
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			data, err := ReadFileLimit(ctx, tc.path, limit)
			if tc.want == "" {
				if err != nil || len(data) != limit {
					t.Errorf("ReadFileLimit = %d bytes, %v; want %d bytes", len(data), err, limit)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("err = %v, want it to name %s and contain %q", err, tc.path, tc.want)
			}
		})
	}
}
