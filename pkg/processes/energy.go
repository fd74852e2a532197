package processes

// EnergySplitter splits each whole GPU's energy-counter increase between
// the containers on it by their own SM share over the same window, and
// keeps the energy of the time no process was on the SMs apart as the
// GPU's idle energy, so that it is not charged to whoever happened to be
// there. A GPU in MIG mode is split per GPU instance, by each instance's
// activity and compute slices, with one idle counter for the GPU
// (SplitMIG, migenergy.go). It runs once per collection, after the
// Accountant, on the collection's goroutine.
//
// The window is the time between two collections: the counter's increase
// between the previous collection's reading and this one's (NVML
// nvmlDeviceGetTotalEnergyConsumption and DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION
// count millijoules "since the driver was last reloaded", nvml.h), and
// each container's SM share, Usage.SM: the sum of its processes'
// utilization "since the previous query" (nvml.h,
// nvmlDeviceGetProcessUtilization), the query of the previous collection.
// A container with share s_i of a GPU whose containers' shares sum to S
// is charged ΔE·s_i/max(S, 1); the rest, ΔE·(1-S) when S < 1, is idle.
// The split is by time on the SMs, not by power: a watt drawn while one
// process runs is not told apart from one drawn while another does, and a
// busy window's higher draw is shared by time like the rest. Shares that
// sum above 1 (MPS clients run at once; each process's integer percent
// rounds) are scaled down to sum to 1, and there is then no idle energy.
//
// Conservation: in every split window the containers' increases (over
// all of a MIG GPU's instances) plus the idle increase equal the GPU
// counter's increase, to floating-point rounding. Windows are not split,
// and neither the containers' nor the idle counters move (they are
// exported unchanged; a container first seen in such a window is exported
// at 0), when the GPU has no per-process utilization for the window (the
// first collection, a GPU without the call; under MIG: an instance
// without an activity reading), when the energy counter was not read, or
// when it went down (a driver reload restarts it).
//
// Reset semantics: a container's counter lives while its processes are on
// the GPU. A container with no process on the GPU at a collection is
// forgotten; if it comes back, its counter starts again from 0 plus its
// first window's share (Prometheus sees a new series: its first sample is
// not counted by rate() or increase(), at most one window's share). The
// idle counter lives while the GPU is in the inventory.
type EnergySplitter struct {
	gpus  map[string]*gpuEnergy
	round uint64
}

// gpuEnergy is one GPU's counters.
type gpuEnergy struct {
	// last is the energy counter at the previous reading, in joules; have
	// says there was one.
	last float64
	have bool
	// split is set once a window was split: idle and the holders'
	// counters exist from then on.
	split   bool
	idle    float64
	holders map[holder]float64
	round   uint64
	// activity is each GPU instance's activity at the previous reading
	// (MIG GPUs, SplitMIG), by GPU instance id.
	activity map[int]float64
}

// holder is a container on a GPU (instance -1) or on one of its GPU
// instances: the same container on two instances has two counters.
type holder struct {
	instance int
	Who
}

// Begin starts a collection.
func (e *EnergySplitter) Begin() {
	e.round++
	if e.gpus == nil {
		e.gpus = map[string]*gpuEnergy{}
	}
}

// End forgets the GPUs not split since Begin (gone from the inventory).
func (e *EnergySplitter) End() {
	for uuid, g := range e.gpus {
		if g.round != e.round {
			delete(e.gpus, uuid)
		}
	}
}

// Split charges the window that ends now on whole GPU d: joules is the
// GPU's energy counter at this collection, in joules, when ok. It sets
// d.EnergyKnown, d.IdleEnergyJoules and each container's EnergyJoules.
// MIG devices (d.GPUInstance >= 0) are left alone: their GPU has one
// energy counter, split between its instances by SplitMIG.
func (e *EnergySplitter) Split(d *DeviceUsage, joules float64, ok bool) {
	if d.GPUInstance >= 0 {
		return
	}
	g := e.gpu(d.UUID)
	delta := joules - g.last
	window := ok && g.have && delta >= 0 && d.Utilization
	if ok {
		g.last, g.have = joules, true
	} else {
		g.have = false
	}
	// Forget the holders gone since the previous collection.
	for h := range g.holders {
		if h.instance != -1 || !hasHolder(d.Containers, h.Who) {
			delete(g.holders, h)
		}
	}
	if window {
		g.split = true
		sum := 0.0
		for i := range d.Containers {
			sum += d.Containers[i].SM
		}
		scale := 1.0
		if sum > 1 {
			scale = 1 / sum
		}
		charged := 0.0
		for i := range d.Containers {
			c := &d.Containers[i]
			share := delta * c.SM * scale
			charged += share
			g.holders[holder{-1, c.Who}] += share
		}
		if idle := delta - charged; idle > 0 {
			g.idle += idle
		}
	}
	if !g.split {
		return
	}
	// From the first split on, the counters are exported at every
	// collection, unmoved in windows not split.
	d.EnergyKnown = true
	d.IdleEnergyJoules = g.idle
	for i := range d.Containers {
		c := &d.Containers[i]
		c.EnergyJoules = g.holders[holder{-1, c.Who}]
	}
}

// gpu returns the state of GPU uuid, marked as seen in this collection.
func (e *EnergySplitter) gpu(uuid string) *gpuEnergy {
	g := e.gpus[uuid]
	if g == nil {
		g = &gpuEnergy{holders: map[holder]float64{}}
		e.gpus[uuid] = g
	}
	g.round = e.round
	return g
}

func hasHolder(cs []Usage, who Who) bool {
	for i := range cs {
		if cs[i].Who == who {
			return true
		}
	}
	return false
}
