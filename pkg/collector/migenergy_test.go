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

// migEnergySource is a fakeSource whose GPU's energy counter reads the
// next of millijoules at each Read and whose GPU instances' graphics
// engine activity is activity, by instance id.
type migEnergySource struct {
	*fakeSource
	millijoules []int64
	activity    map[int]float64
}

func (m *migEnergySource) Read(ctx context.Context) (*source.Sample, error) {
	s, err := m.fakeSource.Read(ctx)
	if err != nil {
		return nil, err
	}
	mj := m.millijoules[0]
	m.millijoules = m.millijoules[1:]
	for c := range s.Fields {
		for r := range s.Inventory.Entities {
			e := &s.Inventory.Entities[r]
			switch {
			case s.Fields[c].ID == energyFieldID && e.Kind == source.GPU:
				s.Set(r, c, source.IntValue(mj))
			case s.Fields[c].ID == energyFieldID:
				s.Set(r, c, source.Value{}) // the counter is the GPU's
			case s.Fields[c].ID == grEngineActiveFieldID && e.Kind == source.GPUInstance:
				s.Set(r, c, source.FloatValue(m.activity[e.GPUInstance]))
			case s.Fields[c].ID == grEngineActiveFieldID:
				s.Set(r, c, source.Value{}) // blank on a GPU in MIG mode
			}
		}
	}
	return s, nil
}

// On an H100 in MIG mode with a busy 3g instance (pod a) and a 2g
// instance (id 0) at half its activity (pod b), 700 J of the GPU's counter go
// 300 J to a and 100 J to b on their instances' series, and 300 J to the
// GPU's idle counter, on the GPU's own series: the instances have none.
func TestCollectorMIGEnergy(t *testing.T) {
	t.Parallel()
	const uuid = "GPU-5e4d3c2b-0000-1111-2222-333344445555"
	gpu := source.Entity{Kind: source.GPU, GPU: 0, UUID: uuid, Device: "nvidia0", Model: "NVIDIA H100 80GB HBM3", GPUInstance: -1, ComputeInstance: -1}
	gi2, gi0 := gpu, gpu
	gi2.Kind, gi2.GPUInstance, gi2.MIGProfile = source.GPUInstance, 2, "3g.40gb"
	gi0.Kind, gi0.GPUInstance, gi0.MIGProfile = source.GPUInstance, 0, "2g.20gb"
	src := &migEnergySource{fakeSource: newFakeSource(0), millijoules: []int64{1_000_000, 1_700_000, 2_400_000},
		activity: map[int]float64{2: 1, 0: 0.5}}
	link := gpu // an NVLink of the GPU: not an instance
	link.Kind, link.Link = source.NVLink, 0
	src.inv = &source.Inventory{DriverVersion: "550.54.15", Entities: []source.Entity{gpu, gi2, gi0, link}}
	on := func(gi int, pod string) processes.DeviceUsage {
		return processes.DeviceUsage{UUID: uuid, GPUInstance: gi, MIGUUID: "MIG-" + pod, Containers: []processes.Usage{
			{Who: processes.Who{Namespace: "ml", Pod: pod, Container: "main"}, Processes: 1, MemoryBytes: 1 << 30, MemoryKnown: true}}}
	}
	acc := &fakeAccounting{}
	cat := fields.MustNew()
	var set []fields.Field
	for _, n := range []string{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"} {
		f, _ := cat.Lookup(n)
		set = append(set, f)
	}
	c, err := New(Config{Interval: time.Hour, Fields: set, Processes: acc, Naming: exposition.NamingPrometheus},
		src, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	labels := `{gpu="0",uuid="` + uuid + `",device="nvidia0",model="NVIDIA H100 80GB HBM3"`
	for i, want := range [][]string{
		nil,
		{`gpu_container_energy_joules_total` + labels + `,gpu_instance="2",mig_profile="3g.40gb",namespace="ml",pod="a",container="main"} 300`,
			`gpu_container_energy_joules_total` + labels + `,gpu_instance="0",mig_profile="2g.20gb",namespace="ml",pod="b",container="main"} 100`,
			`gpu_idle_energy_joules_total` + labels + `} 300`},
		{`gpu_container_energy_joules_total` + labels + `,gpu_instance="2",mig_profile="3g.40gb",namespace="ml",pod="a",container="main"} 600`,
			`gpu_idle_energy_joules_total` + labels + `} 600`},
	} {
		acc.devs = []processes.DeviceUsage{on(2, "a"), on(0, "b")}
		if err := c.Collect(context.Background()); err != nil {
			t.Fatal(err)
		}
		text := string(c.Page().Text)
		if i == 0 && (strings.Contains(text, "gpu_container_energy_joules_total{") || strings.Contains(text, "gpu_idle_energy_joules_total{")) {
			t.Errorf("collection 0: energy split without a window:\n%s", text)
		}
		if n := strings.Count(text, "gpu_idle_energy_joules_total{"); i > 0 && n != 1 {
			t.Errorf("collection %d: %d idle energy series, want the GPU's alone:\n%s", i, n, text)
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("collection %d: page lacks %s\n%s", i, w, text)
			}
		}
	}
	// Reconfigured into one 7g instance (id 5), fully busy: all of the
	// GPU's energy is its container's, that of the window across the
	// change too (600 J, charged by the layout at its end), then 500 J.
	gi5 := gpu
	gi5.Kind, gi5.GPUInstance, gi5.MIGProfile = source.GPUInstance, 5, "7g.80gb"
	src.update(func(f *fakeSource) {
		f.inv = &source.Inventory{DriverVersion: "550.54.15", Entities: []source.Entity{gpu, gi5}}
	})
	src.activity[5] = 1
	src.millijoules = []int64{3_000_000, 3_500_000}
	for i := range 2 {
		acc.devs = []processes.DeviceUsage{on(5, "c")}
		if err := c.Collect(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := `gpu_container_energy_joules_total` + labels + `,gpu_instance="5",mig_profile="7g.80gb",namespace="ml",pod="c",container="main"} 1100`
		if text := string(c.Page().Text); i == 1 && !strings.Contains(text, want) {
			t.Errorf("after the reconfiguration: page lacks %s\n%s", want, text)
		}
	}
}
