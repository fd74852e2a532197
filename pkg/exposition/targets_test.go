package exposition_test

import (
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
)

var targets = flag.Bool("targets", false, "measure the performance targets against the client_golang baseline (make bench)")

// Performance targets, as ratios measured in one run against the baseline.
const (
	minScrapeRatio         = 50 // page serve vs baseline scrape, 64-GPU scenario
	minRenderRatio         = 5  // one collection's render vs baseline scrape
	minRenderGzipRatio     = 4  // render + one gzip vs baseline scrape + gzip, 64-GPU scenario
	maxAllocsPerSeries     = 1.0
	maxScrapeAllocsPerPage = 0
)

// TestPerformanceTargets runs our scrape and render against the baseline on
// the same series and fails when a target ratio is missed. It is a
// measurement, not a unit test: only `make bench` (-targets) runs it.
func TestPerformanceTargets(t *testing.T) {
	if !*targets {
		t.Skip("performance targets run with -targets (make bench)")
	}
	for _, scn := range []string{"demo", "mig", "scale-64"} {
		in, err := baselineInput(t.Context(), scn)
		if err != nil {
			t.Fatal(err)
		}
		// Rendered as the collector renders: into recycled buffers, only
		// the formats scrapes asked for (here: the one gzip scrape of
		// renderGzip asks text).
		r := exposition.NewRenderer(exposition.Options{RecycleBuffers: true, RenderOnDemand: true})
		page := r.Render(in)

		reg := prometheus.NewRegistry()
		reg.MustRegister(newBaselineCollector(in))
		base := testing.Benchmark(func(b *testing.B) {
			var buf bytes.Buffer
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				if err := baselineScrape(reg, &buf); err != nil {
					b.Fatal(err)
				}
			}
		})
		// What promhttp does for a client that accepts gzip: the same
		// gather and encode, through the standard library's gzip at its
		// default level.
		baseGzip := testing.Benchmark(func(b *testing.B) {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			for b.Loop() {
				buf.Reset()
				zw.Reset(&buf)
				if err := baselineScrape(reg, zw); err != nil {
					b.Fatal(err)
				}
				if err := zw.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
		scrape := testing.Benchmark(func(b *testing.B) {
			buf := bytes.NewBuffer(make([]byte, 0, len(page.Text)))
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				buf.Write(page.Text)
			}
		})
		render := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.Render(in)
			}
		})
		// What a collection costs when a gzip-capable client scrapes one
		// format: render plus one lazy compression.
		renderGzip := testing.Benchmark(func(b *testing.B) {
			for b.Loop() {
				r.Render(in).TextGzip()
			}
		})
		renderGzipRatio := float64(baseGzip.NsPerOp()) / float64(max(renderGzip.NsPerOp(), 1))
		scrapeRatio := float64(base.NsPerOp()) / float64(max(scrape.NsPerOp(), 1))
		renderRatio := float64(base.NsPerOp()) / float64(max(render.NsPerOp(), 1))
		allocsPerSeries := float64(render.AllocsPerOp()) / float64(max(page.Series, 1))
		fmt.Printf("%-9s series=%-5d baseline=%10dns scrape=%8dns (%6.0fx, %d allocs) render=%10dns (%5.1fx, %.3f allocs/series) baseline+gzip=%10dns render+gzip=%10dns (%4.1fx)\n",
			scn, page.Series, base.NsPerOp(), scrape.NsPerOp(), scrapeRatio, scrape.AllocsPerOp(), render.NsPerOp(), renderRatio, allocsPerSeries,
			baseGzip.NsPerOp(), renderGzip.NsPerOp(), renderGzipRatio)
		if scn == "scale-64" && renderGzipRatio < minRenderGzipRatio {
			t.Errorf("%s: render + one gzip only %.1fx cheaper than the baseline with gzip, target %dx", scn, renderGzipRatio, minRenderGzipRatio)
		}
		if scn == "scale-64" && scrapeRatio < minScrapeRatio {
			t.Errorf("%s: scrape only %.1fx cheaper than the baseline, target %dx", scn, scrapeRatio, minScrapeRatio)
		}
		if scrape.AllocsPerOp() > maxScrapeAllocsPerPage {
			t.Errorf("%s: %d allocations per uncompressed scrape, target %d", scn, scrape.AllocsPerOp(), maxScrapeAllocsPerPage)
		}
		if renderRatio < minRenderRatio {
			t.Errorf("%s: render only %.1fx cheaper than the baseline, target %dx", scn, renderRatio, minRenderRatio)
		}
		if allocsPerSeries > maxAllocsPerSeries {
			t.Errorf("%s: %.2f allocations per rendered series, target %.0f", scn, allocsPerSeries, maxAllocsPerSeries)
		}
	}
}
