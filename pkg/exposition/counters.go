package exposition

import (
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/config"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// BuiltinCounters is what naming n collects without a counters file: the
// catalog's default set; in dcgm naming, dcgm-exporter's default file
// (its fields and label fields).
func BuiltinCounters(n Naming, cat *fields.Catalog) Counters {
	if n == NamingDCGM {
		set, labels := cat.DCGMDefaults()
		return Counters{Fields: set, Labels: labels}
	}
	return Counters{Fields: cat.Defaults()}
}

// FileCounters is what a counters file asks for under naming n. Its label
// rows and DCGM_EXP_* counters apply in dcgm naming only, the counters
// with the given windows; unused reports that the file lists some and n
// leaves them out.
func FileCounters(n Naming, f *config.CountersFile, xidWindow, clockEventsWindow time.Duration) (k Counters, unused bool) {
	k = Counters{Fields: f.Fields}
	if n != NamingDCGM {
		return k, len(f.Labels) > 0 || f.XIDErrorsCount != nil || f.ClockEventsCount != nil || f.GPUHealthStatus != nil || f.P2PStatus != nil
	}
	k.Labels = f.Labels
	k.XIDErrorsCount = windowCounter(f.XIDErrorsCount, xidWindow)
	k.ClockEventsCount = windowCounter(f.ClockEventsCount, clockEventsWindow)
	if r := f.GPUHealthStatus; r != nil {
		k.GPUHealthStatus = &ExporterFamily{Name: r.Name, Help: r.Help, Type: r.Type}
	}
	if r := f.P2PStatus; r != nil {
		k.P2PStatus = &ExporterFamily{Name: r.Name, Help: r.Help, Type: r.Type}
	}
	return k, false
}

// windowCounter configures a DCGM_EXP_* counter a counters file lists.
func windowCounter(row *config.ExporterCounter, window time.Duration) *WindowCounter {
	if row == nil {
		return nil
	}
	return &WindowCounter{Name: row.Name, Help: row.Help, Type: row.Type, Window: window}
}
