package processes

// MIGInstance is one GPU instance of a GPU in MIG mode at a collection,
// as SplitMIG reads it.
type MIGInstance struct {
	// Device is the instance's usage row from the Accountant
	// (GPUInstance >= 0); nil when accounting has none for it in this
	// collection (its MIG device failed).
	Device *DeviceUsage
	// GPUInstance is the instance's id.
	GPUInstance int
	// Slices is the instance's compute slices, the 3 of 3g.40gb.
	Slices int
	// Activity is the instance's graphics-engine activity at this
	// collection (DCGM_FI_PROF_GR_ENGINE_ACTIVE of the GPU-instance
	// entity), a ratio of its own compute, when ActivityKnown.
	Activity      float64
	ActivityKnown bool
}

// SplitMIG charges the window that ends now on GPU uuid, in MIG mode:
// joules is its energy counter at this collection, in joules, when ok;
// slices is its number of compute slices (7 on an H100; 0 when not
// known); instances are all its GPU instances. Instance i, with c_i of
// the GPU's C slices and activity a_i over the window, is charged
// ΔE·a_i·c_i/C (scaled down to sum to ΔE when the sum is larger), and its
// charge goes to the containers with processes on it. The rest of ΔE is
// the GPU's idle energy: the time its instances' engines were idle, the
// slices no instance holds, and activity on an instance without
// processes. SplitMIG sets each instance's Device.EnergyKnown and its
// containers' EnergyJoules, and returns the GPU's idle counter, known
// from the GPU's first split on.
//
// Why activity times slices: DCGM reports a GPU instance's
// DCGM_FI_PROF_GR_ENGINE_ACTIVE as a ratio of the instance's own compute,
// not of the GPU's. dcgmproftester (NVIDIA/DCGM 4.6.0,
// dcgmproftester/PhysicalGpu.cpp, subtest "Graphics Activity") drives
// each MIG instance and checks the activity it generated against the
// value DCGM reports for that instance's own entity, 1.0 when fully busy;
// and in NVIDIA/DCGM issue 138 (A100 80GB) one busy GPC reads 100 % on a
// 1g instance, 50 % on a 2g and 33 % on a 3g. An instance's share of the
// GPU's engines is therefore a_i·c_i/C. The GPU entity's own value is not
// used: the split needs no more than the instances'.
//
// a_i is the mean of the instance's activity at the window's two ends
// (its reading at this collection alone when the previous one is
// missing): a DCGM profiling field is a gauge of its last sample period
// ("instantaneous values", not aggregated over the exporter's interval:
// NVIDIA/dcgm-exporter issue 53, a DCGM maintainer), not an average over
// the window, so a change within the window is seen only as far as the
// two ends show it. A window across a reconfiguration is charged by the
// instances at its end.
//
// Several containers on one instance (time-slicing or MPS within it):
// neither NVML nor DCGM tells which of them used the instance's engines
// (nvmlDeviceGetProcessUtilization has no samples under MIG), so the
// instance's charge is split by their processes' device memory on it, a
// proxy, not a measure; equally when memory is not known for all of them.
//
// The window is not split, and no counter moves, when the energy counter
// was not read or went down, when C is not known, or when an instance has
// no usage row, no activity reading or no slices: its share could not be
// told from idle.
func (e *EnergySplitter) SplitMIG(uuid string, slices int, joules float64, ok bool, instances []MIGInstance) (idle float64, known bool) {
	g := e.gpu(uuid)
	delta := joules - g.last
	window := ok && g.have && delta >= 0 && slices > 0
	if ok {
		g.last, g.have = joules, true
	} else {
		g.have = false
	}
	for i := range instances {
		in := &instances[i]
		if in.Device == nil || !in.ActivityKnown || in.Slices <= 0 {
			window = false
		}
	}
	g.forgetMIGHolders(instances)
	if window {
		g.splitMIG(delta, slices, instances)
	}
	g.rememberActivity(instances)
	if !g.split {
		return 0, false
	}
	for i := range instances {
		d := instances[i].Device
		if d == nil {
			continue
		}
		d.EnergyKnown = true
		for j := range d.Containers {
			c := &d.Containers[j]
			c.EnergyJoules = g.holders[holder{d.GPUInstance, c.Who}]
		}
	}
	return g.idle, true
}

// splitMIG charges one window of delta joules.
func (g *gpuEnergy) splitMIG(delta float64, slices int, instances []MIGInstance) {
	g.split = true
	sum := 0.0
	for i := range instances {
		sum += g.migWeight(&instances[i], slices)
	}
	scale := 1.0
	if sum > 1 {
		scale = 1 / sum
	}
	charged := 0.0
	for i := range instances {
		in := &instances[i]
		cs := in.Device.Containers
		if len(cs) == 0 {
			continue // activity without processes: idle
		}
		share := delta * g.migWeight(in, slices) * scale
		var mem float64
		byMemory := true
		for j := range cs {
			byMemory = byMemory && cs[j].MemoryKnown
			mem += float64(cs[j].MemoryBytes)
		}
		byMemory = byMemory && mem > 0
		for j := range cs {
			part := 1 / float64(len(cs))
			if byMemory {
				part = float64(cs[j].MemoryBytes) / mem
			}
			charged += share * part
			g.holders[holder{in.Device.GPUInstance, cs[j].Who}] += share * part
		}
	}
	if rest := delta - charged; rest > 0 {
		g.idle += rest
	}
}

// migWeight is instance in's share of the GPU over the window: its mean
// activity, clamped to 0-1, times its share of the slices.
func (g *gpuEnergy) migWeight(in *MIGInstance, slices int) float64 {
	a := in.Activity
	if prev, ok := g.activity[in.GPUInstance]; ok {
		a = (a + prev) / 2
	}
	return min(max(a, 0), 1) * float64(in.Slices) / float64(slices)
}

// forgetMIGHolders forgets the counters of containers no longer on their
// instance, and of instances gone.
func (g *gpuEnergy) forgetMIGHolders(instances []MIGInstance) {
	for h := range g.holders {
		keep := false
		for i := range instances {
			if d := instances[i].Device; d != nil && d.GPUInstance == h.instance && hasHolder(d.Containers, h.Who) {
				keep = true
				break
			}
		}
		if !keep {
			delete(g.holders, h)
		}
	}
}

// rememberActivity keeps each instance's activity reading for the next
// window; an instance without one has none.
func (g *gpuEnergy) rememberActivity(instances []MIGInstance) {
	if g.activity == nil {
		g.activity = map[int]float64{}
	}
	clear(g.activity)
	for i := range instances {
		if in := &instances[i]; in.ActivityKnown {
			g.activity[in.GPUInstance] = in.Activity
		}
	}
}
