package exposition

import (
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// TestDCGMGPUHealthStatus: DCGM_EXP_GPU_HEALTH_STATUS as dcgm-exporter's
// gpu_health_collector.go (tag 4.5.3-4.8.2) writes it: 11 series per GPU,
// none per MIG instance, passing watches DCGM_FR_OK with 0, the last
// incident of a GPU and watch wins, incidents of other watches are not
// written; no series without a health check result.
func TestDCGMGPUHealthStatus(t *testing.T) {
	t.Parallel()
	k := Counters{GPUHealthStatus: &ExporterFamily{Name: fields.GPUHealthStatusName, Help: "DCGM reported health status", Type: fields.Counter}}
	render := func(health []source.HealthIncident) map[[3]string]float64 {
		r := NewRenderer(Options{Naming: NamingDCGM})
		set, extra := r.WatchSet(k)
		if !r.WantsHealth() {
			t.Fatal("dcgm naming with DCGM_EXP_GPU_HEALTH_STATUS listed does not ask for health")
		}
		in := familiesInput(t, set)
		in.Extra, in.Health = extra, health
		r.Derive(&in, k)
		got := map[[3]string]float64{}
		mf, ok := parseText(t, r.Render(in).Text)[fields.GPUHealthStatusName]
		if !ok {
			return got
		}
		if mf.GetType().String() != "COUNTER" || mf.GetHelp() != "DCGM reported health status" {
			t.Errorf("type %s help %q, want the counters file row's", mf.GetType(), mf.GetHelp())
		}
		for _, m := range mf.Metric {
			l := labelMap(m)
			if l["GPU_I_ID"] != "" {
				t.Errorf("series on a MIG instance: %v", l)
			}
			got[[3]string{l["gpu"], l["health_watch"], l["health_error_code"]}] = m.GetCounter().GetValue()
		}
		return got
	}
	got := render([]source.HealthIncident{
		{GPU: 1, Subsystem: "pcie", Status: source.HealthWarn, Code: 2},
		{GPU: 1, Subsystem: "pcie", Status: source.HealthFail, Code: 101},
		{GPU: 1, Subsystem: "all", Status: source.HealthFail, Code: 131},
		{GPU: 0, Subsystem: "nvswitch_fatal", Status: source.HealthFail, Code: 36},
	})
	// familiesInput holds GPU 0 once and GPU 1 once: 22 series.
	if len(got) != 22 {
		t.Errorf("%d series, want 11 per GPU: %v", len(got), got)
	}
	for key, want := range map[[3]string]float64{
		{"1", "PCIE", "DCGM_FR_XID_ERROR"}:   20,
		{"1", "ALL", "DCGM_FR_UNKNOWN(131)"}: 20,
		{"1", "MEM", "DCGM_FR_OK"}:           0,
		{"0", "PCIE", "DCGM_FR_OK"}:          0,
		{"0", "ALL", "DCGM_FR_OK"}:           0,
		{"0", "DRIVER", "DCGM_FR_OK"}:        0,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%v = %v (present %v), want %v", key, v, ok, want)
		}
	}
	if got := render([]source.HealthIncident{}); len(got) != 22 {
		t.Errorf("a passing check: %d series, want 22", len(got))
	}
	if got := render(nil); len(got) != 0 {
		t.Errorf("no check result: %d series, want none", len(got))
	}
}
