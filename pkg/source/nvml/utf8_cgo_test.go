//go:build cgo && linux

package nvml

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
)

// Strings NVML returns with bytes that are not UTF-8 (model, GPU and MIG
// UUIDs, PCI bus id, driver version, MIG device names) enter the inventory
// with U+FFFD in their place, and the page rendered from them is UTF-8.
func TestStringsNotUTF8AreReplaced(t *testing.T) {
	t.Parallel()
	const bad, good = "\xff", "\uFFFD"
	h := h100()
	h.name, h.uuid, h.bus = "NVIDIA"+bad+"H100", uuid0+bad, "00000000:3B:00.0"+bad
	a := withMIG(a100())
	a.migs[1].uuid = migA + bad
	a.migs[1].name = a.name + " MIG 3g.20gb" + bad
	n := newFakeNode(h, a)
	n.lib.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return "550" + bad + "54", nvml.SUCCESS }
	src, _ := open(t, n, testConfig())
	inv, err := src.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gpu0, gi1 := inv.Entities[0], inv.Entities[2]
	for what, got := range map[string][2]string{
		"driver version": {inv.DriverVersion, "550" + good + "54"},
		"model":          {gpu0.Model, "NVIDIA" + good + "H100"},
		"uuid":           {gpu0.UUID, uuid0 + good},
		"pci bus id":     {gpu0.PCIBusID, "00000000:3B:00.0" + good},
		"mig uuid":       {gi1.MIGUUID, migA + good},
		"mig profile":    {gi1.MIGProfile, "3g.20gb" + good},
	} {
		if got[0] != got[1] {
			t.Errorf("%s = %q, want %q", what, got[0], got[1])
		}
	}

	watch(t, src, "DCGM_FI_DEV_GPU_TEMP")
	s := read(t, src)
	var targets []exposition.Holding
	for e := range s.Inventory.Entities {
		targets = append(targets, exposition.Holding{Entity: e})
	}
	p := exposition.NewRenderer(exposition.Options{}).Render(exposition.Input{Sample: s, Holdings: targets})
	for format, b := range map[string][]byte{"text": p.Text, "openmetrics": p.OpenMetrics} {
		if !utf8.Valid(b) || !strings.Contains(string(b), `model="NVIDIA`+good+`H100"`) {
			t.Errorf("%s: page is not UTF-8 or lacks the model:\n%q", format, b)
		}
	}
}
