// Package soak runs the collector through many collections while the pods
// holding the GPUs change every time, and checks that memory stays flat:
// label sets, targets and attribution tables of departed pods are released.
// `go test` runs a short version; `make soak` (SOAK_DURATION) a long one.
package soak

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/collector"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

type churningAttribution struct {
	t atomic.Pointer[podresources.Table]
}

func (c *churningAttribution) Table() *podresources.Table { return c.t.Load() }

// tableFor gives every GPU of inv a pod whose name is unique to round.
func tableFor(inv *source.Inventory, round int) *podresources.Table {
	resp := &podresourcesv1.ListPodResourcesResponse{}
	for i, e := range inv.Entities {
		if e.Kind != source.GPU {
			continue
		}
		resp.PodResources = append(resp.PodResources, &podresourcesv1.PodResources{
			Namespace: fmt.Sprintf("ns-%d", i%8),
			Name:      fmt.Sprintf("job-%d-%d", round, i),
			Containers: []*podresourcesv1.ContainerResources{{
				Name:    "main",
				Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{e.UUID}}},
			}},
		})
	}
	return podresources.NewTable(resp, podresources.DefaultResourceNames(), podresources.IDTypeAuto)
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestPodChurnKeepsHeapFlat(t *testing.T) {
	duration := 3 * time.Second
	if testing.Short() {
		duration = time.Second
	}
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SOAK_DURATION=%q: %v", v, err)
		}
		duration = d
	}
	scn, err := sim.LoadBuiltin("scale-64")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var step atomic.Int64
	src := sim.New(scn, sim.WithClock(func() time.Time { return t0.Add(time.Duration(step.Load()) * time.Second) }), sim.WithStart(t0))
	inv, err := src.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	attr := &churningAttribution{}
	attr.t.Store(tableFor(inv, 0))
	coll, err := collector.New(collector.Config{Interval: time.Hour, Fields: fields.MustNew().Defaults()},
		src, attr, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	collect := func(round int) {
		step.Store(int64(round))
		attr.t.Store(tableFor(inv, round))
		if err := coll.Collect(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// Warm up so that buffers reach their working size.
	round := 0
	for ; round < 50; round++ {
		collect(round)
	}
	base := heapAfterGC()
	deadline := time.Now().Add(duration)
	var peak uint64
	for time.Now().Before(deadline) {
		collect(round)
		round++
		if round%200 == 0 {
			peak = max(peak, heapAfterGC())
		}
	}
	end := heapAfterGC()
	t.Logf("%d collections, each with 64 new pods: heap %d KiB after warm-up, %d KiB peak, %d KiB at the end",
		round, base>>10, peak>>10, end>>10)
	// Departed pods must not accumulate: allow noise, not growth with rounds.
	if limit := base + base/4 + 1<<20; end > limit {
		t.Errorf("heap grew from %d KiB to %d KiB over %d rounds of pod churn", base>>10, end>>10, round)
	}
}
