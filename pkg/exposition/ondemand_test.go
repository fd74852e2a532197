package exposition_test

import (
	"bytes"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
)

// TestRenderOnDemand: a renderer with RenderOnDemand renders the formats
// scrapes asked for since its last render (or the last render's), and a
// page makes a format left out from the other, byte for byte what a
// renderer rendering both writes, in both namings.
func TestRenderOnDemand(t *testing.T) {
	t.Parallel()
	for _, scn := range []string{"demo", "mig", "scale-64"} {
		in, err := baselineInput(t.Context(), scn)
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range []exposition.Options{
			{},
			{Naming: exposition.NamingDCGM, DCGM: exposition.DCGMOptions{Hostname: "gpu-node-1"}},
		} {
			ref := exposition.NewRenderer(opts).Render(in)
			opts.RenderOnDemand, opts.RecycleBuffers = true, true
			om, text := exposition.FormatOpenMetrics, exposition.FormatText
			for _, step := range []struct {
				name string
				// the formats asked of each page before the render checked
				history          [][]exposition.Format
				wantText, wantOM bool // rendered by the render checked
			}{
				{"first render", nil, true, true},
				{"nobody asked yet", [][]exposition.Format{nil, nil}, true, true},
				{"after an OpenMetrics scrape", [][]exposition.Format{{om}}, false, true},
				{"nobody scraped since", [][]exposition.Format{{om}, nil}, false, true},
				{"after a text scrape", [][]exposition.Format{{om}, {text}}, true, false},
				{"after scrapes of both", [][]exposition.Format{{om}, {text, om}}, true, true},
			} {
				r := exposition.NewRenderer(opts)
				for _, ask := range step.history {
					prev := r.Render(in)
					for _, f := range ask {
						prev.Body(f, exposition.Gzip)
					}
				}
				p := r.Render(in)
				if (p.Text != nil) != step.wantText || (p.OpenMetrics != nil) != step.wantOM {
					t.Errorf("%s %s, %s: rendered text %v, OpenMetrics %v; want %v, %v", scn, opts.Naming, step.name,
						p.Text != nil, p.OpenMetrics != nil, step.wantText, step.wantOM)
				}
				if got := p.Body(text, exposition.Identity); !bytes.Equal(got, ref.Text) {
					t.Errorf("%s %s, %s: text body differs from a full render", scn, opts.Naming, step.name)
				}
				if got := p.Body(om, exposition.Identity); !bytes.Equal(got, ref.OpenMetrics) {
					t.Errorf("%s %s, %s: OpenMetrics body differs from a full render", scn, opts.Naming, step.name)
				}
			}
		}
	}
}
