package collector

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// energySource is a fakeSource whose GPUs' energy counters read the next
// of millijoules at each Read.
type energySource struct {
	*fakeSource
	millijoules []int64
}

func (e *energySource) Read(ctx context.Context) (*source.Sample, error) {
	s, err := e.fakeSource.Read(ctx)
	if err != nil {
		return nil, err
	}
	mj := e.millijoules[0]
	e.millijoules = e.millijoules[1:]
	for c := range s.Fields {
		if s.Fields[c].DCGMName == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" {
			for r := range s.Inventory.Entities {
				s.Set(r, c, source.IntValue(mj))
			}
		}
	}
	return s, nil
}

// The collector splits the energy counter's increase (in mJ, scaled to
// joules) by the accountant's shares, and renders orphans and idle energy
// per GPU.
func TestCollectorEnergyAndOrphans(t *testing.T) {
	t.Parallel()
	src := &energySource{fakeSource: newFakeSource(1), millijoules: []int64{1_000_000, 1_400_000, 2_000_000}}
	uuid := src.inv.Entities[0].UUID
	acc := &fakeAccounting{}
	usage := func(util bool) []processes.DeviceUsage {
		d := processes.DeviceUsage{UUID: uuid, GPUInstance: -1, Utilization: util, OrphansKnown: true, Containers: []processes.Usage{
			{Who: processes.Who{Namespace: "ml", Pod: "busy", Container: "train"}, Processes: 1, SM: 0.75},
			{Who: processes.Who{PodUID: "uid-gone", ContainerID: "abc"}, Processes: 1},
		}}
		d.Orphans[processes.OrphanPodGone] = processes.Orphans{Processes: 1, MemoryBytes: 1 << 30}
		return []processes.DeviceUsage{d}
	}
	cat := fields.MustNew()
	energy, _ := cat.Lookup("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
	c, err := New(Config{Interval: time.Hour, Fields: append(testFields(t), energy), Processes: acc, Naming: exposition.NamingPrometheus},
		src, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	gpu := `{gpu="0",uuid="` + uuid + `",device="nvidia0",model="NVIDIA H100 80GB HBM3"`
	for i, want := range [][]string{
		{`gpu_orphan_processes` + gpu + `,reason="pod_gone"} 1`, `gpu_orphan_memory_used_bytes` + gpu + `,reason="pod_gone"} 1.073741824e+09`,
			`gpu_orphan_processes` + gpu + `,reason="host"} 0`},
		// 400 J: 300 to busy, 0 to the idle pod of the deleted pod, 100 idle.
		{`gpu_container_energy_joules_total` + gpu + `,namespace="ml",pod="busy",container="train"} 300`,
			`gpu_container_energy_joules_total` + gpu + `,namespace="",pod="",container="",pod_uid="uid-gone",container_id="abc"} 0`,
			`gpu_idle_energy_joules_total` + gpu + `} 100`},
		{`gpu_container_energy_joules_total` + gpu + `,namespace="ml",pod="busy",container="train"} 750`,
			`gpu_idle_energy_joules_total` + gpu + `} 250`},
	} {
		acc.devs = usage(i > 0)
		if err := c.Collect(context.Background()); err != nil {
			t.Fatal(err)
		}
		text := string(c.Page().Text)
		if i == 0 && strings.Contains(text, "energy_joules_total{") && strings.Contains(text, "gpu_idle_energy") {
			t.Errorf("collection 0: energy split without a window:\n%s", text)
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("collection %d: page lacks %s\n%s", i, w, text)
			}
		}
	}
}
