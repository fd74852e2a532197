package collector

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
)

// BenchmarkCollect measures one whole collection (read of a fake source,
// join with a kubelet table holding half the GPUs, render) of the default
// field set on 16 GPUs, in each naming.
func BenchmarkCollect(b *testing.B) {
	for _, naming := range []exposition.Naming{exposition.NamingPrometheus, exposition.NamingDCGM} {
		b.Run(fmt.Sprint("naming=", naming), func(b *testing.B) {
			src := newFakeSource(16)
			resp := &podresourcesv1.ListPodResourcesResponse{}
			for i := 0; i < len(src.inv.Entities); i += 2 {
				resp.PodResources = append(resp.PodResources, &podresourcesv1.PodResources{
					Name: fmt.Sprint("pod-", i), Namespace: "ml",
					Containers: []*podresourcesv1.ContainerResources{{
						Name:    "main",
						Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{src.inv.Entities[i].UUID}}},
					}},
				})
			}
			table := podresources.NewTable(resp, []string{"nvidia.com/gpu"}, podresources.IDTypeUID)
			c, err := New(Config{Interval: time.Hour, Fields: fields.MustNew().Defaults(), Naming: naming},
				src, staticAttribution{table}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Collect(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
