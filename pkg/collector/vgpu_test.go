package collector

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
)

// A container holding replica N of a time-sliced GPU ("GPU-…::N") carries
// vgpu="N" in dcgm naming with VirtualGPUs, as dcgm-exporter's
// --kubernetes-virtual-gpus writes it.
func TestJoinCarriesVGPU(t *testing.T) {
	t.Parallel()
	src := newFakeSource(1)
	uuid := src.inv.Entities[0].UUID
	ctr := func(pod, id string) *podresourcesv1.PodResources {
		return &podresourcesv1.PodResources{Name: pod, Namespace: "ml", Containers: []*podresourcesv1.ContainerResources{{
			Name:    "main",
			Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{id}}},
		}}}
	}
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{ctr("a", uuid+"::3"), ctr("b", uuid+"::7")}}
	table := podresources.NewTable(resp, []string{"nvidia.com/gpu"}, podresources.IDTypeUID)
	cfg := Config{Interval: time.Hour, Timeout: time.Second, Fields: testFields(t), Naming: exposition.NamingDCGM,
		DCGM: exposition.DCGMOptions{VirtualGPUs: true}}
	c, err := New(cfg, src, staticAttribution{table}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	text := string(c.Page().Text)
	for _, want := range []string{`namespace="ml",pod="a",vgpu="3"}`, `namespace="ml",pod="b",vgpu="7"}`} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %s:\n%s", want, text)
		}
	}
}
