package collector

import (
	"context"
	"errors"

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
func (c *Collector) processUsage(ctx context.Context, inv *source.Inventory, want bool) (containers, procs []exposition.ContainerUsage) {
	if c.cfg.Processes == nil || !want {
		return nil, nil
	}
	// --collect.timeout bounds the whole collection: accounting gets what
	// the source read left of it.
	pctx, cancel := context.WithDeadline(ctx, c.started.Add(c.cfg.Timeout))
	defer cancel()
	devs, err := c.cfg.Processes.Collect(pctx)
	if errors.Is(err, processes.ErrUnavailable) {
		// A state of the node (no NVML), not a failed collection: the
		// accountant reports it (gpu_exporter_process_accounting_available
		// 0, one warning) and retries with back-off.
		c.procFailed = false
		return nil, nil
	}
	if err != nil {
		c.m.errors.WithLabelValues("processes").Inc()
		if !c.procFailed {
			c.logger.Warn("GPU process accounting failed; per-container usage is incomplete until it works", "err", err)
		}
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
	for _, d := range devs {
		entity, ok := c.procIndex[deviceKey{d.UUID, d.GPUInstance}]
		if !ok {
			continue // left out by --collect.gpus, or not in the source's inventory
		}
		for _, u := range d.Containers {
			containers = append(containers, usageRow(entity, d.Utilization, u))
		}
		for _, u := range d.Processes {
			procs = append(procs, usageRow(entity, d.Utilization, u))
		}
	}
	return containers, procs
}

func usageRow(entity int, util bool, u processes.Usage) exposition.ContainerUsage {
	return exposition.ContainerUsage{
		Entity: entity, Namespace: u.Namespace, Pod: u.Pod, Container: u.Container,
		PodUID: u.PodUID, ContainerID: u.ContainerID, PID: u.PID, Processes: u.Processes,
		Utilization: u.SM, UtilizationKnown: util, MemoryBytes: float64(u.MemoryBytes), MemoryKnown: u.MemoryKnown,
	}
}
