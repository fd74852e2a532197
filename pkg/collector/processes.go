package collector

import (
	"context"
	"errors"
	"math"
	"strconv"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// ProcessAccounting attributes the processes on each GPU to containers
// once per collection; processes.Accountant is the implementation.
type ProcessAccounting interface {
	Collect(ctx context.Context) ([]processes.DeviceUsage, error)
}

// deviceKey finds an inventory entity from a process accounting device:
// the GPU's UUID, and the GPU instance for a MIG device (-1 for a GPU).
type deviceKey struct {
	uuid string
	gi   int
}

// processUsage runs process accounting and turns its result into
// per-container (and per-process) rows of the sample's entities. A failure
// is counted (stage "processes") and logged when it starts and ends; the
// collection goes on with what could be read. Accounting unavailable on
// the node (processes.ErrUnavailable) is no failure.
func (c *Collector) processUsage(ctx context.Context, s *source.Sample, want bool) (containers, procs []exposition.ContainerUsage, devices []exposition.DeviceAccounting) {
	if c.cfg.Processes == nil || !want {
		return nil, nil, nil
	}
	inv := s.Inventory
	// --collect.timeout bounds the whole collection: accounting gets what
	// the source read left of it.
	pctx, cancel := context.WithDeadline(ctx, c.started.Add(c.cfg.Timeout))
	defer cancel()
	devs, err := c.cfg.Processes.Collect(pctx)
	if err != nil && ctx.Err() != nil {
		return nil, nil, nil // the exporter is stopping: not a failure of accounting
	}
	if errors.Is(err, processes.ErrUnavailable) {
		// A state of the node (no NVML), not a failed collection: the
		// accountant reports it (gpu_exporter_process_accounting_available
		// 0, one warning) and retries with back-off.
		c.procFailed = false
		return nil, nil, nil
	}
	if err != nil {
		// One failed collection, however many GPUs failed in it: the
		// stage counts collections, as the other stages do.
		c.m.errors.WithLabelValues("processes").Inc()
		c.logProcessFailure(err)
	} else if c.procFailed {
		c.logger.Info("GPU process accounting works again")
	}
	c.procFailed = err != nil
	if inv != c.procInv {
		c.procInv = inv
		c.procIndex = make(map[deviceKey]int, len(inv.Entities))
		for i := range inv.Entities {
			e := &inv.Entities[i]
			switch e.Kind {
			case source.GPU:
				c.procIndex[deviceKey{e.UUID, -1}] = i
			case source.GPUInstance:
				c.procIndex[deviceKey{e.UUID, e.GPUInstance}] = i
			}
		}
	}
	energy := energyColumn(s)
	c.energy.Begin()
	if energy >= 0 && devs != nil {
		devices = c.mig.split(&c.energy, s, devs, energy, devices)
	}
	for i := range devs {
		d := &devs[i]
		entity, ok := c.procIndex[deviceKey{d.UUID, d.GPUInstance}]
		if !ok {
			continue // left out by --collect.gpus, or not in the source's inventory
		}
		if energy >= 0 {
			joules, ok := s.Values[entity*len(s.Fields)+energy].Number()
			c.energy.Split(d, s.Fields[energy].Scaled(joules), ok)
		}
		for _, u := range d.Containers {
			row := usageRow(entity, inv.Entities[entity].MemoryBytes, d.Utilization, u)
			row.EnergyJoules, row.EnergyKnown = u.EnergyJoules, d.EnergyKnown
			containers = append(containers, row)
		}
		for _, u := range d.Processes {
			procs = append(procs, usageRow(entity, inv.Entities[entity].MemoryBytes, d.Utilization, u))
		}
		if d.OrphansKnown || d.EnergyKnown && d.GPUInstance < 0 {
			devices = append(devices, deviceRow(entity, d))
		}
	}
	// A failed collection (devs nil) splits nothing: the GPUs' last
	// readings stay, and the next window spans the gap.
	if devs != nil {
		c.energy.End()
	}
	return containers, procs, devices
}

// energyColumn returns the sample's column of the GPU energy counter
// (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, gpu_energy_joules_total), or -1
// when it is not collected: energy is then not split.
func energyColumn(s *source.Sample) int {
	for i := range s.Fields {
		if s.Fields[i].ID == energyFieldID {
			return i
		}
	}
	return -1
}

// energyFieldID is DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (dcgm_fields.h),
// millijoules since the driver was loaded; pkg/fields scales it to joules.
const energyFieldID = 156

// deviceRow is what accounting tells of device d as a whole.
func deviceRow(entity int, d *processes.DeviceUsage) exposition.DeviceAccounting {
	a := exposition.DeviceAccounting{Entity: entity, OrphansKnown: d.OrphansKnown,
		IdleEnergyJoules: d.IdleEnergyJoules, EnergyKnown: d.EnergyKnown && d.GPUInstance < 0}
	a.Orphans[exposition.OrphanPodGone] = float64(d.Orphans[processes.OrphanPodGone].Processes)
	a.Orphans[exposition.OrphanHost] = float64(d.Orphans[processes.OrphanHost].Processes)
	a.OrphanMemoryBytes[exposition.OrphanPodGone] = float64(d.Orphans[processes.OrphanPodGone].MemoryBytes)
	a.OrphanMemoryBytes[exposition.OrphanHost] = float64(d.Orphans[processes.OrphanHost].MemoryBytes)
	return a
}

// logProcessFailure logs a failed process accounting: a failure of the
// whole node once when it starts; the failures of single GPUs (one fallen
// off the bus) per GPU, at most once a window each, so that a second GPU
// failing while the first still does is logged too.
func (c *Collector) logProcessFailure(err error) {
	des := processes.DeviceErrors(err)
	if len(des) == 0 {
		if !c.procFailed {
			c.logger.Warn("GPU process accounting failed; per-container usage is incomplete until it works", "err", err)
		}
		return
	}
	for _, de := range des {
		args := []any{"gpu", de.GPU, "uuid", de.UUID, "err", de.Err}
		if de.MIGUUID != "" {
			args = append(args, "mig_uuid", de.MIGUUID)
		}
		c.procLogs.Warn("processes-gpu-"+strconv.Itoa(de.GPU),
			"GPU process accounting cannot read a GPU; its per-container usage is left out while the other GPUs' is exported", args...)
	}
}

// usageRow is the row of u on entity, whose total memory is totalMemory
// (0 when unknown).
func usageRow(entity int, totalMemory uint64, util bool, u processes.Usage) exposition.ContainerUsage {
	return exposition.ContainerUsage{
		Entity: entity, Namespace: u.Namespace, Pod: u.Pod, Container: u.Container,
		PodUID: u.PodUID, ContainerID: u.ContainerID, PID: u.PID, Processes: u.Processes,
		Utilization: u.SM, UtilizationKnown: util, MemoryBytes: float64(u.MemoryBytes), MemoryKnown: u.MemoryKnown,
		Mechanism: u.Mechanism.String(), MemoryLimitBytes: memoryLimit(u, totalMemory), SMLimit: u.SMLimit,
	}
}

// memoryLimit is the device memory a mechanism gave u in bytes: its limit
// in bytes, else its share of the device's memory (KAI's GPU_PORTION, a
// share of each device the container was given) of totalMemory: the
// memory of the device the processes run on, the GPU's, or the MIG
// instance's where NVML lists them on one. A share with the total memory
// unknown (0) gives no limit, so no series. Whole bytes, rounded down.
func memoryLimit(u processes.Usage, totalMemory uint64) float64 {
	if u.MemoryLimitBytes > 0 {
		return float64(u.MemoryLimitBytes)
	}
	return math.Floor(u.MemoryShare * float64(totalMemory))
}
