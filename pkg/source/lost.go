package source

import (
	"log/slog"
	"slices"
	"time"
)

// LostTracker remembers the GPUs that left a source's inventory until they
// come back: what DCGM and NVML sources report as LostGPUs. It is not safe
// for concurrent use; the source guards it.
type LostTracker struct {
	lost map[string]LostGPU // by UUID
}

// Update compares the GPUs of the previous inventory's entities (nil at
// the first inventory) with the next one's: a lost GPU listed again is
// back, a GPU of prev that next lacks is lost since now. Both are logged.
// GPUs without a UUID are not tracked. It returns the UUIDs of next's GPUs.
func (t *LostTracker) Update(prev, next []Entity, now time.Time, log *slog.Logger) (present map[string]bool) {
	if t.lost == nil {
		t.lost = map[string]LostGPU{}
	}
	present = map[string]bool{}
	for _, e := range next {
		if e.Kind != GPU || e.UUID == "" {
			continue
		}
		present[e.UUID] = true
		if _, ok := t.lost[e.UUID]; ok {
			delete(t.lost, e.UUID)
			log.Info("gpu back", "gpu", e.GPU, "uuid", e.UUID)
		}
	}
	for _, e := range prev {
		if e.Kind != GPU || e.UUID == "" || present[e.UUID] {
			continue
		}
		if _, ok := t.lost[e.UUID]; !ok {
			t.lost[e.UUID] = LostGPU{GPU: e.GPU, UUID: e.UUID, Since: now}
			log.Warn("gpu lost", "gpu", e.GPU, "uuid", e.UUID)
		}
	}
	return present
}

// List returns the lost GPUs by index.
func (t *LostTracker) List() []LostGPU {
	out := make([]LostGPU, 0, len(t.lost))
	for _, g := range t.lost {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b LostGPU) int { return a.GPU - b.GPU })
	return out
}
