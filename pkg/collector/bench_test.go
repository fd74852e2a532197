package collector

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// benchSampler lists perGPU processes on every GPU of an inventory, four
// containers per GPU, as NVML would on a node of shared GPUs.
type benchSampler struct{ devs []processes.Device }

func (b *benchSampler) Sample(context.Context) ([]processes.Device, error) {
	out := make([]processes.Device, len(b.devs))
	for i, d := range b.devs {
		d.Processes = append([]processes.Process(nil), d.Processes...)
		out[i] = d
	}
	return out, nil
}

func (*benchSampler) Close() error { return nil }

type benchPods map[string]podlabels.ContainerRef

func (p benchPods) LookupContainer(uid, cid string) (podlabels.ContainerRef, bool) {
	ref, ok := p[uid+"/"+cid]
	return ref, ok
}

// newBenchAccounting writes perGPU processes per GPU of inv into a fake
// procfs and returns process accounting over them.
func newBenchAccounting(b *testing.B, inv *source.Inventory, perGPU int) *processes.Accountant {
	root := b.TempDir()
	s := &benchSampler{}
	pods := benchPods{}
	pid := uint32(1000)
	for _, e := range inv.Entities {
		if e.Kind != source.GPU {
			continue
		}
		d := processes.Device{GPU: e.GPU, UUID: e.UUID, GPUInstance: -1, Utilization: true}
		for p := range perGPU {
			uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", e.GPU, p%4)
			cid := fmt.Sprintf("%064x", e.GPU*4+p%4)
			pods[uid+"/"+cid] = podlabels.ContainerRef{Namespace: "team", Pod: fmt.Sprintf("worker-%d-%d", e.GPU, p%4), Container: "main"}
			cgroup := fmt.Sprintf("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%08x_0000_4000_8000_%012x.slice/cri-containerd-%s.scope\n", e.GPU, p%4, cid)
			if err := processes.WriteProcess(root, pid, "python3", 100, cgroup); err != nil {
				b.Fatal(err)
			}
			// Issue 36: the environment, read once per process, with
			// HAMi's limits.
			env := []string{"PATH=/usr/local/bin:/usr/bin", "NVIDIA_VISIBLE_DEVICES=" + e.UUID, "CUDA_DEVICE_MEMORY_LIMIT_0=3000m", "CUDA_DEVICE_SM_LIMIT=25"}
			if err := processes.WriteEnviron(root, pid, env); err != nil {
				b.Fatal(err)
			}
			d.Processes = append(d.Processes, processes.Process{PID: pid, Type: processes.Compute, UsedBytes: 1 << 30, UsedKnown: true, SM: 5, Sampled: true})
			pid++
		}
		s.devs = append(s.devs, d)
	}
	acc, err := processes.NewAccountant(processes.Config{Procfs: root, Mode: processes.ModeContainer, Pods: pods}, s, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	return acc
}

// BenchmarkCollectScale64 is one collection of the scale-64 scenario (64
// GPUs, the whole catalog) without and with process accounting (16
// processes per GPU in 4 containers), in the same run.
func BenchmarkCollectScale64(b *testing.B) {
	scn, err := sim.LoadBuiltin("scale-64")
	if err != nil {
		b.Fatal(err)
	}
	all := fields.MustNew().All()
	for _, mode := range []string{"off", "container"} {
		b.Run("processes="+mode, func(b *testing.B) {
			src := sim.New(scn)
			var acc ProcessAccounting
			if mode != "off" {
				inv, err := src.Inventory(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				acc = newBenchAccounting(b, inv, 16)
			}
			c, err := New(Config{Interval: time.Hour, Fields: all, Processes: acc}, src, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := c.Collect(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := c.Collect(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(c.Page().Text)), "page-bytes")
			b.ReportMetric(float64(c.Page().Series), "series")
		})
	}
}
