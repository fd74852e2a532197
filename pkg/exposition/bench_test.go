package exposition

import (
	"bytes"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/sim"
)

// benchInput reads one sample of a built-in scenario, every catalog field
// watched, each GPU held by one container when the scenario says so.
func benchInput(b *testing.B, scenario string) Input {
	b.Helper()
	scn, err := sim.LoadBuiltin(scenario)
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := sim.New(scn, sim.WithClock(func() time.Time { return t0.Add(time.Minute) }), sim.WithStart(t0))
	if err := src.Watch(b.Context(), fields.MustNew().All()); err != nil {
		b.Fatal(err)
	}
	s, err := src.Read(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	targets := make([]Target, 0, len(s.Inventory.Entities))
	for i := range s.Inventory.Entities {
		h := &Holder{Namespace: "ns-" + strconv.Itoa(i%8), Pod: "pod-" + strconv.Itoa(i), Container: "main"}
		targets = append(targets, Target{Entity: i, Holder: h})
	}
	return Input{Sample: s, Targets: targets, Attribution: s.Inventory}
}

// baselineCollector is what an exporter built the usual way does on every
// scrape: one const metric per series, gathered and encoded by client_golang.
type baselineCollector struct {
	in    Input
	descs map[string]*prometheus.Desc
}

func newBaseline(in Input) *baselineCollector {
	c := &baselineCollector{in: in, descs: map[string]*prometheus.Desc{}}
	labels := []string{"gpu", "uuid", "device", "model", "namespace", "pod", "container"}
	for _, f := range in.Sample.Fields {
		l := labels
		if f.Kind == fields.Bitmask {
			l = append(append([]string(nil), labels...), "reason")
		}
		c.descs[f.Name] = prometheus.NewDesc(f.Name, f.Help, l, nil)
	}
	return c
}

func (c *baselineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *baselineCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.in.Sample
	for col, f := range s.Fields {
		vt := prometheus.GaugeValue
		if f.Type == fields.Counter {
			vt = prometheus.CounterValue
		}
		for _, t := range c.in.Targets {
			e := &s.Inventory.Entities[t.Entity]
			x, ok := s.At(t.Entity, col).Number()
			if !ok || !f.Levels.Has(e.Kind.Level()) {
				continue
			}
			lv := []string{strconv.Itoa(e.GPU), e.UUID, e.Device, e.Model, t.Holder.Namespace, t.Holder.Pod, t.Holder.Container}
			if f.Kind == fields.Bitmask {
				for _, r := range f.Reasons {
					v := 0.0
					if uint64(x)&r.Bit != 0 {
						v = 1
					}
					ch <- prometheus.MustNewConstMetric(c.descs[f.Name], vt, v, append(lv, r.Name)...)
				}
				continue
			}
			ch <- prometheus.MustNewConstMetric(c.descs[f.Name], vt, f.Scaled(x), lv...)
		}
	}
}

func baselineScrape(b *testing.B, reg *prometheus.Registry, w io.Writer) {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			b.Fatal(err)
		}
	}
}

var benchScenarios = []string{"demo", "scale-64"}

// BenchmarkScrape compares serving the prepared page with the client_golang
// baseline doing its per-scrape work, on the same series.
func BenchmarkScrape(b *testing.B) {
	for _, scn := range benchScenarios {
		in := benchInput(b, scn)
		page := NewRenderer(Options{}).Render(in)
		// A scrape of the page is a copy of its bytes into the response.
		b.Run(scn+"/page", func(b *testing.B) {
			buf := bytes.NewBuffer(make([]byte, 0, len(page.Text)))
			b.SetBytes(int64(len(page.Text)))
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				buf.Write(page.Text)
			}
		})
		b.Run(scn+"/page_gzip", func(b *testing.B) {
			buf := bytes.NewBuffer(make([]byte, 0, len(page.TextGzip)))
			b.SetBytes(int64(len(page.TextGzip)))
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				buf.Write(page.TextGzip)
			}
		})
		b.Run(scn+"/baseline", func(b *testing.B) {
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(newBaseline(in))
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				baselineScrape(b, reg, &buf)
			}
			b.SetBytes(int64(buf.Len()))
		})
	}
}

// BenchmarkRender measures one collection's rendering (text, OpenMetrics and
// both gzip members) with warm label caches, and the baseline for the same
// series.
func BenchmarkRender(b *testing.B) {
	for _, scn := range benchScenarios {
		in := benchInput(b, scn)
		b.Run(scn+"/render", func(b *testing.B) {
			r := NewRenderer(Options{})
			r.Render(in)
			b.ReportAllocs()
			var series int
			for b.Loop() {
				series = r.Render(in).Series
			}
			b.ReportMetric(float64(series), "series")
		})
		b.Run(scn+"/render_nogzip", func(b *testing.B) {
			r := NewRenderer(Options{})
			r.Render(in)
			b.ReportAllocs()
			for b.Loop() {
				r.renderPlain(in)
			}
		})
		b.Run(scn+"/baseline", func(b *testing.B) {
			reg := prometheus.NewRegistry()
			reg.MustRegister(newBaseline(in))
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				baselineScrape(b, reg, &buf)
			}
		})
	}
}

var _ source.Source = (*sim.Source)(nil)
