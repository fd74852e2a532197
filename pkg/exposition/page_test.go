package exposition

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

func mustField(t testing.TB, name string) fields.Field {
	t.Helper()
	f, ok := fields.MustNew().Lookup(name)
	if !ok {
		t.Fatalf("no field %s", name)
	}
	return f
}

// testSample builds n GPUs with every given field set to a value derived from
// the GPU index and column, plus one MIG instance on GPU 0.
func testSample(t testing.TB, n int, set []fields.Field) *source.Sample {
	t.Helper()
	inv := &source.Inventory{DriverVersion: "550.54.15"}
	for i := 0; i < n; i++ {
		inv.Entities = append(inv.Entities, source.Entity{
			Kind: source.GPU, GPU: i, UUID: "GPU-00000000-0000-0000-0000-00000000000" + string(rune('0'+i%10)),
			Device: "nvidia" + string(rune('0'+i%10)), Model: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:3B:00.0",
			GPUInstance: -1, ComputeInstance: -1,
		})
	}
	s := source.NewSample(testTime, inv, set)
	for e := range inv.Entities {
		for c, f := range set {
			switch f.Kind {
			case fields.Bitmask:
				s.Set(e, c, source.IntValue(0x44))
			default:
				s.Set(e, c, source.IntValue(int64(10*e+c+1)))
			}
		}
	}
	return s
}

func allTargets(s *source.Sample) []Holding {
	ts := make([]Holding, len(s.Inventory.Entities))
	for i := range ts {
		ts[i] = Holding{Entity: i}
	}
	return ts
}

func parseText(t testing.TB, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("text format does not parse: %v\n%s", err, b)
	}
	return fams
}

func parseOpenMetrics(t testing.TB, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	dec := expfmt.NewDecoder(bytes.NewReader(append(bytes.Clone(b), "# EOF\n"...)), expfmt.FmtOpenMetrics_1_0_0)
	out := map[string]*dto.MetricFamily{}
	for {
		var mf dto.MetricFamily
		err := dec.Decode(&mf)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("OpenMetrics does not parse: %v\n%s", err, b)
		}
		if _, dup := out[mf.GetName()]; dup {
			t.Fatalf("OpenMetrics family %s appears twice", mf.GetName())
		}
		out[mf.GetName()] = &mf
	}
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

func TestValuesScaledAndParsed(t *testing.T) {
	t.Parallel()
	set := []fields.Field{
		mustField(t, "DCGM_FI_DEV_GPU_UTIL"), mustField(t, "DCGM_FI_DEV_FB_USED"),
		mustField(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), mustField(t, "DCGM_FI_DEV_SM_CLOCK"),
	}
	s := testSample(t, 2, set)
	p := NewRenderer(Options{}).Render(Input{Sample: s, Holdings: allTargets(s)})
	for name, fams := range map[string]map[string]*dto.MetricFamily{
		"text": parseText(t, p.Text), "openmetrics": parseOpenMetrics(t, p.OpenMetrics),
	} {
		for c, f := range set {
			fam := fams[f.Name] // the OpenMetrics decoder names counter families with _total too
			if fam == nil {
				t.Fatalf("%s: family %s missing", name, f.Name)
			}
			if len(fam.Metric) != 2 {
				t.Fatalf("%s: %s has %d series, want 2", name, f.Name, len(fam.Metric))
			}
			for _, m := range fam.Metric {
				e := 0
				if labelMap(m)["gpu"] == "1" {
					e = 1
				}
				raw, _ := s.At(e, c).Number()
				if got, want := metricValue(m), f.Scaled(raw); got != want {
					t.Errorf("%s %s gpu %d = %v, want %v", name, f.Name, e, got, want)
				}
			}
		}
	}
	if p.Series != 2+2*len(set) {
		t.Errorf("Series = %d, want %d", p.Series, 2+2*len(set))
	}
}

func TestBlankValuesAreNotExported(t *testing.T) {
	t.Parallel()
	set := []fields.Field{mustField(t, "DCGM_FI_DEV_GPU_UTIL"), mustField(t, "DCGM_FI_DEV_GPU_TEMP")}
	s := testSample(t, 2, set)
	s.Set(0, 0, source.Value{})                   // blank
	s.Set(1, 0, source.StringValue("<<<NULL>>>")) // a string never becomes a number
	s.Set(1, 1, source.Value{})
	p := NewRenderer(Options{}).Render(Input{Sample: s, Holdings: allTargets(s)})
	if bytes.Contains(p.Text, []byte("gpu_utilization_ratio")) {
		t.Errorf("family with only blank values was written:\n%s", p.Text)
	}
	fams := parseText(t, p.Text)
	if got := len(fams["gpu_temperature_celsius"].Metric); got != 1 {
		t.Errorf("temperature series = %d, want 1", got)
	}
}

func TestBitmaskExpandsToReasons(t *testing.T) {
	t.Parallel()
	f := mustField(t, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
	s := testSample(t, 1, []fields.Field{f})
	s.Set(0, 0, source.IntValue(0x4|0x40))
	p := NewRenderer(Options{}).Render(Input{Sample: s, Holdings: allTargets(s)})
	fam := parseText(t, p.Text)["gpu_clock_event_active"]
	if len(fam.Metric) != len(f.Reasons) {
		t.Fatalf("series = %d, want one per reason (%d)", len(fam.Metric), len(f.Reasons))
	}
	active := map[string]bool{}
	for _, m := range fam.Metric {
		if metricValue(m) == 1 {
			active[labelMap(m)["reason"]] = true
		}
	}
	if len(active) != 2 || !active["sw_power_cap"] || !active["hw_thermal"] {
		t.Errorf("active reasons = %v, want sw_power_cap and hw_thermal", active)
	}
}

func TestEscaping(t *testing.T) {
	t.Parallel()
	values := []string{`quote"d`, `back\slash`, "new\nline", "ünïcødé ✓", `\n literal`, `trailing\`}
	for _, v := range values {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			f := mustField(t, "DCGM_FI_DEV_GPU_TEMP")
			f.Help = "help with \\ and \n and \"quotes\" " + v
			s := testSample(t, 1, []fields.Field{f})
			s.Inventory.Entities[0].Model = v
			h := &Holder{Namespace: v, Pod: v, Container: v}
			p := NewRenderer(Options{}).Render(Input{Sample: s, Holdings: []Holding{{Entity: 0, Holder: h}}})
			for name, fams := range map[string]map[string]*dto.MetricFamily{
				"text": parseText(t, p.Text), "openmetrics": parseOpenMetrics(t, p.OpenMetrics),
			} {
				fam := fams["gpu_temperature_celsius"]
				if fam.GetHelp() != f.Help {
					t.Errorf("%s help = %q, want %q", name, fam.GetHelp(), f.Help)
				}
				l := labelMap(fam.Metric[0])
				for _, k := range []string{"model", "namespace", "pod", "container"} {
					if l[k] != v {
						t.Errorf("%s label %s = %q, want %q", name, k, l[k], v)
					}
				}
			}
		})
	}
}

func TestFloatFormat(t *testing.T) {
	t.Parallel()
	cases := map[float64]string{
		0: "0", 1: "1", 0.45: "0.45", 85520809984: "8.5520809984e+10", 1e-7: "1e-07",
		math.NaN(): "NaN", math.Inf(1): "+Inf", math.Inf(-1): "-Inf", 1.0 / 3: "0.3333333333333333",
	}
	for v, want := range cases {
		if got := string(appendFloat(nil, v)); got != want {
			t.Errorf("appendFloat(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestGzipMatchesPlain(t *testing.T) {
	t.Parallel()
	s := testSample(t, 4, fields.MustNew().Defaults())
	p := NewRenderer(Options{}).Render(Input{Sample: s, Holdings: allTargets(s)})
	for name, pair := range map[string][2][]byte{"text": {p.Text, p.TextGzip()}, "openmetrics": {p.OpenMetrics, p.OpenMetricsGzip()}} {
		zr, err := gzip.NewReader(bytes.NewReader(pair[1]))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, pair[0]) {
			t.Errorf("%s: gzip variant decodes to different bytes", name)
		}
	}
}

func TestHoldersAndAllocations(t *testing.T) {
	t.Parallel()
	s := testSample(t, 2, []fields.Field{mustField(t, "DCGM_FI_DEV_GPU_UTIL")})
	a := &Holder{Namespace: "ml", Pod: "a", Container: "main"}
	b := &Holder{Namespace: "ml", Pod: "b", Container: "main"}
	targets := []Holding{{Entity: 0, Holder: a, Shared: true}, {Entity: 0, Holder: b, Shared: true}, {Entity: 1}}
	p := NewRenderer(Options{}).Render(Input{Sample: s, Holdings: targets})
	fams := parseText(t, p.Text)
	util := fams["gpu_utilization_ratio"].Metric
	if len(util) != 3 {
		t.Fatalf("utilization series = %d, want one per holder plus the free GPU", len(util))
	}
	for _, m := range util {
		l := labelMap(m)
		if l["gpu"] == "1" {
			if _, has := l["pod"]; has {
				t.Errorf("free GPU carries pod label: %v", l)
			}
		} else if l["pod"] != "a" && l["pod"] != "b" {
			t.Errorf("held GPU lacks its holder: %v", l)
		}
	}
	alloc := fams["gpu_pod_allocation_info"].Metric
	if len(alloc) != 2 || labelMap(alloc[0])["shared"] != "true" {
		t.Errorf("allocation info = %v, want 2 shared series", alloc)
	}
	if got := len(fams["gpu_info"].Metric); got != 2 {
		t.Errorf("gpu_info series = %d, want one per GPU", got)
	}
}

func TestLabelCacheFollowsInventoryAndAttribution(t *testing.T) {
	t.Parallel()
	s := testSample(t, 2, []fields.Field{mustField(t, "DCGM_FI_DEV_GPU_UTIL")})
	r := NewRenderer(Options{})
	const snapA, snapB = 1, 2
	r.Render(Input{Sample: s, Holdings: allTargets(s), HoldingsVersion: snapA})
	first := &r.labels[0].b[0]
	r.Render(Input{Sample: s, Holdings: allTargets(s), HoldingsVersion: snapA})
	if &r.labels[0].b[0] != first {
		t.Error("labels rebuilt although inventory and attribution are unchanged")
	}
	h := &Holder{Namespace: "ns", Pod: "p", Container: "c"}
	p := r.Render(Input{Sample: s, Holdings: []Holding{{Entity: 0, Holder: h}, {Entity: 1}}, HoldingsVersion: snapB})
	if !strings.Contains(string(p.Text), `pod="p"`) {
		t.Error("new attribution not reflected in labels")
	}
}

func TestMaxSeries(t *testing.T) {
	t.Parallel()
	s := testSample(t, 4, []fields.Field{mustField(t, "DCGM_FI_DEV_GPU_UTIL"), mustField(t, "DCGM_FI_DEV_GPU_TEMP")})
	p := NewRenderer(Options{MaxSeries: 6}).Render(Input{Sample: s, Holdings: allTargets(s)})
	if p.Series != 6 || p.Dropped != 6 {
		t.Errorf("series, dropped = %d, %d; want 6, 6", p.Series, p.Dropped)
	}
	fams := parseText(t, p.Text) // a family cut to nothing must leave no header behind
	if _, ok := fams["gpu_temperature_celsius"]; ok {
		t.Error("family without kept series has a header")
	}
}

func TestEmptyPage(t *testing.T) {
	t.Parallel()
	p := Empty()
	zr, err := gzip.NewReader(bytes.NewReader(p.TextGzip()))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(zr); len(b) != 0 || len(p.Text) != 0 {
		t.Error("empty page is not empty")
	}
}

// Empty pages compress with a shared encoder, as rendered pages do: the
// renderer's empty page with the renderer's encoder, the package's with
// the one the package keeps. Their first gzip scrape allocates the page
// and one compression's output, never a gzip writer of its own (0.8 MiB,
// 18 allocations). Not parallel: AllocsPerRun counts every goroutine's
// allocations.
func TestEmptyPagesShareTheEncoder(t *testing.T) {
	r := NewRenderer(Options{})
	if p := r.Empty(); p.enc != r.Encoder() {
		t.Error("the renderer's empty page does not use the renderer's encoder")
	}
	for _, tc := range []struct {
		name  string
		empty func() *Page
		enc   *Encoder
	}{
		{"renderer's", r.Empty, r.Encoder()},
		{"package's", Empty, sharedEncoder()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.enc.Encode(Gzip, nil) // its writer exists, as after the first gzip scrape
			want := testing.AllocsPerRun(20, func() { _ = tc.empty() }) +
				testing.AllocsPerRun(20, func() { _ = tc.enc.Encode(Gzip, nil) })
			if got := testing.AllocsPerRun(20, func() { _ = tc.empty().TextGzip() }); got > want {
				t.Errorf("an empty page's first gzip body made %v allocations, want at most %v (the page and one compression with the shared writer)", got, want)
			}
			for f := range numFormats {
				zr, err := gzip.NewReader(bytes.NewReader(tc.empty().Body(f, Gzip)))
				if err != nil {
					t.Fatal(err)
				}
				if b, err := io.ReadAll(zr); err != nil || len(b) != 0 {
					t.Errorf("format %d: gzip body holds %q, %v; want it empty", f, b, err)
				}
			}
		})
	}
}
