package processes

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// gpuWith is one whole GPU whose containers have the given SM shares
// (ratios, as the Accountant gives them).
func gpuWith(util bool, shares map[string]float64) DeviceUsage {
	d := DeviceUsage{GPU: 0, UUID: "GPU-0", GPUInstance: -1, Utilization: util}
	for pod, sm := range shares {
		d.Containers = append(d.Containers, Usage{Who: Who{Namespace: "ns", Pod: pod, Container: "main"}, Processes: 1, SM: sm})
	}
	return d
}

func energyOf(d DeviceUsage, pod string) float64 {
	for _, c := range d.Containers {
		if c.Pod == pod {
			return c.EnergyJoules
		}
	}
	return math.NaN()
}

func split(e *EnergySplitter, d DeviceUsage, joules float64, ok bool) DeviceUsage {
	e.Begin()
	e.Split(&d, joules, ok)
	e.End()
	return d
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// The first collection has no window; a busy and an idle container share
// a GPU 50 % busy: the busy one pays for its half, the idle one nothing,
// and the other half is the GPU's idle energy.
func TestEnergySplitIdleKeptApart(t *testing.T) {
	t.Parallel()
	var e EnergySplitter
	d := split(&e, gpuWith(false, map[string]float64{"busy": 0, "idle": 0}), 1000, true)
	if d.EnergyKnown {
		t.Fatalf("first collection: energy known, want no window yet: %+v", d)
	}
	d = split(&e, gpuWith(true, map[string]float64{"busy": 0.5, "idle": 0}), 1400, true)
	if !d.EnergyKnown || !near(energyOf(d, "busy"), 200) || energyOf(d, "idle") != 0 || !near(d.IdleEnergyJoules, 200) {
		t.Fatalf("busy %v idle-pod %v idle %v known %v; want 200, 0, 200", energyOf(d, "busy"), energyOf(d, "idle"), d.IdleEnergyJoules, d.EnergyKnown)
	}
	// Counters: the next window adds to them.
	d = split(&e, gpuWith(true, map[string]float64{"busy": 0.25, "idle": 0.25}), 1800, true)
	if !near(energyOf(d, "busy"), 300) || !near(energyOf(d, "idle"), 100) || !near(d.IdleEnergyJoules, 400) {
		t.Fatalf("busy %v idle-pod %v idle %v; want 300, 100, 400", energyOf(d, "busy"), energyOf(d, "idle"), d.IdleEnergyJoules)
	}
}

// Shares above 1 in sum (MPS clients run at once; integer percents
// round) are scaled to 1: nothing is idle and nothing is charged twice.
func TestEnergySplitOverfullShares(t *testing.T) {
	t.Parallel()
	var e EnergySplitter
	split(&e, gpuWith(true, nil), 0, true)
	d := split(&e, gpuWith(true, map[string]float64{"a": 0.9, "b": 0.6}), 300, true)
	if !near(energyOf(d, "a"), 180) || !near(energyOf(d, "b"), 120) || d.IdleEnergyJoules != 0 {
		t.Fatalf("a %v b %v idle %v; want 180, 120, 0", energyOf(d, "a"), energyOf(d, "b"), d.IdleEnergyJoules)
	}
}

// Windows without what the split needs leave the counters where they
// were: no utilization, no energy reading, a counter that went down.
func TestEnergySplitSkipsWindows(t *testing.T) {
	t.Parallel()
	var e EnergySplitter
	split(&e, gpuWith(true, nil), 100, true)
	d := split(&e, gpuWith(true, map[string]float64{"a": 1}), 200, true)
	if !near(energyOf(d, "a"), 100) {
		t.Fatalf("a = %v, want 100", energyOf(d, "a"))
	}
	for _, step := range []struct {
		name   string
		util   bool
		joules float64
		ok     bool
	}{
		{"no per-process utilization", false, 300, true},
		{"no energy reading", true, 0, false},
		{"first reading after the gap", true, 400, true},
		{"driver reloaded: counter restarts", true, 5, true},
	} {
		d = split(&e, gpuWith(step.util, map[string]float64{"a": 1}), step.joules, step.ok)
		if !d.EnergyKnown || !near(energyOf(d, "a"), 100) || d.IdleEnergyJoules != 0 {
			t.Fatalf("%s: a = %v idle %v known %v; want 100, 0, true", step.name, energyOf(d, "a"), d.IdleEnergyJoules, d.EnergyKnown)
		}
	}
	d = split(&e, gpuWith(true, map[string]float64{"a": 1}), 55, true)
	if !near(energyOf(d, "a"), 150) {
		t.Fatalf("after the reload: a = %v, want 150", energyOf(d, "a"))
	}
}

// A container that leaves the GPU is forgotten: back, it starts from 0.
func TestEnergySplitHolderComesBack(t *testing.T) {
	t.Parallel()
	var e EnergySplitter
	split(&e, gpuWith(true, nil), 0, true)
	split(&e, gpuWith(true, map[string]float64{"a": 1}), 100, true)
	d := split(&e, gpuWith(true, map[string]float64{"b": 1}), 200, true)
	if !near(energyOf(d, "b"), 100) {
		t.Fatalf("b = %v after its first window, want 100", energyOf(d, "b"))
	}
	if _, ok := e.gpus["GPU-0"].holders[holder{-1, Who{Namespace: "ns", Pod: "a", Container: "main"}}]; ok {
		t.Fatal("a is still counted after it left")
	}
	d = split(&e, gpuWith(true, map[string]float64{"a": 0.5, "b": 0.5}), 300, true)
	if !near(energyOf(d, "a"), 50) || !near(energyOf(d, "b"), 150) {
		t.Fatalf("a %v b %v; want 50 (new series) and 150", energyOf(d, "a"), energyOf(d, "b"))
	}
}

// MIG devices are not split: their GPU has one energy counter and NVML
// no per-process utilization under MIG.
func TestEnergySplitLeavesMIGAlone(t *testing.T) {
	t.Parallel()
	var e EnergySplitter
	for _, j := range []float64{0, 100} {
		d := DeviceUsage{UUID: "GPU-0", GPUInstance: 1, MIGUUID: "MIG-1", Utilization: true,
			Containers: []Usage{{Who: Who{Pod: "a"}, SM: 1}}}
		d = split(&e, d, j, true)
		if d.EnergyKnown || d.Containers[0].EnergyJoules != 0 {
			t.Fatalf("MIG device split: %+v", d)
		}
	}
}

// Conservation, as a property: over random windows of NVML-shaped input
// (integer percents per process, a process without a sample counting 0,
// containers coming and going, energy in whole millijoules), in every
// window the containers' increases plus the idle increase equal the
// energy counter's increase, and no counter goes down.
func TestEnergyConservation(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(36, 1))
	pods := []string{"a", "b", "c", "d", "e"}
	var e EnergySplitter
	prev := map[string]float64{}
	prevIdle := 0.0
	counter := int64(150_000_000_000) // mJ, as NVML counts
	lastJoules := 0.0
	for w := range 2000 {
		shares := map[string]float64{}
		for _, p := range pods {
			if rng.IntN(4) == 0 {
				continue // not on the GPU this window
			}
			pct := 0
			if rng.IntN(3) > 0 {
				pct = rng.IntN(101) // one NVML sample, integer percent
			}
			shares[p] = float64(pct) / 100
		}
		counter += rng.Int64N(400_000) // up to 400 W over 1 s
		joules := float64(counter) / 1000
		d := split(&e, gpuWith(w > 0, shares), joules, true)
		if w < 2 {
			prev, prevIdle, lastJoules = energies(d), d.IdleEnergyJoules, joules
			continue
		}
		var delta float64
		now := energies(d)
		for p, v := range now {
			inc := v - prev[p] // a new series counts from 0
			if inc < -1e-9 {
				t.Fatalf("window %d: %s went down by %v", w, p, -inc)
			}
			delta += inc
		}
		if d.IdleEnergyJoules < prevIdle {
			t.Fatalf("window %d: idle went down", w)
		}
		delta += d.IdleEnergyJoules - prevIdle
		if want := joules - lastJoules; math.Abs(delta-want) > 1e-6 {
			t.Fatalf("window %d: holders + idle = %v J, counter increase %v J", w, delta, want)
		}
		prev, prevIdle = now, d.IdleEnergyJoules
		lastJoules = joules
	}
}

func energies(d DeviceUsage) map[string]float64 {
	m := map[string]float64{}
	for _, c := range d.Containers {
		m[c.Pod] = c.EnergyJoules
	}
	return m
}

// The same property through the Accountant, on processes as NVML lists
// them: the shares the split uses are the Accountant's.
func TestEnergyConservationThroughAccountant(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a, _, _ := newTestAccountant(t, root, sharedGPU(t, root), ModeContainer, names)
	var e EnergySplitter
	for w, joules := range []float64{1000, 1250, 1250, 1600} {
		got, err := a.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		e.Begin()
		e.Split(&got[0], joules, true)
		e.End()
		if w == 0 {
			continue
		}
		sum := got[0].IdleEnergyJoules
		for _, c := range got[0].Containers {
			sum += c.EnergyJoules
		}
		if !near(sum, joules-1000) {
			t.Fatalf("window %d: holders + idle = %v, counter increase %v", w, sum, joules-1000)
		}
	}
}

// The split's cost on the scale node (64 GPUs x 16 processes, four
// containers each), beside BenchmarkAccountantCollect64x16.
func BenchmarkEnergySplit64x16(b *testing.B) {
	root := b.TempDir()
	s, pods := scaleNode(b, root, 64, 16)
	a, err := NewAccountant(Config{Procfs: root, Mode: ModeContainer, Pods: pods}, s, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	devs, err := a.Collect(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var e EnergySplitter
	joules := 0.0
	b.ReportAllocs()
	for b.Loop() {
		joules += 300
		e.Begin()
		for i := range devs {
			e.Split(&devs[i], joules, true)
		}
		e.End()
	}
}
