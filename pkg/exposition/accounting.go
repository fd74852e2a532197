package exposition

import "github.com/gpu-exporter/gpu-exporter/pkg/fields"

// DeviceAccounting is what process accounting tells of one GPU or MIG
// instance as a whole.
type DeviceAccounting struct {
	// Entity is the GPU or MIG instance, an index into the sample's
	// inventory.
	Entity int
	// Orphans counts the orphan processes by reason, and OrphanMemoryBytes
	// the device memory they hold, when OrphansKnown (with a pod informer;
	// docs/shared-gpus.md says what an orphan is).
	Orphans           [NumOrphanReasons]float64
	OrphanMemoryBytes [NumOrphanReasons]float64
	OrphansKnown      bool
	// IdleEnergyJoules is the GPU's energy spent while no process was on
	// its SMs, a counter, when EnergyKnown.
	IdleEnergyJoules float64
	EnergyKnown      bool
}

// Orphan reasons, the reason label of the orphan families.
const (
	OrphanPodGone = iota
	OrphanHost
	NumOrphanReasons
)

// orphanReasons are the label values, by reason.
var orphanReasons = [NumOrphanReasons]string{"pod_gone", "host"}

// declareAccountingFamilies declares the energy and orphan families of
// Prometheus naming (none in dcgm naming, which has no per-container
// families: containers.go).
func declareAccountingFamilies(d *[numFamilies]Family, usage, optional []string) {
	d[famContainerEnergy] = Family{
		Name: "gpu_container_energy_joules_total", Type: fields.Counter, Naming: NamingPrometheus,
		Help:   "The container's share of the GPU's energy (gpu_energy_joules_total), split between the GPU's containers by their SM share over each collection interval; the energy of the time no process was on the SMs is in gpu_idle_energy_joules_total. Starts at 0 when the container first has processes on the GPU. Whole GPUs with per-process utilization only (not MIG). pod=\"\" container=\"\" is the host's processes.",
		Labels: usage, Optional: optional,
	}
	d[famIdleEnergy] = Family{
		Name: "gpu_idle_energy_joules_total", Type: fields.Counter, Naming: NamingPrometheus,
		Help:   "The GPU's energy (gpu_energy_joules_total) spent while no process was on its SMs, charged to no container; with gpu_container_energy_joules_total it adds up to the GPU's energy since the split started.",
		Labels: []string{EntityLabels},
	}
	d[famOrphanProcesses] = Family{
		Name: "gpu_orphan_processes", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "GPU processes that belong to no running pod, by reason: pod_gone (in the cgroup of a pod the Kubernetes API no longer knows), host (a compute process outside every pod; display servers are not counted). Only with the pod informer.",
		Labels: []string{EntityLabels, "reason"},
	}
	d[famOrphanMemory] = Family{
		Name: "gpu_orphan_memory_used_bytes", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "Device memory held by the GPU's orphan processes (see gpu_orphan_processes), by reason.",
		Labels: []string{EntityLabels, "reason"},
	}
}

// renderAccounting writes the energy and orphan families; labels are the
// container rows' label sets (renderContainers).
func (p *pageWriter) renderAccounting(in Input, labels [][]byte) {
	energy := p.family(famContainerEnergy)
	for i, u := range in.Containers {
		if u.EnergyKnown {
			p.line(&energy, labels[i], "", "", u.EnergyJoules)
		}
	}
	if len(in.Accounting) == 0 {
		return
	}
	dev := make([][]byte, len(in.Accounting))
	for i := range in.Accounting {
		dev[i] = entityLabels(nil, &in.Sample.Inventory.Entities[in.Accounting[i].Entity], nil)
	}
	idle := p.family(famIdleEnergy)
	for i, a := range in.Accounting {
		if a.EnergyKnown {
			p.line(&idle, dev[i], "", "", a.IdleEnergyJoules)
		}
	}
	count := p.family(famOrphanProcesses)
	for i, a := range in.Accounting {
		if a.OrphansKnown {
			for r, reason := range orphanReasons {
				p.line(&count, dev[i], "reason", reason, a.Orphans[r])
			}
		}
	}
	mem := p.family(famOrphanMemory)
	for i, a := range in.Accounting {
		if a.OrphansKnown {
			for r, reason := range orphanReasons {
				p.line(&mem, dev[i], "reason", reason, a.OrphanMemoryBytes[r])
			}
		}
	}
}
