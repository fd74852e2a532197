package podresources

import (
	"testing"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/resourceslices"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// fakeSlices is a node's ResourceSlices as NVIDIA's DRA driver publishes them
// (attributes: GpuInfo.Attributes, CommonAttributesMig and
// MigDeviceInfo.GetDevice in cmd/gpu-kubelet-plugin,
// NVIDIA/k8s-dra-driver-gpu@22407113; pool named after the node).
type fakeSlices map[resourceslices.Key]resourceslices.Device

func (s fakeSlices) Lookup(k resourceslices.Key) (resourceslices.Device, bool) {
	d, ok := s[k]
	return d, ok
}

const (
	draGPU0 = "GPU-838f60d9-651f-9166-ea42-f9da674a6947" // minor 1, index 0
	draGPU1 = "GPU-2927d07e-3fe9-7904-9e08-b08b82d9a37d" // minor 0, index 1
	draMIG  = "MIG-e07a497d-1bb6-5a42-b670-1c33bf55ab6e"
)

func draKeyOf(dev string) resourceslices.Key {
	return resourceslices.Key{Driver: "gpu.nvidia.com", Pool: "node-a", Device: dev}
}

func TestTableDRA(t *testing.T) {
	t.Parallel()
	sl := fakeSlices{
		draKeyOf("gpu-1"): {Type: "gpu", UUID: draGPU0},
		// static MIG on GPU index 1 (minor 0): has a uuid
		draKeyOf("gpu-0-mig-1g5gb-19-0"): {Type: "mig", UUID: draMIG, ParentUUID: draGPU1, Profile: "1g.5gb"},
		// dynamic MIG (no uuid), a +me profile, placement start 6
		draKeyOf("gpu-0-mig-1g5gb-me-20-6"): {Type: "mig", ParentUUID: draGPU1, Profile: "1g.5gb+me"},
	}
	inv := &source.Inventory{Entities: []source.Entity{
		{Kind: source.GPU, GPU: 0, UUID: draGPU0, Device: "nvidia1"},
		{Kind: source.GPU, GPU: 1, UUID: draGPU1, Device: "nvidia0"},
		{Kind: source.GPUInstance, GPU: 1, UUID: draGPU1, Device: "nvidia0", GPUInstance: 5, ComputeInstance: 0,
			MIGProfile: "1g.5gb", MIGUUID: draMIG, MIGPlacementStart: 0, MIGPlacementKnown: true},
		{Kind: source.GPUInstance, GPU: 1, UUID: draGPU1, Device: "nvidia0", GPUInstance: 13, ComputeInstance: 0,
			MIGProfile: "1g.5gb+me", MIGUUID: "MIG-00000000-1111-2222-3333-444444444444", MIGPlacementStart: 6, MIGPlacementKnown: true},
	}}
	share := "2f0b6a83-0c1b-4c1e-9d0e-1f2a3b4c5d6e"
	claim := func(ns, pod, claim string, devs ...*podresourcesv1.ClaimResource) *podresourcesv1.PodResources {
		return &podresourcesv1.PodResources{Namespace: ns, Name: pod, Containers: []*podresourcesv1.ContainerResources{{
			Name: "main", DynamicResources: []*podresourcesv1.DynamicResource{{ClaimName: claim, ClaimNamespace: ns, ClaimResources: devs}},
		}}}
	}
	cr := func(dev string, shareID *string) *podresourcesv1.ClaimResource {
		return &podresourcesv1.ClaimResource{DriverName: "gpu.nvidia.com", PoolName: "node-a", DeviceName: dev, ShareId: shareID}
	}
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		claim("a", "whole", "gpu", cr("gpu-1", nil)),
		claim("a", "static", "mig", cr("gpu-0-mig-1g5gb-19-0", nil)),
		claim("b", "dynamic", "mig-me", cr("gpu-0-mig-1g5gb-me-20-6", nil)),
		claim("b", "shared", "gpu-share", cr("gpu-1", &share)),
		claim("c", "unknown", "mig", cr("gpu-0-mig-2g10gb-14-2", nil)),
	}}

	tab := NewTableDRA(resp, DefaultResourceNames(), IDTypeAuto, sl)
	pods := func(e *source.Entity) []string {
		var out []string
		for _, h := range tab.Holders(e) {
			out = append(out, h.Namespace+"/"+h.Pod)
		}
		return out
	}
	want := [][]string{{"a/whole", "b/shared"}, nil, {"a/static"}, {"b/dynamic"}}
	for i := range inv.Entities {
		if got := pods(&inv.Entities[i]); !equalStrings(got, want[i]) {
			t.Errorf("entity %d holders %q, want %q", i, got, want[i])
		}
	}
	for _, h := range tab.Holders(&inv.Entities[0]) {
		if h.Shared != (h.Pod == "shared") {
			t.Errorf("holder %s shared=%v", h.Pod, h.Shared)
		}
	}
	if got := tab.UnmatchedCounts(inv); got != (UnmatchedCounts{NoResourceSlice: 1}) {
		t.Errorf("unmatched %+v %q, want the unknown MIG device as no_resourceslice", got, tab.Unmatched(inv))
	}
	claims := tab.Claims()
	if len(claims) != 5 || claims[0].Name != "gpu" || !claims[0].Resolved || claims[0].Slice.UUID != draGPU0 {
		t.Fatalf("claims %+v", claims)
	}
	if c := claims[len(claims)-1]; c.Namespace != "c" || c.Resolved {
		t.Errorf("unknown claim %+v resolved", c)
	}

	if got := tab.Holders(&inv.Entities[2]); len(got) != 1 || got[0].DRA != (DRAClaim{Namespace: "a", Name: "mig",
		Driver: "gpu.nvidia.com", Pool: "node-a", Device: "gpu-0-mig-1g5gb-19-0", MIGProfile: "1g.5gb", MIGUUID: draMIG}) {
		t.Errorf("static MIG holder's claim %+v", got)
	}
	if got := tab.Holders(&inv.Entities[3]); len(got) != 1 || got[0].DRA.MIGProfile != "1g.5gb+me" || got[0].DRA.MIGUUID != "" {
		t.Errorf("dynamic MIG holder's claim %+v, want profile 1g.5gb+me and no MIG uuid", got)
	}
	if got := tab.Holders(&inv.Entities[0]); len(got) != 2 || got[1].DRA.ShareID != share || got[0].DRA.MIGProfile != "" {
		t.Errorf("whole GPU holders' claims %+v", got)
	}

	// Without the slices (no API access): the whole GPU still resolves,
	// by minor number; every MIG device is no_resourceslice.
	tab = NewTableDRA(resp, DefaultResourceNames(), IDTypeAuto, nil)
	if got := pods(&inv.Entities[0]); !equalStrings(got, []string{"a/whole", "b/shared"}) {
		t.Errorf("without slices, GPU minor 1 holders %q", got)
	}
	if got := tab.UnmatchedCounts(inv); got != (UnmatchedCounts{NoResourceSlice: 3}) {
		t.Errorf("without slices unmatched %+v, want 3 no_resourceslice", got)
	}
}

// A ResourceSlice change that alters what a claim's device is, with the
// kubelet's answer unchanged, makes a different table, so that the client
// publishes it.
func TestTableDRAEqualSeesSliceChanges(t *testing.T) {
	t.Parallel()
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{{
		Namespace: "a", Name: "p", Containers: []*podresourcesv1.ContainerResources{{Name: "main",
			DynamicResources: []*podresourcesv1.DynamicResource{{ClaimName: "c", ClaimNamespace: "a",
				ClaimResources: []*podresourcesv1.ClaimResource{
					{DriverName: "gpu.nvidia.com", PoolName: "node-a", DeviceName: "gpu-1"},
					{DriverName: "gpu.nvidia.com", PoolName: "node-a", DeviceName: "gpu-0-mig-1g5gb-19-0"},
				}}}}}}}}
	base := fakeSlices{
		draKeyOf("gpu-1"):                {Type: "gpu", UUID: draGPU0, ProductName: "NVIDIA A100-SXM4-40GB"},
		draKeyOf("gpu-0-mig-1g5gb-19-0"): {Type: "mig", UUID: draMIG, ParentUUID: draGPU1, Profile: "1g.5gb"},
	}
	changed := func(k resourceslices.Key, f func(*resourceslices.Device)) fakeSlices {
		out := fakeSlices{}
		for kk, d := range base {
			if kk == k {
				f(&d)
			}
			out[kk] = d
		}
		return out
	}
	same := NewTableDRA(resp, DefaultResourceNames(), IDTypeAuto, base)
	if !same.Equal(NewTableDRA(resp, DefaultResourceNames(), IDTypeAuto, base)) {
		t.Fatal("two tables of the same answer and slices differ")
	}
	for name, sl := range map[string]DRADevices{
		"MIG uuid":     changed(draKeyOf("gpu-0-mig-1g5gb-19-0"), func(d *resourceslices.Device) { d.UUID = "" }),
		"product name": changed(draKeyOf("gpu-1"), func(d *resourceslices.Device) { d.ProductName = "NVIDIA H100" }),
		"slice gone":   fakeSlices{draKeyOf("gpu-1"): base[draKeyOf("gpu-1")]},
		"no slices":    nil,
	} {
		if same.Equal(NewTableDRA(resp, DefaultResourceNames(), IDTypeAuto, sl)) {
			t.Errorf("%s: the tables are Equal", name)
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
