package exposition

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// FuzzLabelValuesRoundTrip: any label value (model, namespace, pod,
// container) and any value survive rendering and parsing by expfmt, in the
// text format and in OpenMetrics, unchanged; bytes that are not UTF-8 come
// back as strings.ToValidUTF8 replaces them.
func FuzzLabelValuesRoundTrip(f *testing.F) {
	f.Add("NVIDIA H100", "ml", "trainer-0", "main", 0.5)
	f.Add(`q"uo\te`, "new\nline", `\n`, "ünï ✓", math.Inf(1))
	f.Add("", "", "", "", math.NaN())
	f.Add(`\`, `\\`, `"`, "\x00", math.Copysign(0, -1))
	f.Add("NVIDIA\xffH100", "\xb0", "a\xe2\x9c", "\xed\xa0\x80", 1.0)
	set := []fields.Field{fields.MustNew().Defaults()[0]}
	r := NewRenderer(Options{}) // fuzz calls are sequential within a worker
	f.Fuzz(func(t *testing.T, model_, ns, pod, container string, v float64) {
		inv := &source.Inventory{Entities: []source.Entity{{Kind: source.GPU, UUID: "GPU-1", Device: "nvidia0", Model: model_}}}
		s := source.NewSample(testTime, inv, set)
		s.Set(0, 0, source.FloatValue(v))
		h := &Holder{Namespace: ns, Pod: pod, Container: container}
		p := r.Render(Input{Sample: s, Holdings: []Holding{{Entity: 0, Holder: h}}})

		parser := expfmt.NewTextParser(model.LegacyValidation)
		fams, err := parser.TextToMetricFamilies(bytes.NewReader(p.Text))
		if err != nil {
			t.Fatalf("text does not parse: %v\n%q", err, p.Text)
		}
		for format, got := range map[string]map[string]string{
			"text":        labelMap(fams[set[0].Name].Metric[0]),
			"openmetrics": labelMap(parseOpenMetrics(t, p.OpenMetrics)[set[0].Name].Metric[0]),
		} {
			want := map[string]string{"model": model_, "namespace": ns, "pod": pod, "container": container}
			for k, w := range want {
				w = strings.ToValidUTF8(w, "\uFFFD")
				if got[k] != w {
					t.Fatalf("%s: label %s = %q, want %q", format, k, got[k], w)
				}
			}
		}
		gotV := metricValue(fams[set[0].Name].Metric[0])
		wantV := set[0].Scaled(v)
		if gotV != wantV && !(math.IsNaN(gotV) && math.IsNaN(wantV)) {
			t.Fatalf("value %v became %v", wantV, gotV)
		}
	})
}
