package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
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
