package exposition

import (
	"maps"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// A GPU shared by replicas held by two containers, one of them holding two
// replicas, and a MIG instance advertised as replicas nobody holds: the
// device's count once per device, the holders' counts once per holder,
// nothing for whole devices, and nothing in dcgm naming.
func TestRenderReplicas(t *testing.T) {
	t.Parallel()
	in := familiesInput(t, []fields.Field{fields.MustNew().All()[0]})
	in.Holdings = []Holding{
		{Entity: 0, Holder: &Holder{Namespace: "ml", Pod: "a", Container: "main", VGPU: "0"}, Shared: true, Replicas: 1, DeviceReplicas: 4},
		{Entity: 0, Holder: &Holder{Namespace: "ml", Pod: "b", Container: "main", VGPU: "1"}, Shared: true, Replicas: 2, DeviceReplicas: 4},
		{Entity: 1, Holder: &Holder{Namespace: "ml", Pod: "whole", Container: "main"}},
		{Entity: 2, DeviceReplicas: 3},
		{Entity: 3, DeviceReplicas: 5, Replicas: 1, Holder: &Holder{Namespace: "ml", Pod: "b", Container: "main"}}, // an NVLink: no series
	}
	for _, naming := range []Naming{NamingPrometheus, NamingDCGM} {
		page := NewRenderer(Options{Naming: naming}).Render(in)
		fams := parseText(t, page.Text)
		if naming == NamingDCGM {
			for name := range fams {
				if strings.Contains(name, "replicas") {
					t.Errorf("dcgm naming renders %s", name)
				}
			}
			continue
		}
		got := map[string]float64{}
		for _, m := range fams["gpu_shared_replicas"].GetMetric() {
			l := labelMap(m)
			if l["pod"] != "" || l["link"] != "" {
				t.Errorf("gpu_shared_replicas with holder or link labels: %v", l)
			}
			got[l["uuid"]+"/"+l["gpu_instance"]] += m.GetGauge().GetValue()
		}
		if want := map[string]float64{"GPU-a/": 4, "GPU-a/1": 3}; !maps.Equal(got, want) {
			t.Errorf("gpu_shared_replicas = %v, want %v", got, want)
		}
		got = map[string]float64{}
		for _, m := range fams["gpu_container_shared_replicas"].GetMetric() {
			l := labelMap(m)
			got[l["uuid"]+"/"+l["link"]+"/"+l["pod"]] += m.GetGauge().GetValue()
		}
		if want := map[string]float64{"GPU-a//a": 1, "GPU-a//b": 2}; !maps.Equal(got, want) {
			t.Errorf("gpu_container_shared_replicas = %v, want %v", got, want)
		}
	}
	in.Holdings = []Holding{{Entity: 0}, {Entity: 1, Holder: &Holder{Namespace: "ml", Pod: "whole", Container: "main"}}}
	fams := parseText(t, NewRenderer(Options{}).Render(in).Text)
	for _, name := range []string{"gpu_shared_replicas", "gpu_container_shared_replicas"} {
		if _, ok := fams[name]; ok {
			t.Errorf("%s on a node without shared replicas", name)
		}
	}
}
