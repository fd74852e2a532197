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
	// IdleEnergyJoules is the GPU's energy charged to no container, a
	// counter, when EnergyKnown: on a GPU entity only (a MIG GPU's is its
	// GPU's, not its instances').
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

// The energy and orphan families of Prometheus naming (none in dcgm
// naming, which has no per-container families: containers.go).
var (
	// containerEnergyFamily is gpu_container_energy_joules_total:
	// Input.Containers.
	containerEnergyFamily = Family{
		Name: "gpu_container_energy_joules_total", Type: fields.Counter, Naming: NamingPrometheus,
		Help:   "The container's share of the GPU's energy (gpu_energy_joules_total), split between the GPU's containers by their SM share over each collection interval; on a GPU in MIG mode, between its instances by graphics-engine activity times compute slices, then between an instance's containers (by their device memory when several). The energy no container is charged is in gpu_idle_energy_joules_total. Starts at 0 when the container first has processes on the GPU or instance. Whole GPUs with per-process utilization, and MIG instances with gpu_graphics_engine_active_ratio. pod=\"\" container=\"\" is the host's processes.",
		Labels: usageLabelNames, Optional: usageOptional,
		render: func(p *pageWriter, in Input, f family) {
			for i, l := range p.usageLabels(in) {
				if u := &in.Containers[i]; u.EnergyKnown {
					p.line(&f, l, "", "", u.EnergyJoules)
				}
			}
		},
	}
	// idleEnergyFamily is gpu_idle_energy_joules_total: Input.Accounting.
	idleEnergyFamily = Family{
		Name: "gpu_idle_energy_joules_total", Type: fields.Counter, Naming: NamingPrometheus,
		Help:   "The GPU's energy (gpu_energy_joules_total) charged to no container: spent while no process was on its SMs; in MIG mode, one counter per GPU for the time its instances' engines were idle, the compute slices no instance holds and instances without processes. With gpu_container_energy_joules_total (of all the GPU's instances) it adds up to the GPU's energy since the split started.",
		Labels: []string{EntityLabels},
		render: func(p *pageWriter, in Input, f family) {
			for i, l := range p.deviceLabels(in) {
				if a := &in.Accounting[i]; a.EnergyKnown {
					p.line(&f, l, "", "", a.IdleEnergyJoules)
				}
			}
		},
	}
	// orphanProcessesFamily is gpu_orphan_processes: Input.Accounting.
	orphanProcessesFamily = Family{
		Name: "gpu_orphan_processes", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "GPU processes that belong to no running pod, by reason: pod_gone (in the cgroup of a pod the Kubernetes API no longer knows), host (a compute process outside every pod; display servers are not counted). Only with the pod informer.",
		Labels: []string{EntityLabels, "reason"},
		render: func(p *pageWriter, in Input, f family) {
			for i, l := range p.deviceLabels(in) {
				if a := &in.Accounting[i]; a.OrphansKnown {
					for r, reason := range orphanReasons {
						p.line(&f, l, "reason", reason, a.Orphans[r])
					}
				}
			}
		},
	}
	// orphanMemoryFamily is gpu_orphan_memory_used_bytes: Input.Accounting.
	orphanMemoryFamily = Family{
		Name: "gpu_orphan_memory_used_bytes", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "Device memory held by the GPU's orphan processes (see gpu_orphan_processes), by reason.",
		Labels: []string{EntityLabels, "reason"},
		render: func(p *pageWriter, in Input, f family) {
			for i, l := range p.deviceLabels(in) {
				if a := &in.Accounting[i]; a.OrphansKnown {
					for r, reason := range orphanReasons {
						p.line(&f, l, "reason", reason, a.OrphanMemoryBytes[r])
					}
				}
			}
		},
	}
)

// deviceLabels returns the entity labels of in.Accounting, built once per
// page for the families of device rows.
func (p *pageWriter) deviceLabels(in Input) [][]byte {
	if p.devices == nil && len(in.Accounting) > 0 {
		p.devices = make([][]byte, len(in.Accounting))
		for i := range in.Accounting {
			p.devices[i] = entityLabels(nil, &in.Sample.Inventory.Entities[in.Accounting[i].Entity], nil)
		}
	}
	return p.devices
}
