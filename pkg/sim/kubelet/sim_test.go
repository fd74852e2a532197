package kubelet

import (
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
)

func TestFromSimKeepsEveryDevice(t *testing.T) {
	t.Parallel()
	scn, err := sim.LoadBuiltin("timeslicing")
	if err != nil {
		t.Fatal(err)
	}
	in := scn.PodsAt(time.Minute)
	out := FromSim(in)
	if len(out) != len(in) || len(in) == 0 {
		t.Fatalf("%d pods became %d", len(in), len(out))
	}
	for i, p := range in {
		if out[i].Namespace != p.Namespace || out[i].Name != p.Name || out[i].UID != p.UID || len(out[i].Containers) != len(p.Containers) {
			t.Fatalf("pod %d: %+v became %+v", i, p, out[i])
		}
		for j, c := range p.Containers {
			got := out[i].Containers[j]
			if got.Name != c.Name || len(got.Devices) != len(c.Devices) {
				t.Fatalf("container %s: %+v became %+v", c.Name, c, got)
			}
			for k, d := range c.Devices {
				if got.Devices[k].Resource != d.Resource || len(got.Devices[k].IDs) != len(d.IDs) {
					t.Fatalf("device %+v became %+v", d, got.Devices[k])
				}
			}
		}
	}
}
