//go:build cgo && linux

package dcgm

import (
	"bytes"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

// TestDCGMNamingMIGMemorySum reads a node with a MIG GPU through go-dcgm and
// the fake hostengine and renders it in dcgm naming: sum(DCGM_FI_DEV_FB_USED)
// must be what dcgm-exporter reports for it, the instances' memory plus the
// non-MIG GPU's, not the MIG GPU's whole-GPU value on top of its instances;
// GPU-level fields appear once per instance with the GPU's value.
func TestDCGMNamingMIGMemorySum(t *testing.T) {
	state := node() // GPU 0 without MIG; GPU 1 with GPU instances 7 and 8
	state.Values = []fakedcgm.Value{
		fakedcgm.Int(fakedcgm.EntityGPU, 0, 252, 1000),
		fakedcgm.Int(fakedcgm.EntityGPU, 1, 252, 18500), // the whole GPU: both instances and the driver's share
		fakedcgm.Int(fakedcgm.EntityGI, 7, 252, 15000),
		fakedcgm.Int(fakedcgm.EntityGI, 8, 252, 3000),
		fakedcgm.Int(fakedcgm.EntityGPU, 1, 150, 47),
	}
	h := start(t, state, testConfig())
	h.watch("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP")
	s := h.read()
	targets := make([]exposition.Holding, len(s.Inventory.Entities))
	for i := range targets {
		targets[i] = exposition.Holding{Entity: i}
	}
	page := exposition.NewRenderer(exposition.Options{Naming: exposition.NamingDCGM}).
		Render(exposition.Input{Sample: s, Holdings: targets})
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(page.Text))
	if err != nil {
		t.Fatalf("page does not parse: %v\n%s", err, page.Text)
	}
	sum := 0.0
	for _, m := range fams["DCGM_FI_DEV_FB_USED"].GetMetric() {
		sum += m.GetGauge().GetValue()
	}
	if sum != 1000+15000+3000 {
		t.Errorf("sum(DCGM_FI_DEV_FB_USED) = %v, want %v (instances and the non-MIG GPU)\n%s", sum, 1000+15000+3000, page.Text)
	}
	// dcgm-exporter watches the MIG GPU's instances only; DCGM answers the
	// GPU-level temperature on each with the GPU's value.
	temps := fams["DCGM_FI_DEV_GPU_TEMP"].GetMetric()
	if len(temps) != 2 {
		t.Errorf("DCGM_FI_DEV_GPU_TEMP has %d series, want one per instance of the MIG GPU\n%s", len(temps), page.Text)
	}
	for _, m := range temps {
		if m.GetGauge().GetValue() != 47 {
			t.Errorf("DCGM_FI_DEV_GPU_TEMP = %v on %v, want the GPU's 47", m.GetGauge().GetValue(), m.GetLabel())
		}
	}
}
