package exposition

import (
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// Each naming decides what is watched besides the counters' fields, and
// whether lost GPUs and health incidents are asked for.
func TestSchemeWatchSet(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	util, _ := cat.ByID(203)
	clock, _ := cat.ByID(fields.ClockEventReasonsID)
	driver, _ := cat.LookupLabel("DCGM_FI_DRIVER_VERSION")
	window := &WindowCounter{Name: fields.ClockEventsCountName, Window: time.Minute}
	k := Counters{Fields: []fields.Field{util}, Labels: []fields.Field{driver}, ClockEventsCount: window}
	cases := []struct {
		name        string
		naming      Naming
		k           Counters
		wantIDs     []uint16
		wantExtra   int
		wantsHealth bool
	}{
		{"prometheus ignores label fields and windows", NamingPrometheus, k, []uint16{203}, 0, true},
		{"dcgm adds label fields and the window's input", NamingDCGM, k, []uint16{203, driver.ID, fields.ClockEventReasonsID}, 1, false},
		{"dcgm reuses a listed bitmask", NamingDCGM, Counters{Fields: []fields.Field{util, clock}, ClockEventsCount: window}, []uint16{203, fields.ClockEventReasonsID}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := NewRenderer(Options{Naming: tc.naming})
			set, extra := r.WatchSet(tc.k)
			var ids []uint16
			for _, f := range set {
				ids = append(ids, f.ID)
			}
			if len(ids) != len(tc.wantIDs) || extra != tc.wantExtra {
				t.Fatalf("WatchSet = %v, extra %d; want %v, extra %d", ids, extra, tc.wantIDs, tc.wantExtra)
			}
			for i := range ids {
				if ids[i] != tc.wantIDs[i] {
					t.Errorf("WatchSet = %v, want %v", ids, tc.wantIDs)
				}
			}
			if got := r.WantsHealth(); got != tc.wantsHealth {
				t.Errorf("WantsHealth = %v, want %v", got, tc.wantsHealth)
			}
		})
	}
}
