package collector

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
)

// TestVGPUAnnotationPlacesHolders: HAMi's device plugin gives a container
// the GPUs its scheduler wrote in the pod's hami.io/vgpu-devices-allocated
// annotation, whatever "GPU-<uuid>-<n>" ids the kubelet picked (HAMi issue
// 1741: a pod annotated with 8 GPUs whose kubelet ids named 3). With the
// pod informer the GPU series name the container on the annotated GPU;
// an annotation that names a GPU the node lacks, or no informer, leaves
// the kubelet's ids.
func TestVGPUAnnotationPlacesHolders(t *testing.T) {
	t.Parallel()
	src := newFakeSource(3)
	gpu := func(i int) string { return src.inv.Entities[i].UUID }
	// The kubelet counted slots of GPU 0 for train's main, and of GPU 1
	// for its sidecar; another pod, plain, holds a slot of GPU 1 and has
	// no annotation.
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		{Name: "train", Namespace: "ml", Containers: []*podresourcesv1.ContainerResources{
			{Name: "main", Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpu(0) + "-3"}}}},
			{Name: "log"},
			{Name: "sidecar", Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpu(1) + "-0"}}}},
		}},
		{Name: "plain", Namespace: "ml", Containers: []*podresourcesv1.ContainerResources{
			{Name: "main", Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpu(1) + "-1"}}}},
		}},
	}}
	table := podresources.NewTable(resp, []string{"nvidia.com/gpu"}, podresources.IDTypeUID)
	entity := func(i int) string {
		return `gpu="` + string(rune('0'+i)) + `",uuid="` + gpu(i) + `",device="nvidia` + string(rune('0'+i)) + `",model="NVIDIA H100 80GB HBM3"`
	}
	info := func(i int, pod, container string) string {
		return `gpu_pod_allocation_info{` + entity(i) + `,namespace="ml",pod="` + pod + `",container="` + container + `",`
	}
	// HAMi's current layout: one init container, then main, log, sidecar.
	annotated := func(main, sidecar string) []podlabels.StaticPod {
		return []podlabels.StaticPod{{Namespace: "ml", Name: "train", InitContainers: []string{"fetch"},
			Containers:  []string{"main", "log", "sidecar"},
			Annotations: map[string]string{"hami.io/vgpu-devices-allocated": ";" + main + ",NVIDIA,4096,25:;;" + sidecar + ",NVIDIA,1024,0:;"}},
			{Namespace: "ml", Name: "plain", Containers: []string{"main"}}}
	}
	for _, tc := range []struct {
		name      string
		info      PodInfo
		want, not []string
	}{
		{name: "the annotation places the containers", info: podlabels.NewStatic(annotated(gpu(2), gpu(0)), nil),
			want: []string{info(2, "train", "main"), info(0, "train", "sidecar"), info(1, "plain", "main"),
				`gpu_temperature_celsius{` + entity(2) + `,namespace="ml",pod="train",container="main"}`},
			not: []string{info(0, "train", "main"), info(1, "train", "sidecar")}},
		{name: "a GPU the node lacks: the kubelet's ids", info: podlabels.NewStatic(annotated(gpu(2), "GPU-ffffffff-0000-0000-0000-000000000000"), nil),
			want: []string{info(0, "train", "main"), info(1, "train", "sidecar")}, not: []string{info(2, "train", "main")}},
		{name: "no pod informer: the kubelet's ids",
			want: []string{info(0, "train", "main"), info(1, "train", "sidecar")}, not: []string{info(2, "train", "main")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Interval: time.Hour, Fields: testFields(t)}
			if tc.info != nil {
				cfg.PodInfo = tc.info
			}
			expectParts(t, collectText(t, cfg, src, staticAttribution{table}), tc.want, tc.not)
		})
	}
}

// collectText runs one collection of a new Collector and returns its page.
func collectText(t *testing.T, cfg Config, src *fakeSource, attr Attribution) string {
	t.Helper()
	c, err := New(cfg, src, attr, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	return string(c.Page().Text)
}

// expectParts checks that text holds each of want and none of not.
func expectParts(t *testing.T, text string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("page lacks %s\n%s", w, text)
		}
	}
	for _, n := range not {
		if strings.Contains(text, n) {
			t.Errorf("page has %s", n)
		}
	}
}
