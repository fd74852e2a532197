package exposition

import (
	"bytes"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

func dcgmRenderer(o DCGMOptions) *Renderer {
	return NewRenderer(Options{Naming: NamingDCGM, DCGM: o})
}

// seriesLine returns the first line of page that starts with prefix.
func seriesLine(t *testing.T, page []byte, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(string(page), "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no line starts with %q in:\n%s", prefix, page)
	return ""
}

func TestParseNaming(t *testing.T) {
	t.Parallel()
	for _, n := range []Naming{NamingPrometheus, NamingDCGM} {
		if got, err := ParseNaming(n.String()); err != nil || got != n {
			t.Errorf("ParseNaming(%q) = %v, %v", n.String(), got, err)
		}
	}
	if _, err := ParseNaming("DCGM"); err == nil {
		t.Error("ParseNaming accepted an unknown naming")
	}
}

// Series carry dcgm-exporter's names, labels in its order, and DCGM's raw
// values: integers exactly, no unit scaling.
func TestDCGMNamingNamesLabelsAndRawValues(t *testing.T) {
	t.Parallel()
	set := []fields.Field{
		mustField(t, "DCGM_FI_DEV_GPU_UTIL"), mustField(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"),
		mustField(t, "DCGM_FI_DEV_POWER_USAGE"), mustField(t, "DCGM_FI_DEV_FB_USED"),
	}
	s := testSample(t, 2, set)
	s.Set(0, 0, source.IntValue(95))
	s.Set(0, 1, source.IntValue(412002561281123))
	s.Set(0, 2, source.FloatValue(640.25))
	h := &Holder{Namespace: "ml", Pod: "trainer-0", Container: "main"}
	p := dcgmRenderer(DCGMOptions{Hostname: "node-1"}).Render(Input{Sample: s, Holdings: []Holding{{Entity: 0, Holder: h}, {Entity: 1}}})

	labels := `{gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:3B:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",container="main",namespace="ml",pod="trainer-0"}`
	for prefix, want := range map[string]string{
		"DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"":                 "DCGM_FI_DEV_GPU_UTIL" + labels + " 95",
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"": "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" + labels + " 412002561281123",
		"DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"":              "DCGM_FI_DEV_POWER_USAGE" + labels + " 640.25",
	} {
		if got := seriesLine(t, p.Text, prefix); got != want {
			t.Errorf("series\n got %s\nwant %s", got, want)
		}
	}
	if got := seriesLine(t, p.Text, `DCGM_FI_DEV_GPU_UTIL{gpu="1"`); strings.Contains(got, "pod") || strings.Contains(got, "namespace") {
		t.Errorf("a GPU nobody holds has pod labels, which dcgm-exporter leaves out: %s", got)
	}
	for _, want := range []string{
		"# HELP DCGM_FI_DEV_GPU_UTIL " + set[0].DCGMHelp + "\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n",
		"# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n",
	} {
		if !bytes.Contains(p.Text, []byte(want)) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, name := range []string{"gpu_", "_total", "uuid=", "model="} {
		if bytes.Contains(p.Text, []byte(name)) {
			t.Errorf("dcgm naming page contains %q", name)
		}
	}
	// OpenMetrics keeps the names: a counter without _total is declared
	// unknown rather than renamed.
	om := parseOpenMetrics(t, p.OpenMetrics)
	if f := om["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]; f == nil || f.GetType() != dto.MetricType_UNTYPED || len(f.Metric) != 2 {
		t.Errorf("OpenMetrics energy family = %v", f)
	}
	if !bytes.Contains(p.OpenMetrics, []byte("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown\n")) {
		t.Error("OpenMetrics counter without _total not declared unknown")
	}
	if f := om["DCGM_FI_DEV_GPU_UTIL"]; f == nil || metricValue(f.Metric[0]) != 95 {
		t.Errorf("OpenMetrics utilization = %v", f)
	}
}

func TestDCGMNamingMIGAndOptions(t *testing.T) {
	t.Parallel()
	s := testSample(t, 1, []fields.Field{mustField(t, "DCGM_FI_DEV_FB_USED")})
	s.Inventory.Entities[0].Model = "NVIDIA  A100-SXM4-80GB  X"
	s.Inventory.Entities = append(s.Inventory.Entities, source.Entity{
		Kind: source.GPUInstance, GPU: 0, UUID: s.Inventory.Entities[0].UUID, Device: "nvidia0", Model: "NVIDIA  A100-SXM4-80GB  X",
		PCIBusID: "00000000:3B:00.0", GPUInstance: 7, ComputeInstance: -1, MIGProfile: "1g.10gb", MIGUUID: "MIG-x",
	})
	s.Values = append(s.Values, source.IntValue(13))
	h := &Holder{Namespace: "ns", Pod: "p", Container: "c"}
	targets := []Holding{{Entity: 0}, {Entity: 1, Holder: h}}
	cases := []struct {
		name string
		o    DCGMOptions
		want string
	}{
		{"defaults", DCGMOptions{Hostname: "h"},
			`DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:3B:00.0",device="nvidia0",modelName="NVIDIA  A100-SXM4-80GB  X",GPU_I_PROFILE="1g.10gb",GPU_I_ID="7",Hostname="h",container="c",namespace="ns",pod="p"} 13`},
		{"lower-case hostname", DCGMOptions{Hostname: "h", HostnameLabel: HostnameLabelLower},
			`DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:3B:00.0",device="nvidia0",modelName="NVIDIA  A100-SXM4-80GB  X",GPU_I_PROFILE="1g.10gb",GPU_I_ID="7",hostname="h",container="c",namespace="ns",pod="p"} 13`},
		{"no hostname", DCGMOptions{},
			`DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:3B:00.0",device="nvidia0",modelName="NVIDIA  A100-SXM4-80GB  X",GPU_I_PROFILE="1g.10gb",GPU_I_ID="7",container="c",namespace="ns",pod="p"} 13`},
		{"old namespace", DCGMOptions{Hostname: "h", OldNamespace: true},
			`DCGM_FI_DEV_FB_USED{gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:3B:00.0",device="nvidia0",modelName="NVIDIA  A100-SXM4-80GB  X",GPU_I_PROFILE="1g.10gb",GPU_I_ID="7",Hostname="h",container_name="c",pod_name="p",pod_namespace="ns"} 13`},
		{"blanks replaced", DCGMOptions{ReplaceBlanksInModelName: true},
			`DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:3B:00.0",device="nvidia0",modelName="NVIDIA-A100-SXM4-80GB-X",GPU_I_PROFILE="1g.10gb",GPU_I_ID="7",container="c",namespace="ns",pod="p"} 13`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := dcgmRenderer(tc.o).Render(Input{Sample: s, Holdings: targets})
			if !strings.Contains(string(p.Text), tc.want+"\n") {
				t.Errorf("MIG series not found\nwant %s\npage:\n%s", tc.want, p.Text)
			}
			parseText(t, p.Text)
		})
	}
}

// The clock event bitmask is exported as the raw integer, and the XID field
// carries err_code and err_msg, placed in dcgm-exporter's sorted order.
func TestDCGMNamingBitmaskAndXID(t *testing.T) {
	t.Parallel()
	set := []fields.Field{mustField(t, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"), mustField(t, "DCGM_FI_DEV_XID_ERRORS")}
	s := testSample(t, 3, set)
	s.Set(0, 0, source.IntValue(0x44))
	s.Set(0, 1, source.IntValue(79))
	s.Set(1, 1, source.IntValue(0))
	s.Set(2, 1, source.IntValue(999))
	h := &Holder{Namespace: "ns", Pod: "p", Container: "c"}
	r := dcgmRenderer(DCGMOptions{})
	p := r.Render(Input{Sample: s, Holdings: []Holding{{Entity: 0, Holder: h}, {Entity: 1}, {Entity: 2}}})
	if got := seriesLine(t, p.Text, `DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{gpu="0"`); !strings.HasSuffix(got, "} 68") || strings.Contains(got, "reason") {
		t.Errorf("bitmask series = %s, want the raw mask 68 without a reason label", got)
	}
	want := map[string]string{
		`DCGM_FI_DEV_XID_ERRORS{gpu="0"`: `,container="c",err_code="79",err_msg="GPU has fallen off the bus",namespace="ns",pod="p"} 79`,
		`DCGM_FI_DEV_XID_ERRORS{gpu="1"`: `,err_code="0",err_msg="No Error"} 0`,
		`DCGM_FI_DEV_XID_ERRORS{gpu="2"`: `,err_code="999",err_msg="Unknown Error"} 999`,
	}
	for prefix, suffix := range want {
		if got := seriesLine(t, p.Text, prefix); !strings.HasSuffix(got, suffix) {
			t.Errorf("XID series = %s, want it to end with %s", got, suffix)
		}
	}
	parseText(t, p.Text)
}

// Label fields become labels sorted by name, after the hostname; a value
// that changes rebuilds the cached label sets; a blank value leaves its label
// out, except the driver version, which the inventory supplies.
func TestDCGMNamingLabelFields(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	serial, _ := cat.LookupLabel("DCGM_FI_DEV_SERIAL")
	driver, _ := cat.LookupLabel("DCGM_FI_DRIVER_VERSION")
	temp := mustField(t, "DCGM_FI_DEV_GPU_TEMP")
	temp.Kind = fields.Label // a numeric field listed as a label row
	set := []fields.Field{mustField(t, "DCGM_FI_DEV_GPU_UTIL"), serial, driver, temp}
	s := testSample(t, 2, set)
	s.Set(0, 1, source.StringValue("1650123456789"))
	s.Set(1, 1, source.Value{})
	s.Set(0, 2, source.Value{}) // not read: the inventory's version stands in
	s.Set(1, 2, source.StringValue("560.1"))
	s.Set(0, 3, source.IntValue(41))
	s.Set(1, 3, source.FloatValue(40.5))
	r := dcgmRenderer(DCGMOptions{Hostname: "h"})
	in := Input{Sample: s, Holdings: allTargets(s)}
	p := r.Render(in)
	want0 := `,Hostname="h",DCGM_FI_DEV_GPU_TEMP="41",DCGM_FI_DEV_SERIAL="1650123456789",DCGM_FI_DRIVER_VERSION="550.54.15"} 1`
	want1 := `,Hostname="h",DCGM_FI_DEV_GPU_TEMP="40.500000",DCGM_FI_DRIVER_VERSION="560.1"} 11`
	if got := seriesLine(t, p.Text, `DCGM_FI_DEV_GPU_UTIL{gpu="0"`); !strings.HasSuffix(got, want0) {
		t.Errorf("GPU 0 = %s, want suffix %s", got, want0)
	}
	if got := seriesLine(t, p.Text, `DCGM_FI_DEV_GPU_UTIL{gpu="1"`); !strings.HasSuffix(got, want1) {
		t.Errorf("GPU 1 = %s, want suffix %s", got, want1)
	}
	fams := parseText(t, p.Text)
	if len(fams) != 1 {
		t.Errorf("families = %d, want only utilization: label fields are never series", len(fams))
	}
	first := &r.labels[0].b[0]
	r.Render(in)
	if &r.labels[0].b[0] != first {
		t.Error("labels rebuilt although no label value changed")
	}
	s.Set(0, 1, source.StringValue("replaced"))
	p = r.Render(in)
	if got := seriesLine(t, p.Text, `DCGM_FI_DEV_GPU_UTIL{gpu="0"`); !strings.Contains(got, `DCGM_FI_DEV_SERIAL="replaced"`) {
		t.Errorf("changed label value not rendered: %s", got)
	}
	// Prometheus naming never exports label columns.
	p = NewRenderer(Options{}).Render(in)
	if bytes.Contains(p.Text, []byte("DCGM_FI_")) || bytes.Contains(p.Text, []byte("gpu_temperature_celsius")) {
		t.Errorf("Prometheus naming exported a label column:\n%s", p.Text)
	}
}

// Window counters: one series per GPU and event, the event and window labels
// in dcgm-exporter's sorted order, before the holder's labels; a GPU with
// no event has a zero series without the event label; MIG instances none.
func TestDCGMNamingWindows(t *testing.T) {
	t.Parallel()
	s := testSample(t, 2, []fields.Field{mustField(t, "DCGM_FI_DEV_GPU_UTIL")})
	s.Inventory.Entities = append(s.Inventory.Entities, source.Entity{Kind: source.GPUInstance, GPU: 0, UUID: s.Inventory.Entities[0].UUID, GPUInstance: 1, MIGProfile: "7g.80gb"})
	s.Values = append(s.Values, source.IntValue(3))
	h := &Holder{Namespace: "ns", Pod: "p", Container: "c"}
	in := Input{
		Sample:   s,
		Holdings: []Holding{{Entity: 0, Holder: h}, {Entity: 1}, {Entity: 2}},
		Windows: []WindowFamily{
			{Name: "DCGM_EXP_XID_ERRORS_COUNT", Help: "x", Type: fields.Counter, Label: WindowXID, Window: 5 * time.Minute,
				Counts: []WindowCount{{Entity: 0, Event: "13", Count: 1}, {Entity: 0, Event: "79", Count: 2}, {Entity: 1}}},
			{Name: "DCGM_EXP_CLOCK_EVENTS_COUNT", Help: "c", Type: fields.Counter, Label: WindowClockEvent, Window: time.Minute,
				Counts: []WindowCount{{Entity: 1, Event: "sw_thermal", Count: 6}}},
		},
	}
	p := dcgmRenderer(DCGMOptions{}).Render(in)
	for _, want := range []string{
		`DCGM_EXP_XID_ERRORS_COUNT{gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:3B:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",window_size_in_ms="300000",xid="13",container="c",namespace="ns",pod="p"} 1`,
		`DCGM_EXP_XID_ERRORS_COUNT{gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:3B:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",window_size_in_ms="300000",xid="79",container="c",namespace="ns",pod="p"} 2`,
		`DCGM_EXP_XID_ERRORS_COUNT{gpu="1",UUID="GPU-00000000-0000-0000-0000-000000000001",pci_bus_id="00000000:3B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",window_size_in_ms="300000"} 0`,
		`DCGM_EXP_CLOCK_EVENTS_COUNT{gpu="1",UUID="GPU-00000000-0000-0000-0000-000000000001",pci_bus_id="00000000:3B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",clock_event="sw_thermal",window_size_in_ms="60000"} 6`,
		"# TYPE DCGM_EXP_XID_ERRORS_COUNT counter",
	} {
		if !bytes.Contains(p.Text, []byte(want+"\n")) {
			t.Errorf("page lacks\n%s\npage:\n%s", want, p.Text)
		}
	}
	for _, line := range bytes.Split(p.Text, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("DCGM_EXP_")) && bytes.Contains(line, []byte(`GPU_I_ID`)) {
			t.Errorf("window counter on a MIG instance: %s", line)
		}
	}
	if p.Series != 2+4 {
		t.Errorf("series = %d, want 2 utilization (GPU 1, GPU 0's instance) + 4 window", p.Series)
	}
	parseText(t, p.Text)
	parseOpenMetrics(t, p.OpenMetrics)
	// Prometheus naming ignores them.
	if p := NewRenderer(Options{}).Render(in); bytes.Contains(p.Text, []byte("DCGM_EXP")) {
		t.Error("Prometheus naming rendered window counters")
	}
}

// Trailing Extra columns feed window counters only and are never series.
func TestExtraColumnsAreNotExported(t *testing.T) {
	t.Parallel()
	set := []fields.Field{mustField(t, "DCGM_FI_DEV_GPU_UTIL"), mustField(t, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")}
	s := testSample(t, 1, set)
	for _, r := range []*Renderer{NewRenderer(Options{}), dcgmRenderer(DCGMOptions{})} {
		p := r.Render(Input{Sample: s, Holdings: allTargets(s), Extra: 1})
		if bytes.Contains(p.Text, []byte("CLOCK")) || bytes.Contains(p.Text, []byte("clock")) {
			t.Errorf("extra column exported:\n%s", p.Text)
		}
		p = r.Render(Input{Sample: s, Holdings: allTargets(s)})
		if !bytes.Contains(p.Text, []byte("CLOCK")) && !bytes.Contains(p.Text, []byte("clock")) {
			t.Error("column plan not rebuilt when Extra changed")
		}
	}
}

// Label fields are read per GPU: a MIG instance carries its GPU's values.
func TestDCGMNamingMIGTakesGPULabelFields(t *testing.T) {
	t.Parallel()
	serial, _ := fields.MustNew().LookupLabel("DCGM_FI_DEV_SERIAL")
	s := testSample(t, 1, []fields.Field{mustField(t, "DCGM_FI_DEV_FB_USED"), serial})
	s.Set(0, 1, source.StringValue("1650"))
	gi := s.Inventory.Entities[0]
	gi.Kind, gi.GPUInstance, gi.MIGProfile = source.GPUInstance, 3, "3g.40gb"
	s.Inventory.Entities = append(s.Inventory.Entities, gi)
	s.Values = append(s.Values, source.IntValue(77), source.Value{})
	p := dcgmRenderer(DCGMOptions{}).Render(Input{Sample: s, Holdings: allTargets(s)})
	if got := seriesLine(t, p.Text, `DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:3B:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",GPU_I_PROFILE`); !strings.HasSuffix(got, `GPU_I_ID="3",DCGM_FI_DEV_SERIAL="1650"} 77`) {
		t.Errorf("MIG series = %s, want the GPU's serial", got)
	}
}
