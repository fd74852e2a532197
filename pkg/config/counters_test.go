package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

var update = flag.Bool("update", false, "rewrite generated files")

func TestParseCounters(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	in := "\ufeff# comment\n\nDCGM_FI_DEV_SM_CLOCK,  gauge, SM clock frequency (in MHz).\n" +
		"DCGM_FI_DEV_GPU_UTIL_RATIO, gauge, GPU utilization, in percent.\n" +
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Energy\n" +
		"DCGM_FI_DRIVER_VERSION_X_NOT_A_FIELD_IS_COMMENTED, gauge, x\n"
	if _, err := ParseCounters("in.csv", strings.NewReader(in), cat); err == nil || !strings.Contains(err.Error(), "in.csv:6") {
		t.Fatalf("want error at in.csv:6, got %v", err)
	}
	in = strings.Replace(in, "DCGM_FI_DRIVER_VERSION_X", "# DCGM_FI_DRIVER_VERSION_X", 1) + "DCGM_FI_DEV_GPU_TEMP, label, as label\n"
	c, err := ParseCounters("in.csv", strings.NewReader(in), cat)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint16
	for _, f := range c.Fields {
		ids = append(ids, f.ID)
	}
	if len(ids) != 3 || ids[0] != 100 || ids[1] != 203 || ids[2] != 156 {
		t.Errorf("fields = %v, want [100 203 156] in file order", ids)
	}
	if len(c.Labels) != 1 || c.Labels[0].ID != 150 {
		t.Errorf("labels = %v, want the temperature field", c.Labels)
	}
}

func TestParseCountersErrors(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	cases := []struct{ name, in, want string }{
		{"unknown field", "DCGM_FI_NOPE, gauge, x\n", `c.csv:1: unknown field "DCGM_FI_NOPE"`},
		{"bad type", "\nDCGM_FI_DEV_GPU_TEMP, histogramm, x\n", `c.csv:2: field "DCGM_FI_DEV_GPU_TEMP": unknown type "histogramm"`},
		{"missing type", "DCGM_FI_DEV_GPU_TEMP\n", `c.csv:1: want "FIELD, TYPE, HELP"`},
		{"type dcgm-exporter refuses too", "DCGM_FI_DEV_GPU_TEMP, histogramm, x\n", `c.csv:1: field "DCGM_FI_DEV_GPU_TEMP": unknown type "histogramm"`},
		{"string field, bad type", "DCGM_FI_DRIVER_VERSION, text, v\n", `c.csv:1: field "DCGM_FI_DRIVER_VERSION": unknown type "text"`},
		{"empty", "# nothing\n", "c.csv: no fields listed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseCounters("c.csv", strings.NewReader(tc.in), cat)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadCountersMissingFile(t *testing.T) {
	t.Parallel()
	_, err := LoadCounters(filepath.Join(t.TempDir(), "nope.csv"), fields.MustNew())
	if err == nil || !strings.Contains(err.Error(), "nope.csv") {
		t.Errorf("error = %v, want it to name the file", err)
	}
}

func TestFormatRoundTrips(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	var b bytes.Buffer
	if err := Format(&b, cat.All()); err != nil {
		t.Fatal(err)
	}
	c, err := ParseCounters("formatted", &b, cat)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Fields) != len(cat.All()) {
		t.Errorf("round trip kept %d of %d fields", len(c.Fields), len(cat.All()))
	}
}

// The shipped default counters file lists exactly the catalog's default set
// (go test ./pkg/config -update regenerates it).
func TestShippedDefaultCountersMatchCatalog(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	var want bytes.Buffer
	if err := Format(&want, cat.Defaults()); err != nil {
		t.Fatal(err)
	}
	const path = "../../etc/default-counters.csv"
	if *update {
		if err := os.WriteFile(path, want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Error("etc/default-counters.csv is stale: run go test ./pkg/config -update")
	}
}

// A counters file with the rows of dcgm-exporter's default file (its field
// names and types; the help column here is ours) loads: label rows become
// label fields, DCGM_EXP_* rows exporter counters, and rows for things
// gpu-exporter does not export are skipped with their location.
func TestParseDCGMExporterCountersFile(t *testing.T) {
	t.Parallel()
	in := `# Format
# DCGM FIELD, Prometheus metric type, help message
DCGM_FI_DEV_SM_CLOCK,  gauge, SM clock (MHz).
DCGM_FI_DEV_MEM_CLOCK, gauge, memory clock (MHz).
DCGM_FI_DEV_MEMORY_TEMP, gauge, memory temperature (C).
DCGM_FI_DEV_GPU_TEMP,    gauge, GPU temperature (C).
DCGM_FI_DEV_POWER_USAGE,              gauge, power (W).
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, energy (mJ).
DCGM_FI_DEV_PCIE_REPLAY_COUNTER, counter, PCIe retries.
DCGM_FI_DEV_GPU_UTIL,      gauge, GPU utilization (%).
DCGM_FI_DEV_MEM_COPY_UTIL, gauge, memory utilization (%).
DCGM_FI_DEV_ENC_UTIL,      gauge, encoder utilization (%).
DCGM_FI_DEV_DEC_UTIL ,     gauge, decoder utilization (%).
DCGM_FI_DEV_XID_ERRORS,              gauge,   last XID.
DCGM_EXP_CLOCK_EVENTS_COUNT, counter, clock events in the window
DCGM_EXP_XID_ERRORS_COUNT, counter, XIDs in the window
DCGM_EXP_GPU_HEALTH_STATUS, counter, health
DCGM_EXP_P2P_STATUS, gauge, P2P status
DCGM_FI_DEV_FB_FREE, gauge, free framebuffer (MiB).
DCGM_FI_DEV_FB_USED, gauge, used framebuffer (MiB).
DCGM_FI_DEV_FB_RESERVED, gauge, reserved framebuffer (MiB).
DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL,            counter, NVLink counter.
DCGM_FI_DEV_VGPU_LICENSE_STATUS, gauge, vGPU licence
DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS, counter, uncorrectable remaps
DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS,   counter, correctable remaps
DCGM_FI_DEV_ROW_REMAP_FAILURE,           gauge,   remap failed
DCGM_FI_DRIVER_VERSION,        label, driver
DCGM_FI_PROF_GR_ENGINE_ACTIVE,   gauge, graphics engine active.
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, tensor active.
DCGM_FI_PROF_DRAM_ACTIVE,        gauge, DRAM active.
DCGM_FI_PROF_PCIE_TX_BYTES,      gauge, PCIe TX rate.
DCGM_FI_PROF_PCIE_RX_BYTES,      gauge, PCIe RX rate.
`
	c, err := ParseCounters("default-counters.csv", strings.NewReader(in), fields.MustNew())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Fields) != 25 {
		t.Errorf("%d fields, want 25", len(c.Fields))
	}
	if len(c.Labels) != 1 || c.Labels[0].ID != fields.DriverVersionID || c.Labels[0].Kind != fields.Label {
		t.Errorf("labels = %+v, want the driver version as a label field", c.Labels)
	}
	if x := c.XIDErrorsCount; x == nil || x.Name != "DCGM_EXP_XID_ERRORS_COUNT" || x.Type != fields.Counter || x.Help != "XIDs in the window" {
		t.Errorf("XID count row = %+v", x)
	}
	if x := c.ClockEventsCount; x == nil || x.Help != "clock events in the window" {
		t.Errorf("clock events row = %+v", x)
	}
	if x := c.GPUHealthStatus; x == nil || x.Name != "DCGM_EXP_GPU_HEALTH_STATUS" {
		t.Errorf("health status row = %+v", x)
	}
	if x := c.P2PStatus; x == nil || x.Name != "DCGM_EXP_P2P_STATUS" || x.Type != fields.Gauge || x.Help != "P2P status" {
		t.Errorf("P2P status row = %+v", x)
	}
	if len(c.Skipped) != 0 {
		t.Errorf("skipped = %+v, want none", c.Skipped)
	}
}

// The file's spelling, type and help are what dcgm naming prints; the
// catalog's name, type and help stay for Prometheus naming.
func TestCountersFileColumnsKept(t *testing.T) {
	t.Parallel()
	in := "DCGM_FI_DEV_CLOCKS_EVENT_REASONS, counter, reasons, as a mask\n" +
		"dcgm_gpu_utilization, gauge, old name\n" +
		"gpu_temperature_celsius, gauge, our name\n" +
		"DCGM_FI_DEV_GPU_TEMP_SLOWDOWN, label, slowdown\n" +
		"DCGM_FI_DEV_BOARD_SERIAL, label\n"
	c, err := ParseCounters("c.csv", strings.NewReader(in), fields.MustNew())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		f                       fields.Field
		dcgmName, help, catName string
		dcgmType                fields.Type
	}{
		{c.Fields[0], "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "reasons, as a mask", "gpu_clock_event_active", fields.Counter},
		{c.Fields[1], "dcgm_gpu_utilization", "old name", "gpu_utilization_ratio", fields.Gauge},
		{c.Fields[2], "DCGM_FI_DEV_GPU_TEMP", "our name", "gpu_temperature_celsius", fields.Gauge},
	}
	for _, tc := range cases {
		if tc.f.DCGMName != tc.dcgmName || tc.f.DCGMHelp != tc.help || tc.f.DCGMType != tc.dcgmType || tc.f.Name != tc.catName {
			t.Errorf("field = %s/%s/%q/%s, want %s/%s/%q/%s", tc.f.DCGMName, tc.f.DCGMType, tc.f.DCGMHelp, tc.f.Name, tc.dcgmName, tc.dcgmType, tc.help, tc.catName)
		}
	}
	cat := fields.MustNew()
	orig, _ := cat.Lookup("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
	if c.Fields[0].Type != orig.Type || c.Fields[0].Help != orig.Help || c.Fields[0].Kind != fields.Bitmask {
		t.Error("the file changed the catalog's Prometheus type, help or kind")
	}
	if len(c.Labels) != 2 || c.Labels[0].Kind != fields.Label || c.Labels[0].ID != 158 || c.Labels[1].ID != 53 || c.Labels[1].DCGMName != "DCGM_FI_DEV_BOARD_SERIAL" {
		t.Errorf("labels = %+v", c.Labels)
	}
}

func TestParseCountersCompatErrors(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	cases := []struct{ name, in, want string }{
		{"exporter counter, bad type", "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_EXP_CLOCK_EVENTS_COUNT, lable, a\n", `c.csv:2: field "DCGM_EXP_CLOCK_EVENTS_COUNT": unknown type "lable"`},
		{"not a DCGM name", "DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_C, gauge, t\n", `c.csv:1: unknown field "DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_C"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseCounters("c.csv", strings.NewReader(tc.in), cat)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestFormatWritesDCGMColumns(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	set, labels := cat.DCGMDefaults()
	var b bytes.Buffer
	if err := Format(&b, append(set, labels...)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency in MHz.\n", "DCGM_FI_DRIVER_VERSION, label, "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("formatted file lacks %q", want)
		}
	}
	c, err := ParseCounters("formatted", &b, cat)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Fields) != len(set) || len(c.Labels) != 1 {
		t.Errorf("round trip: %d fields, %d labels; want %d and 1", len(c.Fields), len(c.Labels), len(set))
	}
}
