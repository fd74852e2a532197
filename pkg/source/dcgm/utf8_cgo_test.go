//go:build cgo && linux

package dcgm

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

// Strings DCGM returns with bytes that are not UTF-8 (model, UUIDs, PCI bus
// id, driver version, MIG profile, string fields) enter the inventory and
// the sample with U+FFFD in their place, and the page rendered from them is
// UTF-8 in both namings.
func TestStringsNotUTF8AreReplaced(t *testing.T) {
	const bad, good = "\xff", "\uFFFD"
	state := node()
	state.Driver = "550" + bad + "54"
	state.GPUs[0].Name = "NVIDIA" + bad + "H100"
	state.GPUs[0].UUID = uuid0 + bad
	state.GPUs[0].BusID = "00000000:3B:00.0" + bad
	state.Instances[1].Profile = "3g" + bad + "20gb"
	state.Values = []fakedcgm.Value{
		fakedcgm.Str("gpu", 0, 53, "1650"+bad+"\xfe123"), // DCGM_FI_DEV_SERIAL
		fakedcgm.Int("gpu", 0, 150, 45),
	}
	h := start(t, state, testConfig())
	cat := fields.MustNew()
	serial, ok := cat.LookupLabel("DCGM_FI_DEV_SERIAL")
	if !ok {
		t.Fatal("no label field DCGM_FI_DEV_SERIAL")
	}
	set := append(catalogFields(t, "DCGM_FI_DEV_GPU_TEMP"), serial)
	if err := h.src.Watch(context.Background(), set); err != nil {
		t.Fatalf("Watch: %v", err)
	}
	s := h.read()

	inv := s.Inventory
	gpu0, gi := inv.Entities[0], inv.Entities[2]
	for what, got := range map[string][2]string{
		"driver version": {inv.DriverVersion, "550" + good + "54"},
		"model":          {gpu0.Model, "NVIDIA" + good + "H100"},
		"uuid":           {gpu0.UUID, uuid0 + good},
		"pci bus id":     {gpu0.PCIBusID, "00000000:3B:00.0" + good},
		"mig profile":    {gi.MIGProfile, "3g" + good + "20gb"},
		"serial field":   {value(t, s, "gpu:0", 53).Str, "1650" + good + "123"},
	} {
		if got[0] != got[1] {
			t.Errorf("%s = %q, want %q", what, got[0], got[1])
		}
	}

	var targets []exposition.Holding
	for e := range inv.Entities {
		targets = append(targets, exposition.Holding{Entity: e})
	}
	for _, naming := range []exposition.Naming{exposition.NamingPrometheus, exposition.NamingDCGM} {
		p := exposition.NewRenderer(exposition.Options{Naming: naming}).Render(exposition.Input{Sample: s, Holdings: targets})
		for format, b := range map[string][]byte{"text": p.Text, "openmetrics": p.OpenMetrics} {
			if !utf8.Valid(b) || !strings.Contains(string(b), "NVIDIA"+good+"H100") {
				t.Errorf("%s naming, %s: page is not UTF-8 or lacks the model:\n%q", naming, format, b)
			}
		}
	}
}
