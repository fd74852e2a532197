//go:build cgo && linux

package dcgm

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/logthrottle"
	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

// An entity whose reads fail on every collection logs once per window, not
// once per collection (issue 15: log lines caused by input that repeats are
// rate-limited per cause).
func TestEntityReadFailureLogIsRateLimited(t *testing.T) {
	state := node()
	state.Values = []fakedcgm.Value{fakedcgm.Int("gpu", 0, 150, 50), fakedcgm.Int("gpu", 1, 150, 51)}
	h := start(t, state, testConfig())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h.src.mu.Lock()
	h.src.logs = logthrottle.New(h.src.log, logthrottle.Config{Now: func() time.Time { return now }})
	h.src.mu.Unlock()
	h.watch("DCGM_FI_DEV_GPU_TEMP")
	h.read()

	broken := state
	broken.Faults = []fakedcgm.Fault{
		{Func: "dcgmEntitiesGetLatestValues", Code: fakedcgm.StNotSupported},
		{Func: "dcgmEntityGetLatestValues", Code: fakedcgm.StNotSupported},
	}
	h.env.Write(t, broken)
	h.read()
	entities := h.log.count("dcgm entity read failed")
	if entities == 0 {
		t.Fatalf("no per-entity failure logged:\n%s", h.log)
	}
	const reads = 30
	for range reads {
		h.read()
	}
	if n := h.log.count("dcgm entity read failed"); n != entities {
		t.Errorf("%d more failing reads: %d lines, want %d (one per entity per window)", reads, n, entities)
	}
	h.src.mu.Lock()
	now = now.Add(logthrottle.DefaultWindow)
	h.src.mu.Unlock()
	h.read()
	if n, want := h.log.count("dcgm entity read failed"), 2*entities; n != want {
		t.Errorf("after the window: %d lines, want %d", n, want)
	}
	if got := strings.Count(h.log.String(), fmt.Sprintf("suppressed=%d", reads)); got != entities {
		t.Errorf("%d lines carry suppressed=%d, want %d:\n%s", got, reads, entities, h.log)
	}
}
