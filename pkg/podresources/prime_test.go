package podresources

import (
	"context"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim/kubelet"
)

// TestPrimeWaitsForTheFirstAnswer: Prime returns with the kubelet's
// holders published even when the kubelet takes its time to answer, so the
// first collection after it carries them; Run then waits a refresh
// interval before its next List instead of asking again at once.
func TestPrimeWaitsForTheFirstAnswer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	h.srv.SetPods([]kubelet.Pod{gpuPod("ml", "train", "nvidia.com/gpu", uuid0)})
	h.srv.SetHang(300 * time.Millisecond) // a slow first answer
	if err := h.c.Prime(t.Context()); err != nil {
		t.Fatalf("Prime: %v", err)
	}
	if !h.c.Up() || h.c.Table().Len() != 1 {
		t.Fatalf("after Prime: up %v, %d allocations; want the kubelet's one", h.c.Up(), h.c.Table().Len())
	}
	h.srv.SetHang(0)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	ticks := make(chan time.Duration, 1)
	h.c.after = func(d time.Duration) <-chan time.Time { ticks <- d; return nil }
	go func() { defer close(done); h.c.Run(ctx) }()
	if d := poll.Receive(t, "Run to wait", ticks); d != time.Hour {
		t.Errorf("Run's first wait %s, want the refresh interval", d)
	}
	if n := h.srv.ListCalls(); n != 1 {
		t.Errorf("%d List calls, want 1: Run must not ask again right after Prime", n)
	}
	cancel()
	poll.Receive(t, "Run to return", done)
}

// TestPrimeKubeletDown: a kubelet that does not answer within the call
// timeout leaves the documented outage state (down, no holders) and Run
// retries after its back-off, not after the refresh interval.
func TestPrimeKubeletDown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	if err := h.c.Prime(t.Context()); err == nil {
		t.Fatal("Prime succeeded without a kubelet")
	}
	if h.c.Up() || h.c.Table().Len() != 0 {
		t.Fatal("up, or holders, without a kubelet")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	ticks := make(chan time.Duration, 1)
	h.c.after = func(d time.Duration) <-chan time.Time { ticks <- d; return nil }
	go func() { defer close(done); h.c.Run(ctx) }()
	if d := poll.Receive(t, "Run to wait", ticks); d >= time.Hour {
		t.Errorf("Run's first wait %s, want the back-off", d)
	}
	cancel()
	poll.Receive(t, "Run to return", done)
}
