package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// TestSplitGPUInstanceHeldThroughEachComputeInstance is issue 30's H200:
// GPU instance 2 (3g.71gb) split into compute instances 0 (1c.3g.71gb) and
// 1 (2c.3g.71gb), each a MIG device with its own UUID, each handed to a
// pod by the device plugin. Both pods get the instance's series, nothing
// is unmatched. Before the fix the pod on compute instance 1 got no series
// and was counted unmatched_devices{reason="unknown_gpu"}.
func TestSplitGPUInstanceHeldThroughEachComputeInstance(t *testing.T) {
	t.Parallel()
	const (
		gpuUUID = "GPU-2a2b3c4d-0000-1111-2222-333344445555"
		ciZero  = "MIG-6e4d9b17-1d7b-5b2a-8a52-3a1f0c1d2e01"
		ciOne   = "MIG-6e4d9b17-1d7b-5b2a-8a52-3a1f0c1d2e02"
	)
	gpu := source.Entity{Kind: source.GPU, GPU: 0, UUID: gpuUUID, Device: "nvidia0", Model: "NVIDIA H200",
		GPUInstance: -1, ComputeInstance: -1}
	gi := gpu
	gi.Kind, gi.GPUInstance, gi.MIGProfile = source.GPUInstance, 2, "3g.71gb"
	src := newFakeSource(0)
	src.inv = &source.Inventory{DriverVersion: "570.124.06", Entities: []source.Entity{gpu, gi},
		MIGDevices: []source.MIGDevice{
			{GPU: 0, GPUInstance: 2, ComputeInstance: 0, Profile: "1c.3g.71gb", UUID: ciZero},
			{GPU: 0, GPUInstance: 2, ComputeInstance: 1, Profile: "2c.3g.71gb", UUID: ciOne},
		}}
	pod := func(name, id string) *podresourcesv1.PodResources {
		return &podresourcesv1.PodResources{Name: name, Namespace: "ml", Containers: []*podresourcesv1.ContainerResources{{
			Name:    "main",
			Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/mig-1c.3g.71gb", DeviceIds: []string{id}}},
		}}}
	}
	for _, tc := range []struct {
		name       string
		ids        [2]string
		wantShared string
	}{
		{"MIG UUIDs", [2]string{ciZero, ciOne}, "true"},
		{"legacy MIG-GPU ids", [2]string{"MIG-" + gpuUUID + "/2/0", "MIG-" + gpuUUID + "/2/1"}, "true"},
		{"one pod on both compute instances", [2]string{ciZero, ciZero}, "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
				pod("on-ci0", tc.ids[0]), pod("on-ci1", tc.ids[1])}}
			if tc.ids[0] == tc.ids[1] {
				resp.PodResources = []*podresourcesv1.PodResources{pod("on-ci0", ciZero)}
				resp.PodResources[0].Containers[0].Devices = append(resp.PodResources[0].Containers[0].Devices,
					&podresourcesv1.ContainerDevices{ResourceName: "nvidia.com/mig-2c.3g.71gb", DeviceIds: []string{ciOne}})
			}
			table := podresources.NewTable(resp, []string{"nvidia.com/gpu", "nvidia.com/mig-*"}, podresources.IDTypeUID)
			c, _ := newTestCollector(t, src, staticAttribution{table}, time.Second)
			if err := c.Collect(context.Background()); err != nil {
				t.Fatal(err)
			}
			text := string(c.Page().Text)
			pods := []string{"on-ci0", "on-ci1"}
			if tc.ids[0] == tc.ids[1] {
				pods = pods[:1]
			}
			for _, p := range pods {
				want := `gpu_pod_allocation_info{gpu="0",uuid="` + gpuUUID + `",device="nvidia0",model="NVIDIA H200",gpu_instance="2",mig_profile="3g.71gb",namespace="ml",pod="` + p + `",container="main",shared="` + tc.wantShared + `"} 1`
				if !strings.Contains(text, want) {
					t.Errorf("page lacks %s:\n%s", want, text)
				}
			}
			if n := strings.Count(text, "gpu_pod_allocation_info{"); n != len(pods) {
				t.Errorf("%d allocations, want %d:\n%s", n, len(pods), text)
			}
			for _, reason := range []string{podresources.UnmatchedUnknownGPU, podresources.UnmatchedMalformed, podresources.UnmatchedUnsupportedForm} {
				if got := testutil.ToFloat64(c.m.unmatched.WithLabelValues(reason)); got != 0 {
					t.Errorf("unmatched_devices{reason=%q} = %v, want 0", reason, got)
				}
			}
		})
	}
}
