//go:build linux

package processes

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestResolverHoldsCachedStat: once a PID is cached, later collections
// read its liveness file through the held descriptor and open no path at
// all (the batch's path reads fail here), and still see an exit
// (RemoveProcess empties the held file, as procfs's fail).
func TestResolverHoldsCachedStat(t *testing.T) {
	t.Parallel()
	r, root := newTestResolver(t, 0)
	writeProc(t, root, 100, 5000, cgroupOf(uid, cid))
	r.Begin()
	if o, err := r.Resolve(t.Context(), 100); err != nil || o.PodUID != uid {
		t.Fatalf("first Resolve = %+v, %v", o, err)
	}
	r.batch.ReadFile = func(path string, _ int64, _ []byte) ([]byte, error) {
		return nil, errors.New("path read of " + path)
	}
	for range 3 {
		r.Begin()
		if o, err := r.Resolve(t.Context(), 100); err != nil || o.PodUID != uid {
			t.Fatalf("cached Resolve = %+v, %v; want the held file to answer", o, err)
		}
	}
	r.batch.ReadFile = nil
	if err := RemoveProcess(root, 100); err != nil {
		t.Fatal(err)
	}
	r.Begin()
	if _, err := r.Resolve(t.Context(), 100); !errors.Is(err, ErrExited) {
		t.Fatalf("after exit: %v, want ErrExited", err)
	}
	if r.Cached() != 0 {
		t.Errorf("cache holds %d PIDs after an exit", r.Cached())
	}
}

// TestResolverPIDReusedWhileHeld: the cached process exits and a process
// of another pod takes its PID before the next collection, which lists the
// PID again: the held file says the cached process is gone, and the PID is
// resolved anew by path, to the new pod; a PID not listed any more
// (ResolveKnown) is not.
func TestResolverPIDReusedWhileHeld(t *testing.T) {
	t.Parallel()
	for _, sameStart := range []bool{false, true} {
		r, root := newTestResolver(t, 0)
		writeProc(t, root, 100, 5000, cgroupOf(uid, cid))
		writeProc(t, root, 200, 5000, cgroupOf(uid, cid))
		r.Begin()
		for _, pid := range []uint32{100, 200} {
			if _, err := r.Resolve(t.Context(), pid); err != nil {
				t.Fatal(err)
			}
		}
		start := uint64(9000)
		if sameStart {
			start = 5000 // the fake's clock: only the held file can tell
		}
		for _, pid := range []uint32{100, 200} {
			if err := RemoveProcess(root, pid); err != nil {
				t.Fatal(err)
			}
			writeProc(t, root, pid, start, cgroupOf(uid2, cid2))
		}
		r.Begin()
		if o, err := r.Resolve(t.Context(), 100); err != nil || o != (Owner{PodUID: uid2, ContainerID: cid2}) {
			t.Fatalf("same start %v: reused PID resolves to %+v, %v; want pod %s", sameStart, o, err, uid2)
		}
		if _, err := r.ResolveKnown(t.Context(), 200); !errors.Is(err, ErrExited) {
			t.Fatalf("same start %v: reused PID not listed: %v, want ErrExited", sameStart, err)
		}
	}
}

// TestResolverRealProcfs runs the resolver on the host's /proc, which
// shows the test's own PID namespace: a child process resolves, is
// answered while it runs from its pidfd (one poll, no file read at all)
// or, with pidfds off, from its held liveness file, and is ErrExited once
// reaped, whoever takes its PID.
func TestResolverRealProcfs(t *testing.T) {
	t.Parallel()
	for _, pidfds := range []bool{true, false} {
		r, err := NewResolver("/proc", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if !r.pidfds {
			t.Fatal("/proc shows this process's PID namespace, but the resolver holds no pidfds")
		}
		r.pidfds = pidfds
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Skipf("no child process: %v", err)
		}
		pid := uint32(cmd.Process.Pid) //nolint:gosec // a PID fits
		r.Begin()
		if _, err := r.Resolve(t.Context(), pid); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("pidfds %v: running child: %v", pidfds, err)
		}
		c := r.cache[pid]
		if pidfds && (c.pidfd == 0 || c.held != nil) || !pidfds && (c.pidfd != 0 || c.held == nil) {
			t.Errorf("pidfds %v: the child is held by pidfd %d, file %v", pidfds, c.pidfd-1, c.held)
		}
		if pidfds {
			r.batch.ReadFile = func(path string, _ int64, _ []byte) ([]byte, error) {
				return nil, errors.New("path read of " + path)
			}
		}
		r.Begin()
		if _, err := r.Resolve(t.Context(), pid); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("pidfds %v: cached child: %v", pidfds, err)
		}
		r.batch.ReadFile = nil
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		r.Begin()
		if _, err := r.ResolveKnown(t.Context(), pid); !errors.Is(err, ErrExited) {
			t.Fatalf("pidfds %v: reaped child: %v, want ErrExited", pidfds, err)
		}
	}
}

// A directory laid out as procfs (no "self" link to this process) holds
// no pidfds: its PIDs are not this namespace's.
func TestResolverNoPidfdsOnFakeProcfs(t *testing.T) {
	t.Parallel()
	r, root := newTestResolver(t, 0)
	if r.pidfds {
		t.Fatal("a fake procfs gets pidfds")
	}
	if err := os.Symlink("1", filepath.Join(root, "self")); err != nil {
		t.Fatal(err)
	}
	if r2, _ := NewResolver(root, 0); r2.pidfds {
		t.Error("a procfs whose self is another process gets pidfds")
	}
}

// TestResolverHoldsWithinItsBound: beyond holdMax held files (a quarter of
// the open-file limit) processes are resolved by path on every collection,
// as before, and still answered from the cache.
func TestResolverHoldsWithinItsBound(t *testing.T) {
	t.Parallel()
	r, root := newTestResolver(t, 0)
	r.holdMax = 1
	writeProc(t, root, 100, 5000, cgroupOf(uid, cid))
	writeProc(t, root, 200, 5000, cgroupOf(uid2, cid2))
	for range 3 {
		r.Begin()
		for pid, want := range map[uint32]string{100: uid, 200: uid2} {
			if o, err := r.Resolve(t.Context(), pid); err != nil || o.PodUID != want {
				t.Fatalf("Resolve(%d) = %+v, %v", pid, o, err)
			}
		}
		r.End()
		held := 0
		for _, c := range r.cache {
			if c.held != nil {
				held++
			}
		}
		if held != 1 || r.Cached() != 2 {
			t.Fatalf("%d files held, %d PIDs cached; want 1 and 2", held, r.Cached())
		}
	}
}

// TestResolverCachedReadsNoStat: a cached process is answered from its
// held liveness file alone; its stat, which the kernel builds from every
// thread's times, is not read again (here it reads empty, which a read of
// it would take for an exit).
func TestResolverCachedReadsNoStat(t *testing.T) {
	t.Parallel()
	r, root := newTestResolver(t, 0)
	writeProc(t, root, 100, 5000, cgroupOf(uid, cid))
	r.Begin()
	if _, err := r.Resolve(t.Context(), 100); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(root, "100", "stat"), 0); err != nil {
		t.Fatal(err)
	}
	r.Begin()
	if o, err := r.Resolve(t.Context(), 100); err != nil || o.PodUID != uid {
		t.Fatalf("cached Resolve = %+v, %v; want the held liveness file to answer", o, err)
	}
}

// TestResolverWithoutLivenessFile: a procfs tree without oom_score_adj
// (a test's, a kernel's without it) holds nothing: its processes are
// resolved by path and answered from the cache by start time, and a
// reused PID is resolved anew.
func TestResolverWithoutLivenessFile(t *testing.T) {
	t.Parallel()
	r, root := newTestResolver(t, 0)
	writeProc(t, root, 100, 5000, cgroupOf(uid, cid))
	if err := os.Remove(filepath.Join(root, "100", aliveFile)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r.Begin()
		if o, err := r.Resolve(t.Context(), 100); err != nil || o.PodUID != uid {
			t.Fatalf("Resolve = %+v, %v", o, err)
		}
		r.End()
	}
	if r.cache[100].held != nil {
		t.Error("a missing liveness file is held")
	}
	if err := RemoveProcess(root, 100); err != nil {
		t.Fatal(err)
	}
	writeProc(t, root, 100, 9000, cgroupOf(uid2, cid2))
	r.Begin()
	if o, err := r.Resolve(t.Context(), 100); err != nil || o.PodUID != uid2 {
		t.Fatalf("reused PID: Resolve = %+v, %v; want pod %s", o, err, uid2)
	}
}
