package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// TestComputeInstances: the simulator lists one MIG device per compute
// instance, as NVML does; a GPU instance split into several has no UUID of
// its own, and a pod is given the compute instance it names; an instance
// not split is one device under the instance's UUID.
func TestComputeInstances(t *testing.T) {
	t.Parallel()
	scn := builtin(t, "mig-compute-instances")
	s := newSim(t, scn, fields.MustNew().Defaults())
	inv, err := s.src.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var whole, split *source.Entity
	for i := range inv.Entities {
		e := &inv.Entities[i]
		if e.Kind == source.GPUInstance && e.GPUInstance == 1 {
			whole = e
		}
		if e.Kind == source.GPUInstance && e.GPUInstance == 2 {
			split = e
		}
	}
	if whole == nil || split == nil {
		t.Fatalf("GPU instances 1 and 2 not in the inventory: %+v", inv.Entities)
	}
	if whole.MIGUUID == "" || split.MIGUUID != "" {
		t.Errorf("MIG UUIDs: whole %q, split %q; want the whole one's only", whole.MIGUUID, split.MIGUUID)
	}
	wholeDevs, splitDevs := inv.MIGDevicesOf(whole), inv.MIGDevicesOf(split)
	if len(wholeDevs) != 1 || wholeDevs[0].UUID != whole.MIGUUID || wholeDevs[0].Profile != "3g.20gb" {
		t.Errorf("whole instance's devices %+v, want one under its UUID and profile", wholeDevs)
	}
	if len(splitDevs) != 2 || splitDevs[0].Profile != "1c.3g.20gb" || splitDevs[1].Profile != "2c.3g.20gb" ||
		splitDevs[0].UUID == splitDevs[1].UUID || !inv.SplitGPUInstance(split) {
		t.Fatalf("split instance's devices %+v, want compute instances 0 and 1 with their own UUIDs", splitDevs)
	}
	given := map[string]string{}
	for _, p := range scn.PodsAt(0) {
		given[p.Name] = p.Containers[0].Devices[0].IDs[0]
	}
	if given["small-ci-0"] != splitDevs[0].UUID || given["large-ci-1"] != splitDevs[1].UUID || given["trainer-0"] != whole.MIGUUID {
		t.Errorf("pods given %v, want each its compute instance's UUID", given)
	}
}

func TestComputeInstanceErrors(t *testing.T) {
	t.Parallel()
	const gpu = "gpus:\n  - model: x\n    memory_mib: 100\n    mig:\n      - gpu_instance: 1\n        profile: 3g.20gb\n        memory_mib: 50\n"
	split := gpu + "        compute_instances: [{id: 0, profile: 1c.3g.20gb}, {id: 1, profile: 2c.3g.20gb}]\n"
	pod := func(ref string) string {
		return "pods:\n  - namespace: n\n    name: p\n    containers:\n      - name: c\n        devices: [{resource: r, mig: [" + ref + "]}]\n"
	}
	for _, tc := range []struct{ name, in, want string }{
		{"duplicate id", gpu + "        compute_instances: [{id: 0, profile: a}, {id: 0, profile: b}]\n", "compute instance 0 is also"},
		{"empty list", gpu + "        compute_instances: []\n", "at least one compute instance"},
		{"id out of range", gpu + "        compute_instances: [{id: 9, profile: a}]\n", "out of range"},
		{"split instance not named", split + pod("{gpu: 0, gpu_instance: 1}"), "split into 2 compute instances: name one with compute_instance"},
		{"no such compute instance", split + pod("{gpu: 0, gpu_instance: 1, compute_instance: 5}"), "has no compute instance 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("bad.yaml", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
