package collector

import (
	"context"
	"strings"
	"testing"
	"time"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
)

// A container holding one time-sliced replica ("<UUID>::N") of a GPU
// nobody else holds reads shared="true" on gpu_pod_allocation_info: the
// GPU is shared by configuration, whatever the holder count. A whole GPU
// with one holder reads shared="false", and two holders of one GPU read
// shared="true". Kills a shared flag decided by holder count alone
// (issue 34).
func TestMutationSharedFlagNotFromHolderCountAlone(t *testing.T) {
	t.Parallel()
	src := newFakeSource(3)
	uuid := func(i int) string { return src.inv.Entities[i].UUID }
	ctr := func(pod string, ids ...string) *podresourcesv1.PodResources {
		return &podresourcesv1.PodResources{Name: pod, Namespace: "ml", Containers: []*podresourcesv1.ContainerResources{{
			Name: "main", Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: ids}},
		}}}
	}
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		ctr("replica", uuid(0)+"::3"), // the only holder of GPU 0, through a replica
		ctr("whole", uuid(1)),         // the only holder of GPU 1
		ctr("a", uuid(2)), ctr("b", uuid(2)),
	}}
	table := podresources.NewTable(resp, []string{"nvidia.com/gpu"}, podresources.IDTypeUID)
	c, _ := newTestCollector(t, src, staticAttribution{table}, time.Second)
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	text := string(c.Page().Text)
	for _, tc := range []struct {
		gpu, pod, shared string
	}{
		{"0", "replica", "true"},
		{"1", "whole", "false"},
		{"2", "a", "true"},
		{"2", "b", "true"},
	} {
		line := allocationLine(text, tc.gpu, tc.pod)
		if !strings.Contains(line, `shared="`+tc.shared+`"`) {
			t.Errorf("GPU %s pod %s: allocation %q, want shared=%q", tc.gpu, tc.pod, line, tc.shared)
		}
	}
}

// allocationLine is the gpu_pod_allocation_info line of gpu and pod, or "".
func allocationLine(text, gpu, pod string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, `gpu_pod_allocation_info{gpu="`+gpu+`"`) && strings.Contains(l, `pod="`+pod+`"`) {
			return l
		}
	}
	return ""
}
