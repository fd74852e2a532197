package podresources

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/sim/kubelet"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

const benchGPUs = 64

func benchUUID(i int) string { return fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", i, i) }

func benchInventory() *source.Inventory {
	inv := &source.Inventory{}
	for i := range benchGPUs {
		inv.Entities = append(inv.Entities, source.Entity{Kind: source.GPU, GPU: i, UUID: benchUUID(i), Device: fmt.Sprintf("nvidia%d", i), ComputeInstance: -1})
	}
	return inv
}

// benchPods: 64 pods. Exclusive: pod i holds GPU i. Shared: every pod holds
// a time-sliced replica of every GPU (64 holders per GPU).
func benchPods(shared bool) []kubelet.Pod {
	pods := make([]kubelet.Pod, benchGPUs)
	for i := range pods {
		ids := []string{benchUUID(i)}
		resource := "nvidia.com/gpu"
		if shared {
			resource = "nvidia.com/gpu.shared"
			ids = ids[:0]
			for g := range benchGPUs {
				ids = append(ids, fmt.Sprintf("%s::%d", benchUUID(g), i))
			}
		}
		pods[i] = kubelet.Pod{Namespace: "ns", Name: fmt.Sprintf("pod-%02d", i), Containers: []kubelet.Container{{
			Name: "main", Devices: []kubelet.Device{{Resource: resource, IDs: ids}},
		}}}
	}
	return pods
}

func benchServer(b *testing.B, pods []kubelet.Pod) *kubelet.Server {
	b.Helper()
	srv, err := kubelet.Start(filepath.Join(b.TempDir(), "kubelet.sock"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Stop)
	srv.SetPods(pods)
	return srv
}

// BenchmarkHolders is the scrape-time cost of attribution: one Table() load
// and a Holders lookup for each of 64 GPUs, 64 pods on the node.
func BenchmarkHolders(b *testing.B) {
	inv := benchInventory()
	for _, shared := range []bool{false, true} {
		name := "exclusive"
		if shared {
			name = "shared"
		}
		b.Run(name, func(b *testing.B) {
			srv := benchServer(b, benchPods(shared))
			cfg := DefaultConfig()
			cfg.Socket = srv.Path()
			c, err := New(cfg, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close() })
			if err := c.refresh(context.Background()); err != nil {
				b.Fatal(err)
			}
			want := 1
			if shared {
				want = benchGPUs
			}
			if got := len(c.Table().Holders(&inv.Entities[0])); got != want {
				b.Fatalf("holders = %d, want %d", got, want)
			}
			b.ReportAllocs()
			for b.Loop() {
				t := c.Table()
				for i := range inv.Entities {
					_ = t.Holders(&inv.Entities[i])
				}
			}
		})
	}
}

// BenchmarkDialAndList is the naive per-scrape baseline other exporters
// use: dial the kubelet socket, List, build the attribution, close.
func BenchmarkDialAndList(b *testing.B) {
	srv := benchServer(b, benchPods(false))
	inv := benchInventory()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		conn, err := grpc.NewClient("unix://"+srv.Path(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := podresourcesv1.NewPodResourcesListerClient(conn).List(cctx, &podresourcesv1.ListPodResourcesRequest{})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		t := NewTable(resp, DefaultResourceNames(), IDTypeAuto)
		for i := range inv.Entities {
			_ = t.Holders(&inv.Entities[i])
		}
		_ = conn.Close()
	}
}
