package collector

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// swapAttribution is an Attribution whose table the test swaps.
type swapAttribution struct {
	p atomic.Pointer[podresources.Table]
}

func (s *swapAttribution) Table() *podresources.Table { return s.p.Load() }

// replicaIDs is what NVIDIA's k8s-device-plugin advertises a GPU shared
// with n replicas as: "<uuid>::<i>" for i in 0..n-1
// (internal/rm/device_map.go, NVIDIA/k8s-device-plugin@1b826acc).
func replicaIDs(uuid string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = uuid + "::" + strconv.Itoa(i)
	}
	return out
}

// The join hands each holding the replicas its holder holds and the
// replicas its GPU is advertised as, and rebuilds them when only the
// allocatable count changes.
func TestJoinReplicas(t *testing.T) {
	t.Parallel()
	src := newFakeSource(2)
	gpu0, gpu1 := src.inv.Entities[0].UUID, src.inv.Entities[1].UUID
	ctr := func(pod string, ids ...string) *podresourcesv1.PodResources {
		return &podresourcesv1.PodResources{Name: pod, Namespace: "ml", Containers: []*podresourcesv1.ContainerResources{{
			Name:    "main",
			Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: ids}},
		}}}
	}
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		ctr("a", gpu0+"::0"), ctr("b", gpu0+"::1", gpu0+"::3"), ctr("whole", gpu1),
	}}
	names := []string{"nvidia.com/gpu"}
	base := podresources.NewTable(resp, names, podresources.IDTypeUID)
	missing := "GPU-99999999-8888-7777-6666-555544443333" // allocatable, not in the inventory
	attr := &swapAttribution{}
	attr.p.Store(base.WithAllocatable(append(append(replicaIDs(gpu0, 4), gpu1), replicaIDs(missing, 2)...), podresources.IDTypeUID))
	c, _ := newTestCollector(t, src, attr, time.Second)
	collect := func() string {
		t.Helper()
		if err := c.Collect(context.Background()); err != nil {
			t.Fatal(err)
		}
		return string(c.Page().Text)
	}
	text := collect()
	for _, want := range []string{
		`gpu_shared_replicas{gpu="0",uuid="` + gpu0 + `",device="nvidia0",model="NVIDIA H100 80GB HBM3"} 4`,
		`gpu_container_shared_replicas{gpu="0",uuid="` + gpu0 + `",device="nvidia0",model="NVIDIA H100 80GB HBM3",namespace="ml",pod="a",container="main"} 1`,
		`gpu_container_shared_replicas{gpu="0",uuid="` + gpu0 + `",device="nvidia0",model="NVIDIA H100 80GB HBM3",namespace="ml",pod="b",container="main"} 2`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %s:\n%s", want, text)
		}
	}
	for _, unwanted := range []string{`gpu_shared_replicas{gpu="1"`, `gpu_container_shared_replicas{gpu="1"`, missing} {
		if strings.Contains(text, unwanted) {
			t.Errorf("page has %s:\n%s", unwanted, text)
		}
	}
	if n := strings.Count(text, "\ngpu_shared_replicas{"); n != 1 {
		t.Errorf("%d gpu_shared_replicas series for one shared GPU with two holders, want 1", n)
	}

	// The plugin's config changed: 8 replicas, same allocations.
	attr.p.Store(base.WithAllocatable(replicaIDs(gpu0, 8), podresources.IDTypeUID))
	if text := collect(); !strings.Contains(text, `model="NVIDIA H100 80GB HBM3"} 8`) {
		t.Errorf("page kept the old replica count:\n%s", text)
	}

	// A kubelet without GetAllocatableResources: no device count, the
	// holders' counts stay.
	attr.p.Store(base)
	text = collect()
	if strings.Contains(text, "gpu_shared_replicas{") {
		t.Errorf("gpu_shared_replicas without allocatable devices:\n%s", text)
	}
	if !strings.Contains(text, `gpu_container_shared_replicas{gpu="0"`) {
		t.Errorf("holders' replicas dropped without allocatable devices:\n%s", text)
	}
}

// A container holding replicas of two compute instances' MIG devices of
// one GPU instance holds the instance's row once, with both replicas.
func TestHoldersThroughSumsReplicas(t *testing.T) {
	t.Parallel()
	const ci0, ci1 = "MIG-00000000-0000-0000-0000-0000000000c0", "MIG-00000000-0000-0000-0000-0000000000c1"
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{{
		Name: "a", Namespace: "ml", Containers: []*podresourcesv1.ContainerResources{{
			Name:    "main",
			Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/mig-1c.3g.40gb", DeviceIds: []string{ci0 + "::0", ci1 + "::1"}}},
		}},
	}}}
	table := podresources.NewTable(resp, []string{"nvidia.com/mig-*"}, podresources.IDTypeUID)
	views := []source.Entity{
		{Kind: source.GPUInstance, GPU: 0, GPUInstance: 1, ComputeInstance: 0, MIGUUID: ci0},
		{Kind: source.GPUInstance, GPU: 0, GPUInstance: 1, ComputeInstance: 1, MIGUUID: ci1},
	}
	hs := holdersThrough(table, nil, views)
	if len(hs) != 1 || hs[0].Replicas != 2 || !hs[0].Shared {
		t.Errorf("holdersThrough = %+v, want one shared holder of 2 replicas", hs)
	}
}
