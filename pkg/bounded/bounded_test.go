package bounded

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
)

// TestCallStops checks that a read that never returns is abandoned
// when the context is canceled (SIGTERM) or the deadline passes.
func TestCallStops(t *testing.T) {
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
			_, err := Call(tc.ctx, "test:"+tc.name, tc.timeout, func() ([]byte, error) { <-block; return nil, nil })
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestCallOnePendingPerKey: while a read given up on is still blocked
// (a hung mount), another read of the same key fails at once instead of
// leaving one more goroutine behind; other keys are not held up, and once
// the blocked read returns the key reads again.
func TestCallOnePendingPerKey(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	var started atomic.Int32
	hung := func() ([]byte, error) { started.Add(1); <-block; return []byte("late"), nil }
	const key = "test:/mnt/nfs/hpc/0"
	if _, err := Call(t.Context(), key, 10*time.Millisecond, hung); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first read: %v, want a timeout", err)
	}
	for range 3 {
		if _, err := Call(t.Context(), key, 50*time.Millisecond, hung); !errors.Is(err, ErrPending) || !strings.Contains(err.Error(), key) {
			t.Fatalf("read while the first is blocked: %v, want ErrPending naming the key", err)
		}
	}
	if n := started.Load(); n != 1 {
		t.Errorf("%d reads started, want 1", n)
	}
	if data, err := Call(t.Context(), "test:other", time.Hour, func() ([]byte, error) { return []byte("ok"), nil }); err != nil || string(data) != "ok" {
		t.Errorf("another key: %q %v", data, err)
	}
	close(block)
	poll.Until(t, "the key reads again once the blocked read returned", func() bool {
		data, err := Call(t.Context(), key, time.Hour, func() ([]byte, error) { return []byte("again"), nil })
		if err != nil && !errors.Is(err, ErrPending) {
			t.Fatalf("read after the blocked one returned: %v", err)
		}
		return err == nil && string(data) == "again"
	})
}

// TestCallConcurrentReads: reads of one key that are not given up on
// run side by side (the doctor reads the counters file from two checks at
// once); only a read given up on holds the key.
func TestCallConcurrentReads(t *testing.T) {
	t.Parallel()
	const key = "test:/etc/gpu-exporter/counters.csv"
	release := make(chan struct{})
	var inFlight atomic.Int32
	slow := func() ([]byte, error) { inFlight.Add(1); <-release; return []byte("ok"), nil }
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := Call(t.Context(), key, time.Minute, slow)
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
