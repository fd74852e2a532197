//go:build cgo && linux

package dcgm

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

// P2PStatus reads dcgmGetNvLinkP2PStatus (the fake's p2p lines) as one
// entry per ordered pair of distinct GPUs, and reads it again only once the
// fabric interval has passed.
func TestP2PStatus(t *testing.T) {
	state := fabricNode()
	state.P2P = []fakedcgm.P2P{{GPU: 1, Peer: 0, Status: 4}}
	h := start(t, state, fabricConfig())
	h.watch("DCGM_FI_DEV_GPU_TEMP")
	h.read()
	clock := time.Now()
	h.src.mu.Lock()
	h.src.now = func() time.Time { return clock }
	h.src.mu.Unlock()
	get := func() []source.P2PLink {
		t.Helper()
		got, err := h.src.P2PStatus(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// Both GPUs have NVLinks up: the fake answers OK unless a p2p line says
	// otherwise.
	want := []source.P2PLink{{GPU: 0, Peer: 1, Status: 0}, {GPU: 1, Peer: 0, Status: 4}}
	if got := get(); !slices.Equal(got, want) {
		t.Fatalf("P2PStatus = %v, want %v", got, want)
	}
	state.P2P = []fakedcgm.P2P{{GPU: 0, Peer: 1, Status: 3}}
	h.env.Write(t, state)
	if got := get(); !slices.Equal(got, want) {
		t.Errorf("within the fabric interval: %v, want the last read %v", got, want)
	}
	h.src.mu.Lock()
	clock = clock.Add(time.Second)
	h.src.mu.Unlock()
	want = []source.P2PLink{{GPU: 0, Peer: 1, Status: 3}, {GPU: 1, Peer: 0, Status: 0}}
	if got := get(); !slices.Equal(got, want) {
		t.Errorf("after the fabric interval: %v, want %v", got, want)
	}
}
