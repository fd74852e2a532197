package processes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	uid2 = "11111111-2222-4333-8444-555555555555"
	cid2 = "aaaaaaaaaaaabbbbbbbbbbbbccccccccccccddddddddddddeeeeeeeeeeeeffff"
)

func cgroupOf(podUID, containerID string) string {
	return "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" +
		strings.ReplaceAll(podUID, "-", "_") + ".slice/cri-containerd-" + containerID + ".scope\n"
}

func writeProc(t *testing.T, root string, pid uint32, start uint64, cgroup string) {
	t.Helper()
	if err := WriteProcess(root, pid, "python3 (worker)", start, cgroup); err != nil {
		t.Fatal(err)
	}
}

func newTestResolver(t *testing.T, maxCached int) (*Resolver, string) {
	t.Helper()
	root := t.TempDir()
	r, err := NewResolver(root, maxCached)
	if err != nil {
		t.Fatal(err)
	}
	return r, root
}

func TestResolverResolves(t *testing.T) {
	t.Parallel()
	r, root := newTestResolver(t, 0)
	writeProc(t, root, 100, 5000, cgroupOf(uid, cid))
	writeProc(t, root, 200, 6000, "0::/system.slice/nvidia-persistenced.service\n")
	r.Begin()
	got, err := r.Resolve(t.Context(), 100)
	if err != nil || got != (Owner{PodUID: uid, ContainerID: cid}) {
		t.Fatalf("Resolve(100) = %+v, %v", got, err)
	}
	got, err = r.Resolve(t.Context(), 200)
	if err != nil || !got.Host() {
		t.Fatalf("Resolve(200) = %+v, %v; want a host process", got, err)
	}
}

// The answer is cached while the PID keeps its start time: a changed
// cgroup file is not read again (the cgroup of a running container's
// process does not change).
func TestResolverCachesUntilPIDReused(t *testing.T) {
	t.Parallel()
	r, root := newTestResolver(t, 0)
	writeProc(t, root, 100, 5000, cgroupOf(uid, cid))
	r.Begin()
	if _, err := r.Resolve(t.Context(), 100); err != nil {
		t.Fatal(err)
	}
	// Same process (same start time): the cache answers.
	writeProc(t, root, 100, 5000, cgroupOf(uid2, cid2))
	r.Begin()
	got, err := r.Resolve(t.Context(), 100)
	if err != nil || got.PodUID != uid {
		t.Fatalf("same process: Resolve = %+v, %v; want the cached pod %s", got, err, uid)
	}
	// PID reused by another pod's process: new start time, new answer.
	// The kernel reuses only a reaped PID.
	if err := RemoveProcess(root, 100); err != nil {
		t.Fatal(err)
	}
	writeProc(t, root, 100, 9000, cgroupOf(uid2, cid2))
	r.Begin()
	got, err = r.Resolve(t.Context(), 100)
	if err != nil || got != (Owner{PodUID: uid2, ContainerID: cid2}) {
		t.Fatalf("reused PID: Resolve = %+v, %v; want pod %s", got, err, uid2)
	}
}

// A process listed by the GPU that exits before the procfs read is
// reported as ErrExited and leaves the cache.
func TestResolverExitRace(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		remove func(t *testing.T, root string)
	}{
		{"directory gone", func(t *testing.T, root string) {
			if err := RemoveProcess(root, 100); err != nil {
				t.Fatal(err)
			}
		}},
		{"cgroup file gone", func(t *testing.T, root string) {
			if err := os.Remove(filepath.Join(root, "100", "cgroup")); err != nil {
				t.Fatal(err)
			}
		}},
		{"cgroup file empty (exiting)", func(t *testing.T, root string) {
			if err := os.WriteFile(filepath.Join(root, "100", "cgroup"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"stat empty (exiting)", func(t *testing.T, root string) {
			if err := os.WriteFile(filepath.Join(root, "100", "stat"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, root := newTestResolver(t, 0)
			writeProc(t, root, 100, 5000, cgroupOf(uid, cid))
			tc.remove(t, root)
			r.Begin()
			_, err := r.Resolve(t.Context(), 100)
			if !errors.Is(err, ErrExited) {
				t.Fatalf("Resolve error = %v, want ErrExited", err)
			}
			if r.Cached() != 0 {
				t.Errorf("cache holds %d PIDs after an exit", r.Cached())
			}
		})
	}
	t.Run("cached process exits", func(t *testing.T) {
		t.Parallel()
		r, root := newTestResolver(t, 0)
		writeProc(t, root, 100, 5000, cgroupOf(uid, cid))
		r.Begin()
		if _, err := r.Resolve(t.Context(), 100); err != nil {
			t.Fatal(err)
		}
		if err := RemoveProcess(root, 100); err != nil {
			t.Fatal(err)
		}
		r.Begin()
		if _, err := r.Resolve(t.Context(), 100); !errors.Is(err, ErrExited) {
			t.Fatalf("Resolve error = %v, want ErrExited", err)
		}
		if r.Cached() != 0 {
			t.Errorf("cache holds %d PIDs after an exit", r.Cached())
		}
	})
}

func TestResolverEndForgetsUnseen(t *testing.T) {
	t.Parallel()
	r, root := newTestResolver(t, 0)
	for pid := uint32(1); pid <= 3; pid++ {
		writeProc(t, root, pid, 100, cgroupOf(uid, cid))
	}
	r.Begin()
	for pid := uint32(1); pid <= 3; pid++ {
		if _, err := r.Resolve(t.Context(), pid); err != nil {
			t.Fatal(err)
		}
	}
	r.End()
	r.Begin()
	if _, err := r.Resolve(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	r.End()
	if r.Cached() != 1 {
		t.Errorf("cache holds %d PIDs, want the 1 seen in the last collection", r.Cached())
	}
}

func TestResolverBound(t *testing.T) {
	t.Parallel()
	r, root := newTestResolver(t, 2)
	for pid := uint32(1); pid <= 5; pid++ {
		writeProc(t, root, pid, 100, cgroupOf(uid, cid))
	}
	r.Begin()
	for pid := uint32(1); pid <= 5; pid++ {
		if o, err := r.Resolve(t.Context(), pid); err != nil || o.PodUID != uid {
			t.Fatalf("Resolve(%d) = %+v, %v", pid, o, err)
		}
	}
	if r.Cached() != 2 || r.Uncached != 3 {
		t.Errorf("cached %d, uncached %d; want 2 and 3", r.Cached(), r.Uncached)
	}
}

func TestResolverBadFiles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, stat, cgroup, wantErr string
	}{
		{"stat without comm", "100 S 1\n", cgroupOf(uid, cid), "no command name"},
		{"stat short", "100 (x) S 1 2 3\n", cgroupOf(uid, cid), "fields after the command name"},
		{"stat bad start", "100 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 soon 0\n", cgroupOf(uid, cid), "start time"},
		{"cgroup bad", "", "nonsense\n", "cgroup line 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, root := newTestResolver(t, 0)
			writeProc(t, root, 100, 1, tc.cgroup)
			if tc.stat != "" {
				if err := os.WriteFile(filepath.Join(root, "100", "stat"), []byte(tc.stat), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r.Begin()
			_, err := r.Resolve(t.Context(), 100)
			if err == nil || errors.Is(err, ErrExited) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Resolve error = %v, want one containing %q", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), root) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestNewResolverRejects(t *testing.T) {
	t.Parallel()
	if _, err := NewResolver("", 0); err == nil {
		t.Error("empty procfs accepted")
	}
	if _, err := NewResolver("/proc", -1); err == nil {
		t.Error("negative bound accepted")
	}
}
