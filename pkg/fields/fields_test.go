package fields

import (
	"regexp"
	"strings"
	"testing"
)

var validName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

func TestCatalogIsConsistent(t *testing.T) {
	t.Parallel()
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range c.All() {
		t.Run(f.DCGMName, func(t *testing.T) {
			// NVSwitch fields, and those of its ports, belong to no GPU.
			switchOnly := !f.Levels.Has(LevelGPU|LevelGPUInstance) && strings.HasPrefix(f.Name, "nvswitch_")
			if !validName.MatchString(f.Name) || !strings.HasPrefix(f.Name, "gpu_") && !switchOnly {
				t.Errorf("exported name %q is not a gpu_ (or, NVSwitch only, nvswitch_) Prometheus name", f.Name)
			}
			if !strings.HasPrefix(f.DCGMName, "DCGM_FI_") {
				t.Errorf("DCGM name %q lacks DCGM_FI_ prefix", f.DCGMName)
			}
			if (f.Type == Counter) != strings.HasSuffix(f.Name, "_total") {
				t.Errorf("%s: counters and only counters end in _total", f.Name)
			}
			if f.Scale == 0 {
				t.Errorf("%s: zero scale", f.Name)
			}
			if f.Help == "" || f.Levels == 0 {
				t.Errorf("%s: missing help or levels", f.Name)
			}
			if f.Unit != "" && f.Unit != "ratio" && !strings.Contains(f.Name, "_"+f.Unit) {
				t.Errorf("%s: unit %q not in name", f.Name, f.Unit)
			}
			if (f.Kind == Bitmask) != (len(f.Reasons) > 0) {
				t.Errorf("%s: bitmask fields and only they have reasons", f.Name)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	c := MustNew()
	cases := []struct {
		name string
		id   uint16
	}{
		{"DCGM_FI_DEV_GPU_UTIL", 203},
		{"dcgm_fi_dev_gpu_util", 203},
		{"DCGM_FI_DEV_GPU_UTIL_RATIO", 203},
		{"gpu_utilization_ratio", 203},
		{" DCGM_FI_DEV_FB_USED ", 252},
		{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 112},
		{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1004},
	}
	for _, tc := range cases {
		f, ok := c.Lookup(tc.name)
		if !ok || f.ID != tc.id {
			t.Errorf("Lookup(%q) = %d, %v; want id %d", tc.name, f.ID, ok, tc.id)
		}
	}
	if _, ok := c.Lookup("DCGM_FI_NO_SUCH_FIELD"); ok {
		t.Error("unknown name found")
	}
}

func TestRequiredFieldsInDefaults(t *testing.T) {
	t.Parallel()
	c := MustNew()
	want := []string{
		"gpu_utilization_ratio", "gpu_memory_copy_utilization_ratio", "gpu_encoder_utilization_ratio",
		"gpu_decoder_utilization_ratio", "gpu_memory_used_bytes", "gpu_memory_free_bytes", "gpu_memory_total_bytes",
		"gpu_temperature_celsius", "gpu_memory_temperature_celsius", "gpu_power_watts", "gpu_power_limit_watts",
		"gpu_energy_joules_total", "gpu_sm_clock_hertz", "gpu_memory_clock_hertz", "gpu_pcie_replays_total",
		"gpu_xid_last_error", "gpu_clock_event_active", "gpu_sm_active_ratio", "gpu_sm_occupancy_ratio",
		"gpu_tensor_active_ratio", "gpu_dram_active_ratio", "gpu_graphics_engine_active_ratio",
		"gpu_temperature_slowdown_celsius", "gpu_recovery_action", // the alert rules of issue 17 read them
	}
	have := map[string]bool{}
	for _, f := range c.Defaults() {
		have[f.Name] = true
	}
	for _, n := range want {
		if !have[n] {
			t.Errorf("default set lacks %s", n)
		}
	}
}

func TestScales(t *testing.T) {
	t.Parallel()
	c := MustNew()
	cases := map[string]float64{
		"gpu_memory_used_bytes":   1 << 20,
		"gpu_utilization_ratio":   0.01,
		"gpu_energy_joules_total": 0.001,
		"gpu_sm_clock_hertz":      1e6,
		"gpu_power_watts":         1,
	}
	for name, scale := range cases {
		f, _ := c.Lookup(name)
		if f.Scale != scale {
			t.Errorf("%s scale = %v, want %v", name, f.Scale, scale)
		}
	}
}

func TestScaledIsExactForDecimalScales(t *testing.T) {
	t.Parallel()
	c := MustNew()
	cases := []struct {
		name string
		raw  float64
		want float64
	}{
		{"gpu_utilization_ratio", 95, 0.95},
		{"gpu_utilization_ratio", 7, 0.07},
		{"gpu_energy_joules_total", 123456789, 123456.789},
		{"gpu_power_violation_seconds_total", 1500000000, 1.5},
		{"gpu_memory_used_bytes", 3, 3 << 20},
		{"gpu_sm_clock_hertz", 1980, 1.98e9},
	}
	for _, tc := range cases {
		f, _ := c.Lookup(tc.name)
		if got := f.Scaled(tc.raw); got != tc.want {
			t.Errorf("%s.Scaled(%v) = %v, want %v", tc.name, tc.raw, got, tc.want)
		}
	}
}
