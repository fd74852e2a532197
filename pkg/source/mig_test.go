package source

import (
	"reflect"
	"testing"
)

func TestComputeInstanceProfile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		gi               string
		ciSlices, slices int
		want             string
	}{
		{"3g.71gb", 1, 3, "1c.3g.71gb"}, // nvidia-smi -L: "MIG 1c.3g.71gb Device 0"
		{"3g.71gb", 2, 3, "2c.3g.71gb"},
		{"3g.71gb", 3, 3, "3g.71gb"}, // spanning the instance: its profile
		{"1g.10gb", 0, 1, "1g.10gb"}, // unknown slices
		{"", 1, 3, ""},
	} {
		if got := ComputeInstanceProfile(tc.gi, tc.ciSlices, tc.slices); got != tc.want {
			t.Errorf("ComputeInstanceProfile(%q, %d, %d) = %q, want %q", tc.gi, tc.ciSlices, tc.slices, got, tc.want)
		}
	}
}

func TestHeldAs(t *testing.T) {
	t.Parallel()
	gpu := Entity{Kind: GPU, GPU: 0, UUID: "GPU-a", GPUInstance: -1, ComputeInstance: -1}
	whole := Entity{Kind: GPUInstance, GPU: 0, UUID: "GPU-a", GPUInstance: 1, ComputeInstance: 0, MIGUUID: "MIG-1"}
	split := Entity{Kind: GPUInstance, GPU: 0, UUID: "GPU-a", GPUInstance: 2, ComputeInstance: -1}
	inv := &Inventory{Entities: []Entity{gpu, whole, split}, MIGDevices: []MIGDevice{
		{GPU: 0, GPUInstance: 1, ComputeInstance: 0, UUID: "MIG-1"},
		{GPU: 0, GPUInstance: 2, ComputeInstance: 0, UUID: "MIG-2a"},
		{GPU: 0, GPUInstance: 2, ComputeInstance: 1, UUID: "MIG-2b"},
	}}
	if inv.HeldAs(&gpu) != nil || inv.HeldAs(&whole) != nil || inv.SplitGPUInstance(&whole) {
		t.Error("a GPU or an instance with one compute instance has other identities")
	}
	got := inv.HeldAs(&split)
	a, b := split, split
	a.ComputeInstance, a.MIGUUID = 0, "MIG-2a"
	b.ComputeInstance, b.MIGUUID = 1, "MIG-2b"
	if !reflect.DeepEqual(got, []Entity{a, b}) {
		t.Errorf("HeldAs(split) = %+v", got)
	}
	all := inv.WithHeldAs()
	if len(all.Entities) != 5 || len(inv.Entities) != 3 || !reflect.DeepEqual(all.Entities[3:], got) {
		t.Errorf("WithHeldAs = %+v (inventory now %d rows)", all.Entities, len(inv.Entities))
	}
	if plain := (&Inventory{Entities: []Entity{gpu}}); plain.WithHeldAs() != plain {
		t.Error("WithHeldAs copied an inventory without MIG devices")
	}
	if (*Inventory)(nil).WithHeldAs() != nil {
		t.Error("nil inventory")
	}
}
