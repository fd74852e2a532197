package podresources

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// testInventory: GPU 0 (nvidia0) whole; GPU 1 (nvidia1) in MIG mode with
// instances 1 and 2; an NVSwitch.
func testInventory() *source.Inventory {
	return &source.Inventory{Entities: []source.Entity{
		{Kind: source.GPU, GPU: 0, UUID: uuid0, Device: "nvidia0", ComputeInstance: -1},
		{Kind: source.GPU, GPU: 1, UUID: uuid1, Device: "nvidia1", ComputeInstance: -1},
		{Kind: source.GPUInstance, GPU: 1, UUID: uuid1, Device: "nvidia1", GPUInstance: 1, ComputeInstance: -1, MIGUUID: mig0, MIGProfile: "3g.40gb"},
		{Kind: source.GPUInstance, GPU: 1, UUID: uuid1, Device: "nvidia1", GPUInstance: 2, ComputeInstance: 0, MIGUUID: mig1, MIGProfile: "3g.40gb"},
		{Kind: source.NVSwitch, ID: 0, ComputeInstance: -1},
	}}
}

type ctr struct {
	ns, pod, name string
	devices       map[string][]string // resource -> ids
	claims        []*podresourcesv1.ClaimResource
}

func listResponse(ctrs ...ctr) *podresourcesv1.ListPodResourcesResponse {
	resp := &podresourcesv1.ListPodResourcesResponse{}
	pods := map[[2]string]*podresourcesv1.PodResources{}
	for _, c := range ctrs {
		key := [2]string{c.ns, c.pod}
		p := pods[key]
		if p == nil {
			p = &podresourcesv1.PodResources{Namespace: c.ns, Name: c.pod}
			pods[key] = p
			resp.PodResources = append(resp.PodResources, p)
		}
		cr := &podresourcesv1.ContainerResources{Name: c.name}
		for _, res := range sortedKeysOf(c.devices) {
			cr.Devices = append(cr.Devices, &podresourcesv1.ContainerDevices{ResourceName: res, DeviceIds: c.devices[res]})
		}
		if len(c.claims) > 0 {
			cr.DynamicResources = []*podresourcesv1.DynamicResource{{ClaimName: "claim", ClaimNamespace: c.ns, ClaimResources: c.claims}}
		}
		p.Containers = append(p.Containers, cr)
	}
	return resp
}

func sortedKeysOf(m map[string][]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func gpus(ids ...string) map[string][]string { return map[string][]string{"nvidia.com/gpu": ids} }

func holder(ns, pod, container, resource string, shared bool) Holder {
	return Holder{Namespace: ns, Pod: pod, Container: container, Resource: resource, Shared: shared}
}

// replica is a holder of replica vgpu of a shared device, in a form whose
// replicas are not counted (GKE's /vgpuN).
func replica(ns, pod, container, resource, vgpu string) Holder {
	return Holder{Namespace: ns, Pod: pod, Container: container, Resource: resource, Shared: true, VGPU: vgpu}
}

// replicas is a holder of n "::N" replicas of a device shared by NVIDIA's
// device plugin, the lowest being vgpu.
func replicas(ns, pod, container, resource, vgpu string, n int) Holder {
	h := replica(ns, pod, container, resource, vgpu)
	h.Replicas = n
	return h
}

func TestTableHolders(t *testing.T) {
	t.Parallel()
	inv := testInventory()
	gpu0, gpu1, gi1, gi2, nvswitch := &inv.Entities[0], &inv.Entities[1], &inv.Entities[2], &inv.Entities[3], &inv.Entities[4]
	gpuLink := *gpu0
	gpuLink.Kind, gpuLink.Link = source.NVLink, 5
	switchPort := source.Entity{Kind: source.NVLink, Parent: source.NVSwitch, GPU: -1, ID: 1, Link: 5}
	const gpuRes, sharedRes, migRes = "nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-3g.40gb"
	draGPU := func(name string, share *string) *podresourcesv1.ClaimResource {
		return &podresourcesv1.ClaimResource{DriverName: "gpu.nvidia.com", PoolName: "node-a", DeviceName: name, ShareId: share}
	}
	draHolder := func(pod, dev, share string) Holder {
		h := holder("ml", pod, "main", "gpu.nvidia.com", share != "")
		h.DRA = DRAClaim{Namespace: "ml", Name: "claim", Driver: "gpu.nvidia.com", Pool: "node-a", Device: dev, ShareID: share}
		return h
	}
	tests := []struct {
		name   string
		idType IDType
		resp   *podresourcesv1.ListPodResourcesResponse
		entity *source.Entity
		want   []Holder
	}{
		{"gpu uuid", IDTypeAuto, listResponse(ctr{"ml", "train", "main", gpus(uuid0), nil}), gpu0,
			[]Holder{holder("ml", "train", "main", gpuRes, false)}},
		{"gpu uuid other case", IDTypeAuto, listResponse(ctr{"ml", "train", "main", gpus("GPU-5FD4EE69-8D8F-2AD8-63D5-D3C6E7D5D4CC"), nil}), gpu0,
			[]Holder{holder("ml", "train", "main", gpuRes, false)}},
		{"uuid of another gpu", IDTypeAuto, listResponse(ctr{"ml", "train", "main", gpus(uuid1), nil}), gpu0, nil},
		{"index id", IDTypeUID, listResponse(ctr{"ml", "train", "main", gpus("0"), nil}), gpu0,
			[]Holder{holder("ml", "train", "main", gpuRes, false)}},
		{"device name", IDTypeDeviceName, listResponse(ctr{"ml", "train", "main", gpus("nvidia0"), nil}), gpu0,
			[]Holder{holder("ml", "train", "main", gpuRes, false)}},
		{"gke time-sharing", IDTypeAuto, listResponse(
			ctr{"ml", "a", "main", gpus("nvidia0/vgpu0"), nil},
			ctr{"ml", "b", "main", gpus("nvidia0/vgpu1"), nil}), gpu0,
			[]Holder{replica("ml", "a", "main", gpuRes, "0"), replica("ml", "b", "main", gpuRes, "1")}},
		{"time-sliced gpu shared by 3 pods", IDTypeAuto, listResponse(
			ctr{"team-b", "infer", "server", map[string][]string{sharedRes: {uuid0 + "::2"}}, nil},
			ctr{"team-a", "notebook", "jupyter", map[string][]string{sharedRes: {uuid0 + "::0"}}, nil},
			ctr{"team-a", "batch", "worker", map[string][]string{sharedRes: {uuid0 + "::1"}}, nil}), gpu0,
			[]Holder{replicas("team-a", "batch", "worker", sharedRes, "1", 1), replicas("team-a", "notebook", "jupyter", sharedRes, "0", 1),
				replicas("team-b", "infer", "server", sharedRes, "2", 1)}},
		{"two replicas in one container give one holder", IDTypeAuto, listResponse(
			ctr{"ml", "train", "main", map[string][]string{sharedRes: {uuid0 + "::10", uuid0 + "::9"}}, nil}), gpu0,
			[]Holder{replicas("ml", "train", "main", sharedRes, "9", 2)}}, // the lowest replica, and both counted
		{"same container by uuid and index merges", IDTypeAuto, listResponse(
			ctr{"ml", "train", "main", map[string][]string{"nvidia.com/gpu": {uuid0}, "example.com/gpu": {"0"}}, nil}), gpu0,
			[]Holder{holder("ml", "train", "main", "example.com/gpu", false)}},
		{"several containers of one pod", IDTypeAuto, listResponse(
			ctr{"ml", "train", "sidecar", gpus(uuid0), nil},
			ctr{"ml", "train", "main", gpus(uuid0), nil}), gpu0,
			[]Holder{holder("ml", "train", "main", gpuRes, false), holder("ml", "train", "sidecar", gpuRes, false)}},
		{"mig uuid attributes its instance", IDTypeAuto, listResponse(
			ctr{"ml", "a", "main", map[string][]string{migRes: {mig0}}, nil},
			ctr{"ml", "b", "main", map[string][]string{migRes: {mig1}}, nil}), gi1,
			[]Holder{holder("ml", "a", "main", migRes, false)}},
		{"mig uuid attributes the other instance", IDTypeAuto, listResponse(
			ctr{"ml", "a", "main", map[string][]string{migRes: {mig0}}, nil},
			ctr{"ml", "b", "main", map[string][]string{migRes: {mig1}}, nil}), gi2,
			[]Holder{holder("ml", "b", "main", migRes, false)}},
		{"mig ids do not attribute the parent gpu", IDTypeAuto, listResponse(
			ctr{"ml", "a", "main", map[string][]string{migRes: {mig0, "MIG-" + uuid1 + "/2/0", "nvidia1/gi1"}}, nil}), gpu1, nil},
		{"gpu ids do not attribute its mig instances", IDTypeAuto, listResponse(
			ctr{"ml", "a", "main", gpus(uuid1, "1", "nvidia1"), nil}), gi1, nil},
		{"legacy mig exact compute instance", IDTypeAuto, listResponse(
			ctr{"ml", "a", "main", map[string][]string{migRes: {"MIG-" + uuid1 + "/2/0"}}, nil}), gi2,
			[]Holder{holder("ml", "a", "main", migRes, false)}},
		{"legacy mig other compute instance", IDTypeAuto, listResponse(
			ctr{"ml", "a", "main", map[string][]string{migRes: {"MIG-" + uuid1 + "/2/1"}}, nil}), gi2, nil},
		{"legacy mig whole instance matches any ci", IDTypeAuto, listResponse(
			ctr{"ml", "a", "main", map[string][]string{migRes: {"MIG-" + uuid1 + "/1/0"}}, nil}), gi1,
			[]Holder{holder("ml", "a", "main", migRes, false)}},
		{"gke mig", IDTypeDeviceName, listResponse(
			ctr{"ml", "a", "main", gpus("nvidia1/gi2"), nil},
			ctr{"ml", "b", "main", gpus("nvidia1/gi1/vgpu0"), nil}), gi1,
			[]Holder{replica("ml", "b", "main", gpuRes, "0")}},
		{"mig uuid replica", IDTypeAuto, listResponse(
			ctr{"ml", "a", "main", map[string][]string{migRes: {mig0 + "::0"}}, nil},
			ctr{"ml", "b", "main", map[string][]string{migRes: {mig0 + "::1"}}, nil}), gi1,
			[]Holder{replicas("ml", "a", "main", migRes, "0", 1), replicas("ml", "b", "main", migRes, "1", 1)}},
		{"dra gpu", IDTypeAuto, listResponse(
			ctr{"ml", "a", "main", nil, []*podresourcesv1.ClaimResource{draGPU("gpu-0", nil)}}), gpu0,
			[]Holder{draHolder("a", "gpu-0", "")}},
		{"dra shared gpu", IDTypeUID, listResponse(
			ctr{"ml", "a", "main", nil, []*podresourcesv1.ClaimResource{draGPU("gpu-1", proto.String("s1"))}},
			ctr{"ml", "b", "main", nil, []*podresourcesv1.ClaimResource{draGPU("gpu-1", proto.String("s2"))}}), gpu1,
			[]Holder{draHolder("a", "gpu-1", "s1"), draHolder("b", "gpu-1", "s2")}},
		{"dra other driver ignored", IDTypeAuto, listResponse(
			ctr{"ml", "a", "main", nil, []*podresourcesv1.ClaimResource{{DriverName: "example.com", DeviceName: "gpu-0"}}}), gpu0, nil},
		{"unknown resource ignored", IDTypeAuto, listResponse(
			ctr{"ml", "a", "main", map[string][]string{"rdma/hca": {uuid0}}, nil}), gpu0, nil},
		{"malformed id ignored", IDTypeAuto, listResponse(
			ctr{"ml", "a", "main", gpus("GPU-bogus", uuid0), nil}), gpu0,
			[]Holder{holder("ml", "a", "main", gpuRes, false)}},
		{"nvswitch holds nothing", IDTypeAuto, listResponse(ctr{"ml", "a", "main", gpus(uuid0, "0"), nil}), nvswitch, nil},
		{"gpu link held with its gpu", IDTypeAuto, listResponse(ctr{"ml", "a", "main", gpus(uuid0), nil}), &gpuLink,
			[]Holder{holder("ml", "a", "main", gpuRes, false)}},
		{"switch port holds nothing", IDTypeAuto, listResponse(ctr{"ml", "a", "main", gpus(uuid0, "0", "nvidia0"), nil}), &switchPort, nil},
		{"empty response", IDTypeAuto, &podresourcesv1.ListPodResourcesResponse{}, gpu0, nil},
		{"nil response", IDTypeAuto, nil, gpu0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tab := NewTable(tt.resp, append(DefaultResourceNames(), "example.com/gpu"), tt.idType)
			got := tab.Holders(tt.entity)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Holders(%s)\n got %+v\nwant %+v", tt.entity.Key(), got, tt.want)
			}
		})
	}
}

func TestTableNil(t *testing.T) {
	t.Parallel()
	var tab *Table
	inv := testInventory()
	if hs := tab.Holders(&inv.Entities[0]); hs != nil {
		t.Errorf("nil table Holders = %v", hs)
	}
	if u := tab.Unmatched(inv); u != nil {
		t.Errorf("nil table Unmatched = %v", u)
	}
	if tab.Len() != 0 || !tab.Equal(&Table{}) {
		t.Error("nil table is not empty")
	}
	full := NewTable(listResponse(ctr{"ml", "a", "main", gpus(uuid0), nil}), DefaultResourceNames(), IDTypeAuto)
	if hs := full.Holders(nil); hs != nil {
		t.Errorf("Holders(nil) = %v", hs)
	}
}

func TestTableUnmatched(t *testing.T) {
	t.Parallel()
	unknownGPU := "GPU-99999999-8d8f-2ad8-63d5-d3c6e7d5d4cc"
	resp := listResponse(
		ctr{"ml", "a", "main", gpus(uuid0, uuid0+"::1", "1", "nvidia1", "7", "nvidia9", unknownGPU, "GPU-bogus", "0:1"), nil},
		ctr{"ml", "b", "main", map[string][]string{
			"nvidia.com/mig-3g.40gb": {mig0, "MIG-" + uuid1 + "/2/0", "MIG-" + uuid1 + "/2/1", "MIG-" + uuid1 + "/1/5", "nvidia1/gi2", "nvidia1/gi9"},
		}, []*podresourcesv1.ClaimResource{{DriverName: "gpu.nvidia.com", DeviceName: "gpu-1-mig-3g40gb-9-0"}}},
		ctr{"ml", "c", "main", gpus(unknownGPU), nil},
	)
	tab := NewTable(resp, DefaultResourceNames(), IDTypeAuto)
	want := []string{
		"0:1", "7", "GPU-99999999-8d8f-2ad8-63d5-d3c6e7d5d4cc", "GPU-bogus",
		"MIG-" + uuid1 + "/2/1", // instance 2 is reported with compute instance 0 only
		"gpu-1-mig-3g40gb-9-0", "nvidia1/gi9", "nvidia9",
	}
	slices.Sort(want)
	if got := tab.Unmatched(testInventory()); !slices.Equal(got, want) {
		t.Errorf("Unmatched\n got %q\nwant %q", got, want)
	}
	all := tab.Unmatched(nil)
	if len(all) != 16 {
		t.Errorf("Unmatched(nil) = %d ids %q, want all 16", len(all), all)
	}
}

func TestTableEqual(t *testing.T) {
	t.Parallel()
	a := listResponse(ctr{"ml", "a", "main", gpus(uuid0), nil}, ctr{"ml", "b", "main", gpus(uuid1), nil})
	b := listResponse(ctr{"ml", "b", "main", gpus(uuid1), nil}, ctr{"ml", "a", "main", gpus(uuid0), nil})
	c := listResponse(ctr{"ml", "b", "main", gpus(uuid0), nil}, ctr{"ml", "a", "main", gpus(uuid1), nil})
	withOther := listResponse(ctr{"ml", "b", "main", gpus(uuid1), nil}, ctr{"ml", "a", "main", gpus(uuid0), nil},
		ctr{"net", "x", "main", map[string][]string{"rdma/hca": {"mlx5_0"}}, nil})
	names := DefaultResourceNames()
	ta := NewTable(a, names, IDTypeAuto)
	if !ta.Equal(NewTable(b, names, IDTypeAuto)) {
		t.Error("pod order changed equality")
	}
	if !ta.Equal(NewTable(withOther, names, IDTypeAuto)) {
		t.Error("an ignored resource changed equality")
	}
	if ta.Equal(NewTable(c, names, IDTypeAuto)) {
		t.Error("swapped GPUs compare equal")
	}
	if ta.Equal(&Table{}) || !(&Table{}).Equal(NewTable(nil, names, IDTypeAuto)) {
		t.Error("empty table equality")
	}
}

func TestMatchResource(t *testing.T) {
	t.Parallel()
	names := DefaultResourceNames()
	for name, want := range map[string]bool{
		"nvidia.com/gpu":                true,
		"nvidia.com/gpu.shared":         true,
		"nvidia.com/mig-1g.10gb":        true,
		"nvidia.com/mig-3g.40gb.shared": true,
		"gpu.nvidia.com":                true,
		"nvidia.com/gpu2":               false,
		"nvidia.com/mig":                false,
		"rdma/hca":                      false,
		"":                              false,
	} {
		if got := MatchResource(names, name); got != want {
			t.Errorf("MatchResource(%q) = %v, want %v", name, got, want)
		}
	}
}
