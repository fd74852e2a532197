package sim

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// A scenario with bytes that is not UTF-8 (Latin-1 text, a stray byte)
// loads with U+FFFD for each run of them, in every string it sets, and the
// page rendered from it is UTF-8; a UTF-16 file is left to the YAML reader.
func TestScenarioNotUTF8IsReplaced(t *testing.T) {
	t.Parallel()
	const bad, good = "\xff", "\uFFFD"
	scn := parse(t, "name: t\ndriver_version: 550"+bad+"54\ngpus:\n"+
		"  - model: NVIDIA"+bad+"H100\n    memory_mib: 81559\n    fields: {DCGM_FI_DEV_GPU_TEMP: {constant: 40}}\n    uuid: GPU-1"+bad+"\n"+
		"    mig: [{profile: 1g.10gb"+bad+", gpu_instance: 7, memory_mib: 9856}]\n"+
		"pods:\n  - namespace: ml"+bad+"\xfe\n    name: pod"+bad+"\n    containers:\n"+
		"      - name: c"+bad+"\n        devices: [{resource: nvidia.com/mig-1g.10gb, mig: [{gpu: 0, gpu_instance: 7}]}]\n")
	temp, _ := fields.MustNew().Lookup("DCGM_FI_DEV_GPU_TEMP")
	s := newSim(t, scn, []fields.Field{temp})
	smp := s.readAt(time.Minute)
	inv := smp.Inventory
	pod := scn.PodsAt(time.Minute)[0]
	for what, got := range map[string][2]string{
		"driver version": {inv.DriverVersion, "550" + good + "54"},
		"model":          {inv.Entities[0].Model, "NVIDIA" + good + "H100"},
		"uuid":           {inv.Entities[0].UUID, "GPU-1" + good},
		"mig profile":    {inv.Entities[1].MIGProfile, "1g.10gb" + good},
		"namespace":      {pod.Namespace, "ml" + good},
		"pod":            {pod.Name, "pod" + good},
		"container":      {pod.Containers[0].Name, "c" + good},
	} {
		if got[0] != got[1] {
			t.Errorf("%s = %q, want %q", what, got[0], got[1])
		}
	}
	h := &exposition.Holder{Namespace: pod.Namespace, Pod: pod.Name, Container: pod.Containers[0].Name}
	p := exposition.NewRenderer(exposition.Options{}).Render(exposition.Input{
		Sample: smp, Holdings: []exposition.Holding{{Entity: 0}, {Entity: 1, Holder: h}},
	})
	for format, b := range map[string][]byte{"text": p.Text, "openmetrics": p.OpenMetrics} {
		if !utf8.Valid(b) || !strings.Contains(string(b), `model="NVIDIA`+good+`H100"`) {
			t.Errorf("%s: page is not UTF-8 or lacks the model:\n%q", format, b)
		}
	}

	utf16 := []byte{0xff, 0xfe}
	for _, r := range "gpus: [{model: \u00e9, memory_mib: 1}]\n" {
		utf16 = append(utf16, byte(r), byte(r>>8))
	}
	scn, err := Parse("utf16.yaml", utf16)
	if err != nil {
		t.Fatalf("UTF-16 scenario: %v", err)
	}
	if got := scn.entities[0].Model; got != "\u00e9" {
		t.Errorf("UTF-16 scenario model = %q, want %q", got, "\u00e9")
	}
}
