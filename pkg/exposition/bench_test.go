package exposition_test

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
)

var benchScenarios = []string{"demo", "hgx", "scale-64"}

func benchInput(b *testing.B, scenario string) exposition.Input {
	b.Helper()
	in, err := baselineInput(b.Context(), scenario)
	if err != nil {
		b.Fatal(err)
	}
	return in
}

func benchBaseline(b *testing.B, in exposition.Input) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newBaselineCollector(in))
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := baselineScrape(reg, &buf); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}

// BenchmarkScrape compares serving the prepared page (a copy of its bytes
// into the response) with the client_golang baseline doing its per-scrape
// work on the same series.
func BenchmarkScrape(b *testing.B) {
	for _, scn := range benchScenarios {
		in := benchInput(b, scn)
		page := exposition.NewRenderer(exposition.Options{}).Render(in)
		for name, body := range map[string][]byte{"page": page.Text, "page_gzip": page.TextGzip()} {
			b.Run(scn+"/"+name, func(b *testing.B) {
				buf := bytes.NewBuffer(make([]byte, 0, len(body)))
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					buf.Reset()
					buf.Write(body)
				}
			})
		}
		b.Run(scn+"/baseline", func(b *testing.B) { benchBaseline(b, in) })
	}
}

// BenchmarkRender measures one collection's rendering (text, OpenMetrics and
// both gzip members) with warm label caches, in both namings, and the
// baseline for the same series.
func BenchmarkRender(b *testing.B) {
	for _, scn := range benchScenarios {
		in := benchInput(b, scn)
		b.Run(scn+"/render", func(b *testing.B) {
			r := exposition.NewRenderer(exposition.Options{})
			r.Render(in)
			b.ReportAllocs()
			var series int
			for b.Loop() {
				series = r.Render(in).Series
			}
			b.ReportMetric(float64(series), "series")
		})
		b.Run(scn+"/render-recycle", func(b *testing.B) {
			// As the collector renders: into the buffers of the page before
			// last, which nobody holds here.
			r := exposition.NewRenderer(exposition.Options{RecycleBuffers: true})
			r.Render(in)
			b.ReportAllocs()
			var series int
			for b.Loop() {
				series = r.Render(in).Series
			}
			b.ReportMetric(float64(series), "series")
		})
		b.Run(scn+"/render-dcgm", func(b *testing.B) {
			r := exposition.NewRenderer(exposition.Options{Naming: exposition.NamingDCGM, DCGM: exposition.DCGMOptions{Hostname: "gpu-node-1"}})
			r.Render(in)
			b.ReportAllocs()
			var series int
			for b.Loop() {
				series = r.Render(in).Series
			}
			b.ReportMetric(float64(series), "series")
		})
		b.Run(scn+"/render-relabel", func(b *testing.B) {
			// A new holdings version on every render: the label sets
			// (and so every label value's escaping) are rebuilt each time.
			r := exposition.NewRenderer(exposition.Options{})
			b.ReportAllocs()
			var series int
			for b.Loop() {
				in.HoldingsVersion++
				series = r.Render(in).Series
			}
			b.ReportMetric(float64(series), "series")
		})
		b.Run(scn+"/baseline", func(b *testing.B) { benchBaseline(b, in) })
	}
}

// BenchmarkFabricCost measures what an NVLink fabric adds to a node's page:
// the demo node (8 GPUs, no NVLink) and the hgx node (8 GPUs, 4 NVSwitches,
// 18 links per GPU) rendered in the same run, with their page sizes (text,
// gzip) and series counts. Compare hgx with demo for the fabric's share.
func BenchmarkFabricCost(b *testing.B) {
	for _, scn := range []string{"demo", "hgx"} {
		in := benchInput(b, scn)
		b.Run(scn, func(b *testing.B) {
			r := exposition.NewRenderer(exposition.Options{})
			page := r.Render(in)
			b.ReportAllocs()
			for b.Loop() {
				page = r.Render(in)
			}
			b.ReportMetric(float64(page.Series), "series")
			b.ReportMetric(float64(len(page.Text)), "page_bytes")
			b.ReportMetric(float64(len(page.TextGzip())), "gzip_bytes")
		})
	}
}

// BenchmarkWorkloadInfo measures what gpu_workload_info adds to a
// collection's render: scale-64 (64 pods on 64 GPUs) rendered without
// workloads, then with one on every holder, in the same run.
func BenchmarkWorkloadInfo(b *testing.B) {
	plain := benchInput(b, "scale-64")
	with := plain
	with.Holdings = append([]exposition.Holding(nil), plain.Holdings...)
	for i, h := range with.Holdings {
		if h.Holder != nil {
			c := *h.Holder
			c.Workload = exposition.Workload{Kind: "Deployment", Name: c.Pod, Queue: "team-a", ClusterQueue: "gpu-pool"}
			with.Holdings[i].Holder = &c
		}
	}
	for _, tc := range []struct {
		name string
		in   exposition.Input
	}{{"without", plain}, {"with", with}} {
		b.Run(tc.name, func(b *testing.B) {
			r := exposition.NewRenderer(exposition.Options{RecycleBuffers: true})
			r.Render(tc.in)
			b.ReportAllocs()
			var series int
			for b.Loop() {
				series = r.Render(tc.in).Series
			}
			b.ReportMetric(float64(series), "series")
		})
	}
}
