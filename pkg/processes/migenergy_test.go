package processes

import (
	"math"
	"math/rand/v2"
	"testing"
)

// migGPU is an H100 (7 slices) in MIG mode with GPU instances 2 (3g),
// 3 (2g) and 9 (1g): instance 2 runs a, 3 runs b, 9 runs x and y (3 and 1
// GiB), at the given activities.
func migGPU(act2, act3, act9 float64) []MIGInstance {
	c := func(pod string, mem uint64) Usage {
		return Usage{Who: Who{Namespace: "ns", Pod: pod, Container: "main"}, Processes: 1, MemoryBytes: mem << 30, MemoryKnown: true}
	}
	return []MIGInstance{
		{Device: &DeviceUsage{UUID: "GPU-0", GPUInstance: 2, Containers: []Usage{c("a", 20)}}, GPUInstance: 2, Slices: 3, Activity: act2, ActivityKnown: true},
		{Device: &DeviceUsage{UUID: "GPU-0", GPUInstance: 3, Containers: []Usage{c("b", 5)}}, GPUInstance: 3, Slices: 2, Activity: act3, ActivityKnown: true},
		{Device: &DeviceUsage{UUID: "GPU-0", GPUInstance: 9, Containers: []Usage{c("x", 3), c("y", 1)}}, GPUInstance: 9, Slices: 1, Activity: act9, ActivityKnown: true},
	}
}

func splitMIG(e *EnergySplitter, joules float64, ok bool, in []MIGInstance) (float64, bool) {
	e.Begin()
	idle, known := e.SplitMIG("GPU-0", 7, joules, ok, in)
	e.End()
	return idle, known
}

// migEnergy is the energy of pod's container on its instance.
func migEnergy(in []MIGInstance, pod string) float64 {
	for _, i := range in {
		for _, c := range i.Device.Containers {
			if c.Pod == pod {
				return c.EnergyJoules
			}
		}
	}
	return math.NaN()
}

// Each instance pays for its activity times its slices' share of the GPU:
// 700 J with the 3g instance fully busy is 300 J to it; the idle 2g
// instance pays nothing; the 1g instance at half its activity pays 50 J,
// split 3:1 by its containers' memory. The rest, 350 J, is the GPU's idle
// energy.
func TestSplitMIGBySlicesAndActivity(t *testing.T) {
	t.Parallel()
	var e EnergySplitter
	in := migGPU(1, 0, 0.5)
	if _, known := splitMIG(&e, 1000, true, in); known || in[0].Device.EnergyKnown {
		t.Fatalf("first collection: energy known, want no window yet")
	}
	in = migGPU(1, 0, 0.5)
	idle, known := splitMIG(&e, 1700, true, in)
	if !known || !in[0].Device.EnergyKnown || !in[2].Device.EnergyKnown {
		t.Fatal("second collection: energy not known")
	}
	for pod, want := range map[string]float64{"a": 300, "b": 0, "x": 37.5, "y": 12.5} {
		if got := migEnergy(in, pod); !near(got, want) {
			t.Errorf("%s = %v J, want %v", pod, got, want)
		}
	}
	if !near(idle, 350) {
		t.Errorf("idle = %v J, want 350", idle)
	}
	// The activity of a window is the mean of its ends: b's instance goes
	// from 0 to fully busy, and pays for half its slices' share, 100 J.
	in = migGPU(1, 1, 0.5)
	idle, _ = splitMIG(&e, 2400, true, in)
	if !near(migEnergy(in, "b"), 100) || !near(migEnergy(in, "a"), 600) || !near(idle, 350+250) {
		t.Errorf("a %v b %v idle %v; want 600, 100, 600", migEnergy(in, "a"), migEnergy(in, "b"), idle)
	}
}

// Windows the split cannot charge leave every counter where it was.
func TestSplitMIGSkipsWindows(t *testing.T) {
	t.Parallel()
	var e EnergySplitter
	splitMIG(&e, 0, true, migGPU(1, 1, 1))
	in := migGPU(1, 1, 1)
	idle, _ := splitMIG(&e, 700, true, in)
	if !near(migEnergy(in, "a"), 300) || !near(idle, 100) {
		t.Fatalf("a %v idle %v; want 300, 100", migEnergy(in, "a"), idle)
	}
	for _, step := range []struct {
		name   string
		joules float64
		ok     bool
		edit   func([]MIGInstance) []MIGInstance
		slices int
	}{
		{"an instance without activity", 1400, true, func(in []MIGInstance) []MIGInstance { in[1].ActivityKnown = false; return in }, 7},
		{"an instance without a usage row", 2100, true, func(in []MIGInstance) []MIGInstance { in[2].Device = nil; return in }, 7},
		{"an instance without slices", 2800, true, func(in []MIGInstance) []MIGInstance { in[0].Slices = 0; return in }, 7},
		{"the GPU's slices not known", 3500, true, func(in []MIGInstance) []MIGInstance { return in }, 0},
		{"no energy reading", 0, false, func(in []MIGInstance) []MIGInstance { return in }, 7},
		{"first reading after the gap", 4200, true, func(in []MIGInstance) []MIGInstance { return in }, 0},
		{"driver reloaded: counter restarts", 5, true, func(in []MIGInstance) []MIGInstance { return in }, 7},
	} {
		in := step.edit(migGPU(1, 1, 1))
		e.Begin()
		idle, known := e.SplitMIG("GPU-0", step.slices, step.joules, step.ok, in)
		e.End()
		if !known || !near(migEnergy(in, "a"), 300) || !near(idle, 100) {
			t.Fatalf("%s: a = %v idle %v known %v; want 300, 100, true", step.name, migEnergy(in, "a"), idle, known)
		}
	}
	in = migGPU(1, 1, 1)
	if _, _ = splitMIG(&e, 705, true, in); !near(migEnergy(in, "a"), 600) {
		t.Fatalf("after the reload: a = %v, want 600", migEnergy(in, "a"))
	}
}

// Activity beyond what the slices allow (a wrong slice count, readings
// above 1) is scaled to the counter's increase: nothing is charged twice.
func TestSplitMIGOverfull(t *testing.T) {
	t.Parallel()
	var e EnergySplitter
	in := migGPU(2, 1, -1)
	e.Begin()
	e.SplitMIG("GPU-0", 4, 0, true, in)
	e.End()
	in = migGPU(2, 1, -1) // a reading below 0 counts as 0
	e.Begin()
	idle, _ := e.SplitMIG("GPU-0", 4, 600, true, in)
	e.End()
	// Weights 3/4 (activity clamped to 1), 2/4, 0: scaled to 3/5, 2/5.
	if !near(migEnergy(in, "a"), 360) || !near(migEnergy(in, "b"), 240) || migEnergy(in, "x")+migEnergy(in, "y") != 0 || idle != 0 {
		t.Fatalf("a %v b %v x+y %v idle %v; want 360, 240, 0, 0", migEnergy(in, "a"), migEnergy(in, "b"), migEnergy(in, "x")+migEnergy(in, "y"), idle)
	}
}

// A busy instance without processes charges no one: its energy is idle.
// Containers without known memory share their instance equally. The same
// container on two instances has a counter on each, and one that leaves
// an instance is forgotten there.
func TestSplitMIGHolders(t *testing.T) {
	t.Parallel()
	var e EnergySplitter
	in := func() []MIGInstance {
		in := migGPU(1, 1, 1)
		in[0].Device.Containers = nil
		in[2].Device.Containers[0].MemoryKnown = false
		in[2].Device.Containers = append(in[2].Device.Containers, in[1].Device.Containers[0])
		return in
	}
	splitMIG(&e, 0, true, in())
	got := in()
	idle, _ := splitMIG(&e, 700, true, got)
	// Instance 2 (300 J) has no processes and the seventh slice no
	// instance: 400 J idle; 3 gives 200 J to b; 9 gives 100 J to x, y and
	// b, a third each.
	b3 := got[1].Device.Containers[0].EnergyJoules
	b9 := got[2].Device.Containers[2].EnergyJoules
	if !near(idle, 400) || !near(b3, 200) || !near(b9, 100.0/3) || !near(migEnergy(got, "x"), 100.0/3) {
		t.Fatalf("idle %v, b on 3 %v, b on 9 %v, x %v; want 400, 200, 33.3, 33.3", idle, b3, b9, migEnergy(got, "x"))
	}
	// b leaves instance 9: back there, it starts from 0.
	gone := migGPU(1, 1, 1)
	splitMIG(&e, 1400, true, gone)
	got = in()
	splitMIG(&e, 2100, true, got)
	if b9 := got[2].Device.Containers[2].EnergyJoules; !near(b9, 100.0/3) {
		t.Fatalf("b on 9 after coming back = %v, want 33.3", b9)
	}
}

// A GPU leaving MIG mode forgets its instances' counters.
func TestSplitMIGThenWhole(t *testing.T) {
	t.Parallel()
	var e EnergySplitter
	splitMIG(&e, 0, true, migGPU(1, 1, 1))
	splitMIG(&e, 700, true, migGPU(1, 1, 1))
	split(&e, gpuWith(true, map[string]float64{"a": 1}), 1400, true)
	for h := range e.gpus["GPU-0"].holders {
		if h.instance != -1 {
			t.Fatalf("instance %d's counter of %s kept on a whole GPU", h.instance, h.Pod)
		}
	}
}

// Conservation, as a property: over random windows of DCGM-shaped input
// (profiles from 1g to 7g filling part of the GPU, activities in 0-1 as
// gauges, readings missing now and then, containers coming and going
// between instances, energy in whole millijoules), in every window the
// containers' increases over all instances plus the idle increase equal
// the counter's increase, or nothing moves; no counter goes down.
func TestSplitMIGConservation(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(36, 7))
	pods := []string{"a", "b", "c", "d", "e", "f"}
	var e EnergySplitter
	type key struct {
		gi  int
		pod string
	}
	prev := map[key]float64{}
	prevIdle := 0.0
	counter := int64(240_000_000_000)
	lastJoules := math.NaN()
	worst, splits := 0.0, 0
	for w := range 3000 {
		// A layout: instances until the 7 slices are used or we stop.
		var in []MIGInstance
		free := 7
		for gi := 1; free > 0 && rng.IntN(5) > 0; gi++ {
			s := []int{1, 1, 2, 3, 4, 7}[rng.IntN(6)]
			if s > free {
				continue
			}
			free -= s
			d := &DeviceUsage{UUID: "GPU-0", GPUInstance: gi}
			for _, p := range pods {
				if rng.IntN(4) == 0 {
					d.Containers = append(d.Containers, Usage{Who: Who{Namespace: "ns", Pod: p, Container: "main"},
						MemoryBytes: uint64(rng.IntN(4)) << 30, MemoryKnown: rng.IntN(10) > 0})
				}
			}
			in = append(in, MIGInstance{Device: d, GPUInstance: gi, Slices: s, Activity: rng.Float64(), ActivityKnown: rng.IntN(20) > 0})
		}
		counter += rng.Int64N(700_000)
		joules := float64(counter) / 1000
		e.Begin()
		idle, known := e.SplitMIG("GPU-0", 7, joules, true, in)
		e.End()
		now := map[key]float64{}
		for _, i := range in {
			for _, c := range i.Device.Containers {
				now[key{i.GPUInstance, c.Pod}] = c.EnergyJoules
			}
		}
		if known && !math.IsNaN(lastJoules) {
			sum := idle - prevIdle
			if sum < 0 {
				t.Fatalf("window %d: idle went down", w)
			}
			for k, v := range now {
				inc := v - prev[k] // a new series counts from 0
				if inc < -1e-9 {
					t.Fatalf("window %d: %v went down by %v", w, k, -inc)
				}
				sum += inc
			}
			want := joules - lastJoules
			if sum != 0 { // split; else a window not split: nothing moved
				if math.Abs(sum-want) > 1e-6 {
					t.Fatalf("window %d: holders + idle = %v J, counter increase %v J", w, sum, want)
				}
				worst = math.Max(worst, math.Abs(sum-want)/want)
				splits++
			}
		}
		prev, prevIdle, lastJoules = now, idle, joules
	}
	if splits < 500 {
		t.Fatalf("%d of 3000 windows split: the property is barely tested", splits)
	}
	t.Logf("%d windows split; largest relative difference: %.2g", splits, worst)
}

// An instance's activity at a collection without a reading is not
// remembered: the next window's mean does not reach back past it. A window
// in which the counter did not move is split (into nothing).
func TestSplitMIGActivityGap(t *testing.T) {
	t.Parallel()
	var e EnergySplitter
	splitMIG(&e, 0, true, migGPU(1, 1, 1))
	in := migGPU(1, 1, 1)
	if _, known := splitMIG(&e, 0, true, in); !known {
		t.Fatal("a window with no energy is not split")
	}
	gap := migGPU(1, 1, 1)
	gap[2].ActivityKnown = false
	splitMIG(&e, 700, true, gap)
	in = migGPU(1, 1, 0)
	splitMIG(&e, 1400, true, in)
	if x := migEnergy(in, "x") + migEnergy(in, "y"); x != 0 {
		t.Fatalf("instance 9 idle since its gap charged %v J, want 0", x)
	}
}

// A GPU in MIG mode without instances charges no one: its energy is idle.
func TestSplitMIGNoInstances(t *testing.T) {
	t.Parallel()
	var e EnergySplitter
	splitMIG(&e, 0, true, nil)
	if idle, known := splitMIG(&e, 700, true, nil); !known || idle != 700 {
		t.Fatalf("idle %v known %v; want 700, true", idle, known)
	}
}

// SplitMIG's cost on a node of 64 GPUs in MIG mode, seven 1g instances
// each with one container, beside BenchmarkEnergySplit64x16.
func BenchmarkEnergySplitMIG64x7(b *testing.B) {
	gpus := make([][]MIGInstance, 64)
	uuids := make([]string, 64)
	for g := range gpus {
		uuids[g] = "GPU-" + string(rune('A'+g%26)) + string(rune('a'+g/26))
		for gi := range 7 {
			d := &DeviceUsage{UUID: uuids[g], GPUInstance: gi, Containers: []Usage{{Who: Who{Namespace: "ns", Pod: "p" + string(rune('0'+gi)), Container: "main"}, Processes: 1}}}
			gpus[g] = append(gpus[g], MIGInstance{Device: d, GPUInstance: gi, Slices: 1, Activity: 0.5, ActivityKnown: true})
		}
	}
	var e EnergySplitter
	joules := 0.0
	b.ReportAllocs()
	for b.Loop() {
		joules += 300
		e.Begin()
		for g := range gpus {
			e.SplitMIG(uuids[g], 7, joules, true, gpus[g])
		}
		e.End()
	}
}
