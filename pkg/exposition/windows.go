package exposition

import (
	"sort"
	"strconv"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// maxWindowEntries bounds the events and samples kept per GPU for a window
// counter; during a storm past it the oldest are dropped first.
const maxWindowEntries = 10000

// windows keeps what dcgm-exporter's window counters count: the XID events
// and the clock event bitmask samples of each GPU (by UUID) during the
// window. dcgm-exporter asks DCGM for the values recorded since the window
// start; DCGM records the bitmask once per collection interval, as the
// collector samples it here.
type windows struct {
	xid   map[string][]timedValue
	clock map[string][]timedValue
	// reasons are the clock event bits dcgm-exporter names.
	reasons []fields.Reason
}

// timedValue is an XID code or a clock event bitmask, and when it was seen.
type timedValue struct {
	t time.Time
	v int64
}

func newWindows() windows {
	f, _ := fields.MustNew().ByID(fields.ClockEventReasonsID)
	return windows{xid: map[string][]timedValue{}, clock: map[string][]timedValue{}, reasons: f.Reasons}
}

// update records the sample and returns the window counters to render.
func (w *windows) update(s *source.Sample, k Counters) []WindowFamily {
	var out []WindowFamily
	if x := k.XIDErrorsCount; x != nil {
		for _, ev := range s.XIDs {
			if ev.Entity < 0 || ev.Entity >= len(s.Inventory.Entities) {
				continue
			}
			t := ev.Time
			if t.IsZero() {
				t = s.Time
			}
			uuid := s.Inventory.Entities[ev.Entity].UUID
			w.xid[uuid] = appendBounded(w.xid[uuid], timedValue{t, ev.XID})
		}
		prune(w.xid, s.Time.Add(-x.Window))
		out = append(out, windowFamily(s, x, WindowXID, w.xid, xidEvents))
	} else {
		clear(w.xid)
	}
	if c := k.ClockEventsCount; c != nil {
		if col := clockColumn(s); col >= 0 {
			for e := range s.Inventory.Entities {
				ent := &s.Inventory.Entities[e]
				if ent.Kind != source.GPU {
					continue
				}
				if x, ok := s.At(e, col).Number(); ok {
					w.clock[ent.UUID] = appendBounded(w.clock[ent.UUID], timedValue{s.Time, int64(x)})
				}
			}
		}
		prune(w.clock, s.Time.Add(-c.Window))
		out = append(out, windowFamily(s, c, WindowClockEvent, w.clock, w.clockEvents))
	} else {
		clear(w.clock)
	}
	return out
}

// clockColumn is the sample column of the clock event bitmask, or -1.
func clockColumn(s *source.Sample) int {
	for col := range s.Fields {
		if s.Fields[col].ID == fields.ClockEventReasonsID && s.Fields[col].Kind != fields.Label {
			return col
		}
	}
	return -1
}

func appendBounded(vs []timedValue, v timedValue) []timedValue {
	if len(vs) >= maxWindowEntries {
		vs = append(vs[:0], vs[len(vs)-maxWindowEntries+1:]...)
	}
	return append(vs, v)
}

// prune drops what was seen before start, and GPUs left with nothing.
func prune(m map[string][]timedValue, start time.Time) {
	for uuid, vs := range m {
		i := 0
		for i < len(vs) && vs[i].t.Before(start) {
			i++
		}
		if i == len(vs) {
			delete(m, uuid)
			continue
		}
		m[uuid] = vs[i:]
	}
}

// counter turns the values of one GPU into event counts, by event label.
type counter func(vs []timedValue) map[string]uint64

func xidEvents(vs []timedValue) map[string]uint64 {
	out := map[string]uint64{}
	for _, v := range vs {
		out[strconv.FormatInt(v.v, 10)]++
	}
	return out
}

// clockEvents counts, per reason, the samples with the reason active. A GPU
// whose samples had no reason active counts nothing: like dcgm-exporter it
// then has no series at all, while a GPU without samples has a zero series.
func (w *windows) clockEvents(vs []timedValue) map[string]uint64 {
	out := map[string]uint64{}
	for _, v := range vs {
		for _, r := range w.reasons {
			if uint64(v.v)&r.Bit != 0 { //nolint:gosec // G115: a bitmask, read bit for bit
				out[r.DCGMName]++
			}
		}
	}
	return out
}

// windowFamily builds one window family over the GPUs of the sample.
func windowFamily(s *source.Sample, wc *WindowCounter, label string, m map[string][]timedValue, count counter) WindowFamily {
	wf := WindowFamily{Name: wc.Name, Help: wc.Help, Type: wc.Type, Label: label, Window: wc.Window}
	for e := range s.Inventory.Entities {
		ent := &s.Inventory.Entities[e]
		if ent.Kind != source.GPU {
			continue
		}
		vs, seen := m[ent.UUID]
		if !seen {
			wf.Counts = append(wf.Counts, WindowCount{Entity: e})
			continue
		}
		start := len(wf.Counts)
		for event, n := range count(vs) {
			wf.Counts = append(wf.Counts, WindowCount{Entity: e, Event: event, Count: n})
		}
		sortEvents(wf.Counts[start:], label)
	}
	return wf
}

// sortEvents orders one GPU's counts: XID codes numerically, clock events
// by name.
func sortEvents(cs []WindowCount, label string) {
	sort.Slice(cs, func(a, b int) bool {
		if label == WindowXID {
			x, _ := strconv.ParseInt(cs[a].Event, 10, 64)
			y, _ := strconv.ParseInt(cs[b].Event, 10, 64)
			return x < y
		}
		return cs[a].Event < cs[b].Event
	})
}
