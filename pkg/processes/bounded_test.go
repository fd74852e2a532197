//go:build unix

package processes

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
)

// blockingRead is a Resolver's batch read that blocks on the files whose
// path ends with suffix until release is closed, as a /proc read blocks
// behind a process stuck in the kernel; other files read as usual. The
// batch around it is the real one, so abandonment is the real one.
func blockingRead(suffix string, release <-chan struct{}) func(string, int64, []byte) ([]byte, error) {
	return func(path string, _ int64, buf []byte) ([]byte, error) {
		if strings.HasSuffix(path, suffix) {
			<-release
			return nil, errors.New("released")
		}
		b, err := os.ReadFile(path)
		return append(buf, b...), err
	}
}

// call runs f on its own goroutine and fails the test when it has not
// returned within 20s: a read that ignored its bounds would hang here.
func call[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return poll.ReceiveWithin(t, 20*time.Second, what, ch)
}

// TestResolverRefusesWhatWouldBlockOrNeverEnd: a procfs file that is not a
// regular file is refused before it is opened (a named pipe blocked the
// open forever; a link to /dev/zero grew the exporter by 1.5 GB in two
// seconds), and a regular file over its cap is refused after the cap, with
// an error naming the file.
func TestResolverRefusesWhatWouldBlockOrNeverEnd(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file string
		make       func(t *testing.T, path string)
		want       string
	}{
		{"stat is a named pipe", "stat", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "not a regular file (it is a named pipe)"},
		{"cgroup is a named pipe", "cgroup", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "not a regular file (it is a named pipe)"},
		{"stat links to /dev/zero", "stat", func(t *testing.T, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (it is a character device)"},
		{"stat over its cap", "stat", func(t *testing.T, p string) {
			if err := os.WriteFile(p, make([]byte, MaxStatBytes+1), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "larger than 4 KiB"},
		{"cgroup over its cap", "cgroup", func(t *testing.T, p string) {
			line := "0::/kubepods/pod" + uid + "/" + cid + "\n"
			if err := os.WriteFile(p, []byte(strings.Repeat(line, MaxCgroupBytes/len(line)+1)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "larger than 64 KiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, root := newTestResolver(t, 0)
			writeProc(t, root, 100, 5000, cgroupOf(uid, cid))
			path := filepath.Join(root, "100", tc.file)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			tc.make(t, path)
			err := call(t, "Resolve", func() error { _, err := r.Resolve(t.Context(), 100); return err })
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v, want one naming %s with %q", err, path, tc.want)
			}
		})
	}
}

// TestResolverAbandonsABlockedRead: a procfs read that blocks is abandoned
// after the resolver's timeout; while it stays blocked, the same file fails
// at once (one goroutine held, not one per collection) and other processes
// resolve; once it returns, the process resolves again.
func TestResolverAbandonsABlockedRead(t *testing.T) {
	t.Parallel()
	r, root := newTestResolver(t, 0)
	writeProc(t, root, 100, 5000, cgroupOf(uid, cid))
	writeProc(t, root, 200, 5000, cgroupOf(uid2, cid2))
	release := make(chan struct{})
	r.batch.ReadFile, r.batch.Stall = blockingRead("/100/stat", release), 50*time.Millisecond

	err := call(t, "the blocked Resolve", func() error { _, err := r.Resolve(t.Context(), 100); return err })
	if !errors.Is(err, bounded.ErrAbandoned) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("blocked read: %v, want it abandoned at the resolver's timeout", err)
	}
	for range 3 {
		if _, err := r.Resolve(t.Context(), 100); !errors.Is(err, bounded.ErrPending) {
			t.Fatalf("read while the first is blocked: %v, want ErrPending", err)
		}
	}
	if o, err := r.Resolve(t.Context(), 200); err != nil || o.PodUID != uid2 {
		t.Fatalf("another process: %+v %v", o, err)
	}
	close(release)
	poll.Until(t, "the process resolves once the blocked read returned", func() bool {
		r.batch.ReadFile = nil
		o, err := r.Resolve(t.Context(), 100)
		return err == nil && o.PodUID == uid
	})
}

// TestAccountantCollectEndsWithItsContext: process accounting blocked in a
// procfs read returns when the collection's deadline passes or the process
// stops, with the context's error and no partial sums, instead of holding
// the collection (and shutdown) for as long as the read blocks.
func TestAccountantCollectEndsWithItsContext(t *testing.T) {
	t.Parallel()
	for _, stop := range []struct {
		name string
		ctx  func(t *testing.T) (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func(t *testing.T) (context.Context, context.CancelFunc) {
			return context.WithTimeout(t.Context(), 100*time.Millisecond)
		}, context.DeadlineExceeded},
		{"shutdown", func(t *testing.T) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
	} {
		t.Run(stop.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			a, _, _ := newTestAccountant(t, root, sharedGPU(t, root), ModeContainer, names)
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			// The read's own timeout is far away: only the context ends it.
			a.resolver.batch.ReadFile, a.resolver.batch.Stall = blockingRead("/20/cgroup", release), time.Hour
			ctx, cancel := stop.ctx(t)
			defer cancel()
			type result struct {
				got []DeviceUsage
				err error
			}
			r := call(t, "Collect", func() result { got, err := a.Collect(ctx); return result{got, err} })
			if !errors.Is(r.err, stop.want) || r.got != nil {
				t.Fatalf("Collect = %v, %v; want no usage and %v", r.got, r.err, stop.want)
			}
		})
	}
}
