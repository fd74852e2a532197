package exposition

import (
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/config"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

func TestCountersPerNaming(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	prom, dcgm := BuiltinCounters(NamingPrometheus, cat), BuiltinCounters(NamingDCGM, cat)
	if len(prom.Fields) == 0 || len(prom.Labels) != 0 {
		t.Errorf("prometheus built-in set: %d fields, %d labels", len(prom.Fields), len(prom.Labels))
	}
	if set, labels := cat.DCGMDefaults(); len(dcgm.Fields) != len(set) || len(dcgm.Labels) != len(labels) {
		t.Errorf("dcgm built-in set: %d fields, %d labels; want dcgm-exporter's default file", len(dcgm.Fields), len(dcgm.Labels))
	}

	file := &config.CountersFile{
		Fields:         prom.Fields[:2],
		Labels:         dcgm.Labels,
		XIDErrorsCount: &config.ExporterCounter{Name: "DCGM_EXP_XID_ERRORS_COUNT", Type: fields.Gauge, Help: "x"},
	}
	k, unused := FileCounters(NamingPrometheus, file, time.Minute, time.Hour)
	if len(k.Fields) != 2 || k.Labels != nil || k.XIDErrorsCount != nil || !unused {
		t.Errorf("prometheus naming: %+v unused=%v; want the 2 fields only, the rest reported unused", k, unused)
	}
	k, unused = FileCounters(NamingDCGM, file, time.Minute, time.Hour)
	if len(k.Fields) != 2 || len(k.Labels) != len(dcgm.Labels) || unused ||
		k.XIDErrorsCount == nil || k.XIDErrorsCount.Window != time.Minute || k.XIDErrorsCount.Name != "DCGM_EXP_XID_ERRORS_COUNT" || k.ClockEventsCount != nil {
		t.Errorf("dcgm naming: %+v unused=%v; want fields, labels and the XID counter over 1m", k, unused)
	}
	if _, unused := FileCounters(NamingPrometheus, &config.CountersFile{Fields: prom.Fields}, 0, 0); unused {
		t.Error("a file of fields only reported unused rows")
	}
}
