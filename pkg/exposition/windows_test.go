package exposition

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

var windowT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// windowSample is a sample of two GPUs and a MIG instance with the clock
// event bitmask column set to masks[gpu], at t0+at.
func windowSample(t *testing.T, at time.Duration, masks [2]int64, xids ...source.XIDEvent) *source.Sample {
	t.Helper()
	inv := &source.Inventory{}
	for i := range 2 {
		inv.Entities = append(inv.Entities, source.Entity{Kind: source.GPU, GPU: i, UUID: fmt.Sprintf("GPU-%d", i), GPUInstance: -1, ComputeInstance: -1})
	}
	inv.Entities = append(inv.Entities, source.Entity{Kind: source.GPUInstance, GPU: 0, UUID: inv.Entities[0].UUID, GPUInstance: 1})
	f, _ := fields.MustNew().ByID(fields.ClockEventReasonsID)
	s := source.NewSample(windowT0.Add(at), inv, []fields.Field{f})
	s.Set(0, 0, source.IntValue(masks[0]))
	s.Set(1, 0, source.IntValue(masks[1]))
	s.XIDs = xids
	return s
}

func counts(wf WindowFamily) map[int]map[string]uint64 {
	out := map[int]map[string]uint64{}
	for _, c := range wf.Counts {
		if out[c.Entity] == nil {
			out[c.Entity] = map[string]uint64{}
		}
		out[c.Entity][c.Event] = c.Count
	}
	return out
}

func TestXIDWindowCountsAndSlides(t *testing.T) {
	t.Parallel()
	w := newWindows()
	k := Counters{XIDErrorsCount: &WindowCounter{Name: fields.XIDErrorsCountName, Type: fields.Counter, Window: time.Minute}}
	steps := []struct {
		at   time.Duration
		xids []source.XIDEvent
		want map[int]map[string]uint64
	}{
		{0, nil, map[int]map[string]uint64{0: {"": 0}, 1: {"": 0}}},
		{10 * time.Second, []source.XIDEvent{
			{Entity: 1, XID: 79, Time: windowT0.Add(5 * time.Second)},
			{Entity: 1, XID: 79, Time: windowT0.Add(9 * time.Second)},
			{Entity: 1, XID: 13}, // no time: the sample's
			{Entity: 2, XID: 31}, // a MIG instance row: counted under its UUID, the parent GPU's
		}, map[int]map[string]uint64{0: {"31": 1}, 1: {"13": 1, "79": 2}}},
		{66 * time.Second, nil, map[int]map[string]uint64{0: {"31": 1}, 1: {"13": 1, "79": 1}}}, // the first 79 left the window
		{71 * time.Second, nil, map[int]map[string]uint64{0: {"": 0}, 1: {"": 0}}},
	}
	for _, st := range steps {
		fams := w.update(windowSample(t, st.at, [2]int64{}, st.xids...), k)
		if len(fams) != 1 || fams[0].Label != WindowXID || fams[0].Window != time.Minute {
			t.Fatalf("at %s: families = %+v", st.at, fams)
		}
		if got := counts(fams[0]); !equalCounts(got, st.want) {
			t.Errorf("at %s: counts = %v, want %v", st.at, got, st.want)
		}
	}
	// Turning the counter off forgets its events.
	w.update(windowSample(t, 72*time.Second, [2]int64{}, source.XIDEvent{Entity: 0, XID: 1}), Counters{})
	if len(w.xid) != 0 {
		t.Error("events kept while the counter is off")
	}
}

func TestClockEventsWindow(t *testing.T) {
	t.Parallel()
	w := newWindows()
	k := Counters{ClockEventsCount: &WindowCounter{Name: fields.ClockEventsCountName, Type: fields.Counter, Window: 25 * time.Second}}
	steps := []struct {
		at    time.Duration
		masks [2]int64
		want  map[int]map[string]uint64
	}{
		{0, [2]int64{0x4, 0}, map[int]map[string]uint64{0: {"power_cap": 1}}},
		{10 * time.Second, [2]int64{0x4 | 0x20, 0}, map[int]map[string]uint64{0: {"power_cap": 2, "sw_thermal": 1}}},
		{20 * time.Second, [2]int64{0, 0x1}, map[int]map[string]uint64{0: {"power_cap": 2, "sw_thermal": 1}, 1: {"gpu_idle": 1}}},
		{30 * time.Second, [2]int64{0, 0}, map[int]map[string]uint64{0: {"power_cap": 1, "sw_thermal": 1}, 1: {"gpu_idle": 1}}},
		{50 * time.Second, [2]int64{0, 0}, map[int]map[string]uint64{}},
	}
	for _, st := range steps {
		fams := w.update(windowSample(t, st.at, st.masks), k)
		if len(fams) != 1 || fams[0].Label != WindowClockEvent {
			t.Fatalf("at %s: families = %+v", st.at, fams)
		}
		// A GPU whose samples in the window had no reason active has no
		// series at all, as in dcgm-exporter.
		if got := counts(fams[0]); !equalCounts(got, st.want) {
			t.Errorf("at %s: counts = %v, want %v", st.at, got, st.want)
		}
	}
	// Without any sample (the bitmask blank) a GPU has a zero series.
	s := windowSample(t, time.Hour, [2]int64{})
	s.Set(0, 0, source.Value{})
	s.Set(1, 0, source.Value{})
	if got := counts(w.update(s, k)[0]); !equalCounts(got, map[int]map[string]uint64{0: {"": 0}, 1: {"": 0}}) {
		t.Errorf("GPUs without samples: counts = %v, want zero series", got)
	}
}

func equalCounts(a, b map[int]map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for e, m := range a {
		if len(m) != len(b[e]) {
			return false
		}
		for k, v := range m {
			if n, ok := b[e][k]; !ok || n != v {
				return false
			}
		}
	}
	return true
}
