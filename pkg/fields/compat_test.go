package fields

import (
	"strings"
	"testing"
)

func TestCompatColumns(t *testing.T) {
	t.Parallel()
	for _, f := range MustNew().All() {
		if f.DCGMHelp == "" {
			t.Errorf("%s: no help for dcgm naming", f.DCGMName)
		}
		if f.Scale != one && f.DCGMHelp == f.Help {
			t.Errorf("%s: scaled field with the same help in both namings (%q): the dcgm one must name DCGM's unit", f.DCGMName, f.Help)
		}
		if f.LegacyName != "" && !strings.HasPrefix(f.LegacyName, "dcgm_") {
			t.Errorf("%s: legacy name %q lacks the dcgm_ prefix", f.DCGMName, f.LegacyName)
		}
		for _, r := range f.Reasons {
			if r.DCGMName == "" {
				t.Errorf("%s: reason %s has no clock_event name", f.DCGMName, r.Name)
			}
		}
	}
}

func TestDCGMUnit(t *testing.T) {
	t.Parallel()
	c := MustNew()
	cases := map[string]string{
		"DCGM_FI_DEV_SM_CLOCK": "MHz", "DCGM_FI_DEV_FB_USED": "MiB", "DCGM_FI_DEV_GPU_UTIL": "%",
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "mJ", "DCGM_FI_DEV_GPU_TEMP": "celsius", "DCGM_FI_DEV_POWER_USAGE": "watts",
		"DCGM_FI_PROF_SM_ACTIVE": "ratio", "DCGM_FI_DEV_XID_ERRORS": "", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "KiB",
	}
	for name, want := range cases {
		f, _ := c.Lookup(name)
		if got := f.DCGMUnit(); got != want {
			t.Errorf("%s.DCGMUnit() = %q, want %q", name, got, want)
		}
	}
}

func TestLegacyNamesLookUp(t *testing.T) {
	t.Parallel()
	c := MustNew()
	for name, id := range map[string]uint16{"dcgm_sm_clock": 100, "dcgm_gpu_utilization": 203, "dcgm_fb_used": 252, "dcgm_xid_errors": 230} {
		if f, ok := c.Lookup(name); !ok || f.ID != id {
			t.Errorf("Lookup(%q) = %d, %v; want %d", name, f.ID, ok, id)
		}
	}
}

func TestLabelFields(t *testing.T) {
	t.Parallel()
	c := MustNew()
	for _, f := range c.Labels() {
		if f.Kind != Label || f.Levels == 0 || !strings.HasPrefix(f.DCGMName, "DCGM_FI_") {
			t.Errorf("%s: label fields need Kind Label, levels and a DCGM_FI_ name", f.DCGMName)
		}
		if _, ok := c.Lookup(f.DCGMName); ok {
			t.Errorf("%s: a label field is also a metric field", f.DCGMName)
		}
	}
	for name, id := range map[string]uint16{"DCGM_FI_DRIVER_VERSION": 1, "dcgm_fi_driver_version": 1, "DCGM_FI_DEV_BOARD_SERIAL": 53, "DCGM_FI_DEV_VBIOS_VERSION": 85} {
		if f, ok := c.LookupLabel(name); !ok || f.ID != id {
			t.Errorf("LookupLabel(%q) = %d, %v; want %d", name, f.ID, ok, id)
		}
	}
	if _, ok := c.LookupLabel("DCGM_FI_DEV_GPU_TEMP"); ok {
		t.Error("a metric field found as a label field")
	}
	if len(c.All()) != len(table()) {
		t.Error("label fields leaked into All")
	}
}

// dcgm naming's built-in set holds every field of dcgm-exporter's default
// counters file that the catalog has, plus the default set, and the driver
// version label.
func TestDCGMDefaults(t *testing.T) {
	t.Parallel()
	c := MustNew()
	set, labels := c.DCGMDefaults()
	have := map[string]bool{}
	for _, f := range set {
		have[f.DCGMName] = true
	}
	for _, f := range c.Defaults() {
		if !have[f.DCGMName] {
			t.Errorf("dcgm built-in set lacks default field %s", f.DCGMName)
		}
	}
	for _, n := range []string{
		"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_GPU_TEMP",
		"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
		"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL",
		"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED",
		"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
		"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
		"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES",
	} {
		if !have[n] {
			t.Errorf("dcgm built-in set lacks %s, which dcgm-exporter collects by default", n)
		}
	}
	if len(labels) != 1 || labels[0].DCGMName != "DCGM_FI_DRIVER_VERSION" {
		t.Errorf("labels = %v, want DCGM_FI_DRIVER_VERSION", labels)
	}
}

func TestNotExported(t *testing.T) {
	t.Parallel()
	for _, n := range []string{" dcgm_pcie_rx_throughput ", "dcgm_pcie_tx_throughput"} {
		if reason, ok := NotExported(n); !ok || reason == "" {
			t.Errorf("NotExported(%q) = %q, %v; want a reason", n, reason, ok)
		}
	}
	if _, ok := NotExported(P2PStatusName); ok {
		t.Errorf("%s is exported (dcgm naming) but listed as not exported", P2PStatusName)
	}
	c := MustNew()
	for _, f := range append(c.All(), c.Labels()...) {
		for _, n := range append([]string{f.DCGMName, f.LegacyName}, f.Aliases...) {
			if _, ok := NotExported(n); ok && n != "" {
				t.Errorf("%s is exported but listed as not exported", n)
			}
		}
	}
}

func TestXIDMessage(t *testing.T) {
	t.Parallel()
	cases := map[int64]string{
		0: "No Error", 13: "Graphics Engine Exception", 31: "GPU memory page fault", 48: "Double Bit ECC Error",
		71: "CE4: Unknown Error", 74: "NVLINK Error", 79: "GPU has fallen off the bus", 94: "Contained ECC error",
		95: "Uncontained ECC error", 97: "NVDEC6 Error", 103: "NVJPG5 Error", 119: "GSP RPC Timeout",
		130: "Robust Channel CE14 Error", 172: "Uncorrectable SRAM Error", 173: "Unknown Error", -1: "Unknown Error",
	}
	for code, want := range cases {
		if got := XIDMessage(code); got != want {
			t.Errorf("XIDMessage(%d) = %q, want %q", code, got, want)
		}
	}
	for code := int64(0); code <= 172; code++ {
		if XIDMessage(code) == "Unknown Error" {
			t.Errorf("XID %d has no name", code)
		}
	}
}
