package sim

import (
	"math"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/rightsize"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Field ids the energy model reads and writes (dcgm_fields.h).
const (
	fieldPowerUsage  = 155  // DCGM_FI_DEV_POWER_USAGE, W
	fieldTotalEnergy = 156  // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ
	fieldPowerLimit  = 160  // DCGM_FI_DEV_POWER_MGMT_LIMIT, W
	fieldGRActive    = 1001 // DCGM_FI_PROF_GR_ENGINE_ACTIVE, ratio
)

// idleShare is the simulator's idle draw as a share of the power limit.
// The model is the simulator's own, not NVIDIA's: a GPU with processes
// draws idle + (limit - idle) x utilization, where utilization is the sum
// of its processes' SM utilization (gpuUtilization), and its energy
// counter grows by that power over the time since the previous Read. So
// energy moves with load, and a window's energy and the processes' shares
// in it come from the same values: per-process accounting's split adds
// up on the simulator exactly as NVML's documented semantics make it on
// a real GPU (processes.EnergySplitter). A GPU in MIG mode (in a scenario
// with processes) has no process utilization: its utilization is its
// instances' DCGM_FI_PROF_GR_ENGINE_ACTIVE in the same sample, each times
// its share of the GPU's compute slices (migLoad), the weights
// processes.EnergySplitter.SplitMIG charges by.
const idleShare = 0.2

// processEnergy sets, on every GPU with processes, DCGM_FI_DEV_POWER_USAGE
// to the model's power at t and DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION to
// the counter's value at t=0 plus the model's energy since. It needs the
// power limit and the energy counter in the watch set.
func (s *Source) processEnergy(smp *source.Sample, seg *segment, t time.Duration) {
	if len(s.scn.procs) == 0 {
		return
	}
	power, energy, limit, gr := -1, -1, -1, -1
	for c := range s.set {
		switch s.set[c].ID {
		case fieldPowerUsage:
			power = c
		case fieldTotalEnergy:
			energy = c
		case fieldPowerLimit:
			limit = c
		case fieldGRActive:
			gr = c
		}
	}
	if energy < 0 || limit < 0 {
		return
	}
	from := time.Duration(0)
	if s.read {
		from = s.lastRead
	}
	dt := max(t-from, 0).Seconds()
	if s.energy == nil {
		s.energy = map[int]float64{}
	}
	n := len(s.set)
	for r, e := range seg.rows {
		ent := &s.scn.entities[e]
		if ent.Kind != source.GPU {
			continue
		}
		u, ok := s.scn.gpuUtilization(ent.GPU, t)
		if !ok && gr >= 0 {
			u, ok = s.migLoad(smp, seg, ent, gr)
		}
		lim, eng := s.plan[e*n+limit], s.plan[e*n+energy]
		if !ok || lim == nil || eng == nil {
			continue
		}
		var v source.Value
		lim.fill(t, &v)
		limW, _ := v.Number()
		watts := limW*idleShare + limW*(1-idleShare)*u/100
		s.energy[e] += watts * dt * 1000
		eng.fill(0, &v)
		start, _ := v.Number()
		smp.Set(r, energy, source.IntValue(int64(math.Round(start+s.energy[e]))))
		if power >= 0 {
			smp.Set(r, power, source.FloatValue(watts))
		}
	}
}

// migLoad is the load of MIG GPU gpu in sample smp, in percent: the sum
// over its instances of their graphics-engine activity (column gr; blank
// is 0) times their compute slices over the GPU's. ok is false for a GPU
// without instances, or whose slices pkg/rightsize does not know.
func (s *Source) migLoad(smp *source.Sample, seg *segment, gpu *source.Entity, gr int) (float64, bool) {
	total, ok := rightsize.ComputeSlices(gpu.Model)
	if !ok {
		return 0, false
	}
	n := len(s.set)
	sum, any := 0.0, false
	for r, e := range seg.rows {
		in := &s.scn.entities[e]
		if in.Kind != source.GPUInstance || in.GPU != gpu.GPU {
			continue
		}
		any = true
		slices, _ := rightsize.ProfileSlices(in.MIGProfile)
		a, _ := smp.Values[r*n+gr].Number()
		sum += min(max(a, 0), 1) * float64(slices) / float64(total)
	}
	return min(sum, 1) * 100, any
}
