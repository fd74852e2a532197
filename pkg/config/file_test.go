//go:build unix

package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
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

// TestReadBoundedStops checks that a read that never returns is abandoned
// when the context is canceled (SIGTERM) or the deadline passes.
func TestReadBoundedStops(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	cases := []struct {
		name    string
		ctx     context.Context
		timeout time.Duration
		want    error
	}{
		{"signal context canceled", canceled, time.Hour, context.Canceled},
		{"deadline", t.Context(), 50 * time.Millisecond, context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			block := make(chan struct{})
			t.Cleanup(func() { close(block) })
			// The read blocks until the test ends: returning at all is
			// what shows the bound works.
			_, err := Bounded(tc.ctx, "test:"+tc.name, tc.timeout, func() ([]byte, error) { <-block; return nil, nil })
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestBoundedOnePendingPerKey: while a read given up on is still blocked
// (a hung mount), another read of the same key fails at once instead of
// leaving one more goroutine behind; other keys are not held up, and once
// the blocked read returns the key reads again.
func TestBoundedOnePendingPerKey(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	var started atomic.Int32
	hung := func() ([]byte, error) { started.Add(1); <-block; return []byte("late"), nil }
	const key = "test:/mnt/nfs/hpc/0"
	if _, err := Bounded(t.Context(), key, 10*time.Millisecond, hung); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first read: %v, want a timeout", err)
	}
	for range 3 {
		if _, err := Bounded(t.Context(), key, 50*time.Millisecond, hung); !errors.Is(err, ErrPending) || !strings.Contains(err.Error(), key) {
			t.Fatalf("read while the first is blocked: %v, want ErrPending naming the key", err)
		}
	}
	if n := started.Load(); n != 1 {
		t.Errorf("%d reads started, want 1", n)
	}
	if data, err := Bounded(t.Context(), "test:other", time.Hour, func() ([]byte, error) { return []byte("ok"), nil }); err != nil || string(data) != "ok" {
		t.Errorf("another key: %q %v", data, err)
	}
	close(block)
	poll.Until(t, "the key reads again once the blocked read returned", func() bool {
		data, err := Bounded(t.Context(), key, time.Hour, func() ([]byte, error) { return []byte("again"), nil })
		if err != nil && !errors.Is(err, ErrPending) {
			t.Fatalf("read after the blocked one returned: %v", err)
		}
		return err == nil && string(data) == "again"
	})
}

// TestBoundedConcurrentReads: reads of one key that are not given up on
// run side by side (the doctor reads the counters file from two checks at
// once); only a read given up on holds the key.
func TestBoundedConcurrentReads(t *testing.T) {
	t.Parallel()
	const key = "test:/etc/gpu-exporter/counters.csv"
	release := make(chan struct{})
	var inFlight atomic.Int32
	slow := func() ([]byte, error) { inFlight.Add(1); <-release; return []byte("ok"), nil }
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := Bounded(t.Context(), key, time.Minute, slow)
			errs <- err
		}()
	}
	poll.Until(t, "both reads in flight", func() bool { return inFlight.Load() == 2 })
	close(release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent read: %v", err)
		}
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
