package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// orphanUID is the pod of the time-slicing scenario's orphan process: no
// pod of the scenario has it.
const orphanUID = "5f1d2c3b-9a8e-4c7d-b6a5-0e1f2a3b4c5d"

func energyFields(t *testing.T) []fields.Field {
	t.Helper()
	var out []fields.Field
	for _, n := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_POWER_MGMT_LIMIT"} {
		f, ok := fields.MustNew().Lookup(n)
		if !ok {
			t.Fatal(n)
		}
		out = append(out, f)
	}
	return out
}

// On the time-slicing scenario the energy counters move with load (the
// busier GPU gains more per second), and over every window the holders'
// energy plus the idle energy equals each GPU's counter increase.
func TestTimeslicingEnergyConservation(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "timeslicing"), energyFields(t))
	ps, root := newSampler(t, s)
	acc, err := processes.NewAccountant(processes.Config{Procfs: root, Mode: processes.ModeContainer, Pods: ps}, ps, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var split processes.EnergySplitter
	prev := map[int]float64{}
	prevSum := map[int]float64{}
	for i := range 40 {
		at := time.Duration(i) * 15 * time.Second
		smp := s.readAt(at)
		usage, err := acc.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		split.Begin()
		gained := map[int]float64{}
		for k := range usage {
			d := &usage[k]
			mj, ok := smp.At(d.GPU, 2).Number()
			if !ok {
				t.Fatalf("GPU %d: no energy", d.GPU)
			}
			joules := mj / 1000
			split.Split(d, joules, true)
			gained[d.GPU] = joules - prev[d.GPU]
			prev[d.GPU] = joules
			// Holders' counters plus idle, not increases: no container
			// of the scenario leaves within the run.
			sum := d.IdleEnergyJoules
			for _, c := range d.Containers {
				sum += c.EnergyJoules
			}
			if i >= 2 && math.Abs((sum-prevSum[d.GPU])-gained[d.GPU]) > 1e-6 {
				t.Fatalf("at %s: GPU %d: holders + idle gained %.6f J, the counter %.6f J", at, d.GPU, sum-prevSum[d.GPU], gained[d.GPU])
			}
			prevSum[d.GPU] = sum
		}
		split.End()
		// GPU 2 runs at ~97 %, GPU 3 at ~40 %: more energy per window.
		if i >= 1 && gained[2] <= gained[3] {
			t.Errorf("at %s: the busy GPU 2 gained %.0f J, GPU 3 %.0f J", at, gained[2], gained[3])
		}
	}
}

// The scenario's orphan: a process of a pod no longer in the API, counted
// from the second collection on, on GPU 3 only.
func TestTimeslicingOrphan(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "timeslicing"), utilField(t))
	ps, root := newSampler(t, s)
	acc, err := processes.NewAccountant(processes.Config{Procfs: root, Mode: processes.ModeContainer, Pods: ps}, ps, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, at := range []time.Duration{0, 15 * time.Second} {
		s.readAt(at)
		usage, err := acc.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range usage {
			want := processes.Orphans{}
			if d.GPU == 3 && i == 1 {
				want = processes.Orphans{Processes: 1, MemoryBytes: 6 << 30}
			}
			if !d.OrphansKnown || d.Orphans[processes.OrphanPodGone] != want || d.Orphans[processes.OrphanHost] != (processes.Orphans{}) {
				t.Errorf("collection %d: GPU %d orphans %+v (known %v), want pod_gone %+v", i, d.GPU, d.Orphans, d.OrphansKnown, want)
			}
		}
	}
}

// On the MIG scenario the GPUs in MIG mode draw power by their instances'
// graphics-engine activity times their share of the 7 compute slices, so
// each window's energy follows the instances' load; and split per
// instance (processes.EnergySplitter.SplitMIG, fed as the collector feeds
// it), the containers' energy over all instances plus the GPU's idle
// energy equals each GPU's counter increase, the whole GPU 2's too.
func TestMIGEnergyConservation(t *testing.T) {
	t.Parallel()
	set := energyFields(t)
	gr, _ := fields.MustNew().Lookup("DCGM_FI_PROF_GR_ENGINE_ACTIVE")
	set = append(set, gr)
	const energyCol, limitCol, grCol = 2, 3, 4
	s := newSim(t, builtin(t, "mig"), set)
	ps, root := newSampler(t, s)
	acc, err := processes.NewAccountant(processes.Config{Procfs: root, Mode: processes.ModeContainer, Pods: ps}, ps, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var split processes.EnergySplitter
	prev := map[string]float64{}    // counter by GPU UUID, J
	prevSum := map[string]float64{} // holders + idle by GPU UUID, J
	charged := map[string]float64{} // by pod
	worst := 0.0
	const step = 15 * time.Second
	for i := range 40 {
		at := time.Duration(i) * step
		smp := s.readAt(at)
		usage, err := acc.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		inv := smp.Inventory
		split.Begin()
		for r := range inv.Entities {
			g := &inv.Entities[r]
			if g.Kind != source.GPU {
				continue
			}
			mj, ok := smp.At(r, energyCol).Number()
			if !ok {
				t.Fatalf("GPU %d: no energy", g.GPU)
			}
			joules := mj / 1000
			var sum float64
			var instances []processes.MIGInstance
			load := 0.0
			for k := range inv.Entities {
				e := &inv.Entities[k]
				if e.Kind != source.GPUInstance || e.UUID != g.UUID {
					continue
				}
				slices := map[string]int{"1g.10gb": 1, "2g.20gb": 2, "3g.40gb": 3}[e.MIGProfile]
				a, ok := smp.At(k, grCol).Number()
				in := processes.MIGInstance{GPUInstance: e.GPUInstance, Slices: slices, Activity: a, ActivityKnown: ok}
				for d := range usage {
					if usage[d].UUID == e.UUID && usage[d].GPUInstance == e.GPUInstance {
						in.Device = &usage[d]
					}
				}
				instances = append(instances, in)
				load += a * float64(slices) / 7
			}
			if len(instances) > 0 {
				idle, known := split.SplitMIG(g.UUID, 7, joules, true, instances)
				sum = idle
				for _, in := range instances {
					for _, c := range in.Device.Containers {
						sum += c.EnergyJoules
						charged[c.Pod] = c.EnergyJoules
					}
				}
				if i >= 1 && !known {
					t.Fatalf("at %s: GPU %d not split", at, g.GPU)
				}
				// Energy follows load: the window's energy is the power at
				// its end, 20 % of the limit plus 80 % times the load.
				lim, _ := smp.At(r, limitCol).Number()
				if want := lim * (0.2 + 0.8*load) * step.Seconds(); i >= 1 && math.Abs(joules-prev[g.UUID]-want) > 0.01 {
					t.Errorf("at %s: GPU %d gained %.3f J at load %.3f, want %.3f J", at, g.GPU, joules-prev[g.UUID], load, want)
				}
			} else {
				for d := range usage {
					if usage[d].UUID == g.UUID && usage[d].GPUInstance < 0 {
						split.Split(&usage[d], joules, true)
						sum = usage[d].IdleEnergyJoules
						for _, c := range usage[d].Containers {
							sum += c.EnergyJoules
						}
					}
				}
			}
			if i >= 2 {
				gained := joules - prev[g.UUID]
				if diff := math.Abs((sum - prevSum[g.UUID]) - gained); diff > 1e-6 {
					t.Fatalf("at %s: GPU %d: holders + idle gained %.6f J, the counter %.6f J", at, g.GPU, sum-prevSum[g.UUID], gained)
				} else if gained > 0 {
					worst = math.Max(worst, diff/gained)
				}
			}
			prev[g.UUID], prevSum[g.UUID] = joules, sum
		}
		split.End()
	}
	// The busy 3g trainer pays more than the 1g notebook, the idle 2g
	// instance's dev pod nothing; every small model something.
	if !(charged["trainer-mig-0"] > charged["notebook-1"] && charged["notebook-1"] > 0 && charged["dev-0"] == 0 && charged["small-model-3"] > 0) {
		t.Errorf("charged: %v", charged)
	}
	t.Logf("largest relative difference: %.2g; charged %v", worst, charged)
}
