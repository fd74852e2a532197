package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// ProcessSampler serves the scenario's processes through
// processes.Sampler, as NVML would, and keeps a fake procfs tree of them
// under its root so that processes.Resolver reads real files. It also
// names pods and containers as the Kubernetes API would
// (processes.PodLookup), from the scenario's pods. Calls come from one
// goroutine (the collector).
type ProcessSampler struct {
	src  *Source
	root string
	// written are the PIDs in the tree, with the start time written.
	written map[uint32]uint64
}

var (
	_ processes.Sampler   = (*ProcessSampler)(nil)
	_ processes.PodLookup = (*ProcessSampler)(nil)
	_ processes.Simulated = (*Source)(nil)
)

// ProcessSampler returns a sampler of the scenario's processes writing its
// procfs tree under root, an existing directory the caller owns.
func (s *Source) ProcessSampler(root string) (*ProcessSampler, error) {
	if root == "" {
		return nil, errors.New("sim: process sampler needs a procfs directory")
	}
	return &ProcessSampler{src: s, root: root, written: map[uint32]uint64{}}, nil
}

// SimulatedProcesses is ProcessSampler for process accounting, which
// knows the simulated node by this method alone.
func (s *Source) SimulatedProcesses(procfs string) (processes.SimulatedSampler, error) {
	ps, err := s.ProcessSampler(procfs)
	if err != nil {
		return nil, err
	}
	return ps, nil
}

// HasProcesses reports whether the scenario runs processes on its GPUs.
func (s *Source) HasProcesses() bool { return len(s.scn.procs) > 0 }

// at is the elapsed time the sample describes: that of the source's last
// Read, so that the processes' utilization and the device's agree
// exactly; the current time before the first Read.
func (p *ProcessSampler) at() time.Duration {
	if p.src.read {
		return p.src.lastRead
	}
	return p.src.Elapsed()
}

// Sample lists the processes on each GPU and MIG instance of the current
// inventory. Whole GPUs report per-process utilization (a process with SM
// 0 has no sample, as NVML returns samples only for processes with
// non-zero utilization); MIG instances do not, as NVML does not.
func (p *ProcessSampler) Sample(ctx context.Context) ([]processes.Device, error) {
	if _, err := p.src.checkAt(ctx, p.src.now()); err != nil {
		return nil, err // an outage: NVML fails with the driver
	}
	t := p.at()
	if err := p.writeTree(t); err != nil {
		return nil, err
	}
	inv := p.src.scn.segmentAt(t).inv
	var devs []processes.Device
	for i := range inv.Entities {
		e := &inv.Entities[i]
		switch {
		case e.Kind == source.GPU && !hasInstances(inv, e.GPU):
			devs = append(devs, processes.Device{GPU: e.GPU, UUID: e.UUID, GPUInstance: -1, Utilization: true})
		case e.Kind == source.GPUInstance:
			devs = append(devs, processes.Device{GPU: e.GPU, UUID: e.UUID, GPUInstance: e.GPUInstance, MIGUUID: e.MIGUUID})
		}
	}
	// GPUs by index, each followed by its MIG devices, as the interface says.
	slices.SortStableFunc(devs, func(a, b processes.Device) int {
		return cmp.Or(cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.GPUInstance, b.GPUInstance))
	})
	for i := range p.src.scn.procs {
		r := &p.src.scn.procs[i]
		if !r.presentAt(t) {
			continue
		}
		k := slices.IndexFunc(devs, func(d processes.Device) bool { return d.GPU == r.proc.gpu && d.GPUInstance == r.proc.gi })
		if k < 0 {
			continue // its GPU is lost
		}
		d := &devs[k]
		proc := processes.Process{PID: r.proc.pid, Type: r.proc.typ,
			UsedBytes: uint64(procSpecAt(r.proc.memory, t) * (1 << 20)), UsedKnown: true}
		if d.Utilization {
			proc.SM = procSpecAt(r.proc.sm, t)
			proc.Sampled = proc.SM > 0
		}
		d.Processes = append(d.Processes, proc)
	}
	return devs, nil
}

func hasInstances(inv *source.Inventory, gpu int) bool {
	return slices.ContainsFunc(inv.Entities, func(e source.Entity) bool { return e.Kind == source.GPUInstance && e.GPU == gpu })
}

// writeTree writes the processes present at t and removes the others, as
// the kernel creates and reaps /proc/<pid>.
func (p *ProcessSampler) writeTree(t time.Duration) error {
	present := map[uint32]bool{}
	for i := range p.src.scn.procs {
		r := &p.src.scn.procs[i]
		if !r.presentAt(t) {
			continue
		}
		present[r.proc.pid] = true
		start := r.startAt(t)
		old, ok := p.written[r.proc.pid]
		if ok && old == start {
			continue
		}
		if ok {
			// Another process takes the PID: the kernel reaps the old
			// one first, and its held files stop answering.
			if err := processes.RemoveProcess(p.root, r.proc.pid); err != nil {
				return fmt.Errorf("sim: %w", err)
			}
		}
		if err := processes.WriteProcess(p.root, r.proc.pid, r.proc.comm, start, r.proc.cgroup); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if err := processes.WriteEnviron(p.root, r.proc.pid, r.proc.env); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		p.written[r.proc.pid] = start
	}
	for pid := range p.written {
		if present[pid] {
			continue
		}
		if err := processes.RemoveProcess(p.root, pid); err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		delete(p.written, pid)
	}
	return nil
}

// LookupContainer names a pod of the scenario present now by UID, and its
// container by the runtime id the simulator gave it.
func (p *ProcessSampler) LookupContainer(podUID, cid string) (podlabels.ContainerRef, bool) {
	t := p.at()
	for i := range p.src.scn.pods {
		pt := &p.src.scn.pods[i]
		if pt.pod.UID != podUID || !pt.presentAt(t) {
			continue
		}
		ref := podlabels.ContainerRef{Namespace: pt.pod.Namespace, Pod: pt.pod.Name}
		for _, c := range pt.pod.Containers {
			if containerID(p.src.scn.name, pt.pod.UID, c.Name) == cid {
				ref.Container = c.Name
			}
		}
		return ref, true
	}
	return podlabels.ContainerRef{}, false
}

// Close removes the processes' files; the caller removes root.
func (p *ProcessSampler) Close() error {
	var errs []error
	for pid := range p.written {
		errs = append(errs, processes.RemoveProcess(p.root, pid))
	}
	clear(p.written)
	return errors.Join(errs...)
}
