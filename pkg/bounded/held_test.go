//go:build linux

package bounded

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// readHeld reads one File through a Batch.
func readHeld(t *testing.T, f File) Result {
	t.Helper()
	var b Batch
	out := make([]Result, 1)
	b.Read(t.Context(), []File{f}, out)
	return out[0]
}

// TestHeldReadsTheFileAgain: File.Hold keeps the file open; File.Held
// reads it again from its start as it is now, capped, and fails once
// closed; a file over its cap is not held.
func TestHeldReadsTheFileAgain(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "stat")
	if err := os.WriteFile(p, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := readHeld(t, File{Path: p, Limit: 8, Hold: true})
	if res.Err != nil || string(res.Data) != "first" || res.Held == nil {
		t.Fatalf("open: %q %v held=%v", res.Data, res.Err, res.Held)
	}
	h := res.Held
	if err := os.WriteFile(p, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := readHeld(t, File{Path: h.Path(), Limit: 8, Held: h}); res.Err != nil || string(res.Data) != "second" {
		t.Fatalf("again: %q %v, want the file as it is now", res.Data, res.Err)
	}
	if err := os.WriteFile(p, []byte("too long now"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := readHeld(t, File{Path: h.Path(), Limit: 8, Held: h}); !errors.Is(res.Err, ErrTooLarge) {
		t.Fatalf("again over the cap: %v, want ErrTooLarge", res.Err)
	}
	h.Close()
	h.Close() // twice is harmless
	if res := readHeld(t, File{Path: h.Path(), Limit: 8, Held: h}); !errors.Is(res.Err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", res.Err)
	}
	if res := readHeld(t, File{Path: p, Limit: 4, Hold: true}); !errors.Is(res.Err, ErrTooLarge) || res.Held != nil {
		t.Fatalf("open over the cap: %v held=%v", res.Err, res.Held)
	}
}

// TestHeldProcFileOutlivesNotItsProcess: a held /proc/<pid>/stat reads
// while the process runs and fails with ESRCH once it is reaped, which is
// what lets a resolver trust a held file not to answer for another process
// that takes the PID (fs/proc/base.c, proc_single_show: get_pid_task of
// the inode's struct pid, -ESRCH when the task is gone).
func TestHeldProcFileOutlivesNotItsProcess(t *testing.T) {
	t.Parallel()
	// stat, and oom_score_adj: the file processes.Resolver holds.
	for _, name := range []string{"stat", "oom_score_adj"} {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Skipf("no child process: %v", err)
		}
		pid := cmd.Process.Pid
		path := "/proc/" + strconv.Itoa(pid) + "/" + name
		res := readHeld(t, File{Path: path, Limit: 4 << 10, Hold: true})
		if res.Err != nil || res.Held == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("open %s: %v held=%v", path, res.Err, res.Held)
		}
		h := res.Held
		defer h.Close()
		if res := readHeld(t, File{Path: path, Limit: 4 << 10, Held: h}); res.Err != nil || len(res.Data) == 0 {
			t.Fatalf("%s again while running: %q %v", name, res.Data, res.Err)
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait() // reaped: the PID may be reused from now on
		res = readHeld(t, File{Path: path, Limit: 4 << 10, Held: h})
		if !errors.Is(res.Err, syscall.ESRCH) {
			t.Fatalf("%s again after exit: %q %v, want ESRCH", name, res.Data, res.Err)
		}
	}
}
