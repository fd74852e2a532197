package sim

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// A scenario that says how its GPUs are shared lists, as the kubelet's
// GetAllocatableResources does, every replica of a shared GPU (held or
// not) under its resource and the other GPUs whole; a lost GPU drops out.
func TestAllocatableAt(t *testing.T) {
	t.Parallel()
	scn, err := Parse("a.yaml", []byte(`name: a
gpus:
  - {model: x, memory_mib: 1, uuid: GPU-0, sharing: {replicas: 3}}
  - {model: x, memory_mib: 1, uuid: GPU-1, sharing: {replicas: 2, resource: nvidia.com/gpu.shared}}
  - {model: x, memory_mib: 1, uuid: GPU-2}
  - {model: x, memory_mib: 1, uuid: GPU-3, mig: [{profile: 7g.80gb, gpu_instance: 0, memory_mib: 1}]}
faults:
  - {at: 1m, gpu: 1, lost: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := scn.AllocatableAt(0)
	want := map[string][]string{
		"nvidia.com/gpu":        {"GPU-0::0", "GPU-0::1", "GPU-0::2", "GPU-2"},
		"nvidia.com/gpu.shared": {"GPU-1::0", "GPU-1::1"},
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("AllocatableAt(0) = %v, want %v", got, want)
	}
	got = scn.AllocatableAt(2 * time.Minute)
	delete(want, "nvidia.com/gpu.shared")
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("AllocatableAt(2m), GPU 1 lost = %v, want %v", got, want)
	}

	plain, err := Parse("p.yaml", []byte(oneGPU))
	if err != nil {
		t.Fatal(err)
	}
	if got := plain.AllocatableAt(0); got != nil {
		t.Errorf("a scenario without sharing lists %v, want nil (an old kubelet)", got)
	}
}

// The built-in time-slicing scenario advertises each shared GPU as 4
// replicas: every replica its pods hold is among them.
func TestTimeslicingAllocatable(t *testing.T) {
	t.Parallel()
	scn, err := Load("../../etc/sim/timeslicing.yaml")
	if err != nil {
		t.Fatal(err)
	}
	alloc := scn.AllocatableAt(0)
	listed := map[string]bool{}
	for res, ids := range alloc {
		for _, id := range ids {
			listed[res+" "+id] = true
		}
	}
	held := 0
	for _, p := range scn.PodsAt(0) {
		for _, c := range p.Containers {
			for _, d := range c.Devices {
				for _, id := range d.IDs {
					held++
					if !listed[d.Resource+" "+id] {
						t.Errorf("%s/%s holds %s %s, which GetAllocatableResources does not list", p.Namespace, p.Name, d.Resource, id)
					}
				}
			}
		}
	}
	replicas := 0
	for k := range listed {
		if strings.Contains(k, "::") {
			replicas++
		}
	}
	if held == 0 || replicas != 12 {
		t.Errorf("%d held ids, %d replicas listed; want 3 GPUs of 4 replicas", held, replicas)
	}
}
