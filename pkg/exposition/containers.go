package exposition

import (
	"strconv"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// ContainerUsage is what the processes of one container (or one process)
// use of one entity, from process accounting: the share of a shared GPU
// (time-slicing, MPS) the container really uses.
type ContainerUsage struct {
	// Entity is the GPU or MIG instance, an index into the sample's
	// inventory.
	Entity int
	// Namespace, Pod and Container name the container; all empty for the
	// host's processes. PodUID and ContainerID stand in for names the
	// Kubernetes API did not give.
	Namespace, Pod, Container string
	PodUID, ContainerID       string
	// PID is the process of a per-process row; 0 in container rows.
	PID uint32
	// Processes is the number of processes.
	Processes int
	// Utilization is the SM time share, a ratio 0-1, when
	// UtilizationKnown.
	Utilization      float64
	UtilizationKnown bool
	// MemoryBytes is the device memory used, when MemoryKnown.
	MemoryBytes float64
	MemoryKnown bool
	// EnergyJoules is the container's share of the GPU's energy, a
	// counter, when EnergyKnown (container rows only; accounting.go).
	EnergyJoules float64
	EnergyKnown  bool
	// Mechanism names the sharing mechanism ("mps", "hami", "kai") that
	// gave the container MemoryLimitBytes and SMLimit of the entity (0:
	// none of that kind); empty when none did (container rows only).
	Mechanism        string
	MemoryLimitBytes float64
	SMLimit          float64
}

// The process accounting families of Prometheus naming. dcgm-exporter
// has no per-process or per-container usage families (its maintainers,
// NVIDIA/dcgm-exporter issues 109 and 94: per-PID stats are not a
// feature), so dcgm naming exports none.
var (
	usageLabelNames        = []string{EntityLabels, "namespace", "pod", "container", "pod_uid", "container_id"}
	usageOptional          = []string{"pod_uid", "container_id"}
	processUsageLabelNames = append(append([]string(nil), usageLabelNames...), "pid")

	// containerUtilizationFamily is gpu_container_utilization_ratio:
	// Input.Containers.
	containerUtilizationFamily = Family{
		Name: "gpu_container_utilization_ratio", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "Share of the GPU's SM time used by the container's processes since the previous collection (per-process accounting, 0-1); on a shared GPU the containers' values add up to the GPU's utilization over the same time, not to gpu_utilization_ratio's last sample period. pod=\"\" container=\"\" is the host's processes.",
		Labels: usageLabelNames, Optional: usageOptional,
		render: func(p *pageWriter, in Input, f family) {
			for i, l := range p.usageLabels(in) {
				if u := &in.Containers[i]; u.UtilizationKnown {
					p.line(&f, l, "", "", u.Utilization)
				}
			}
		},
	}
	// containerMemoryFamily is gpu_container_memory_used_bytes:
	// Input.Containers.
	containerMemoryFamily = Family{
		Name: "gpu_container_memory_used_bytes", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "Device memory used by the container's processes on the GPU or MIG instance (per-process accounting). pod=\"\" container=\"\" is the host's processes.",
		Labels: usageLabelNames, Optional: usageOptional,
		render: func(p *pageWriter, in Input, f family) {
			for i, l := range p.usageLabels(in) {
				if u := &in.Containers[i]; u.MemoryKnown {
					p.line(&f, l, "", "", u.MemoryBytes)
				}
			}
		},
	}
	// containerProcessesFamily is gpu_container_processes:
	// Input.Containers.
	containerProcessesFamily = Family{
		Name: "gpu_container_processes", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "Processes of the container using the GPU or MIG instance (per-process accounting). pod=\"\" container=\"\" is the host's processes.",
		Labels: usageLabelNames, Optional: usageOptional,
		render: func(p *pageWriter, in Input, f family) {
			for i, l := range p.usageLabels(in) {
				p.line(&f, l, "", "", float64(in.Containers[i].Processes))
			}
		},
	}
	// containerMemoryLimitFamily is gpu_container_memory_limit_bytes:
	// Input.Containers with a mechanism's memory limit.
	containerMemoryLimitFamily = Family{
		Name: "gpu_container_memory_limit_bytes", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "Device memory the sharing mechanism gave the container's processes on the GPU or MIG instance, beside gpu_container_memory_used_bytes: mechanism=\"mps\" from CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, mechanism=\"hami\" from HAMi's CUDA_DEVICE_MEMORY_LIMIT(_<i>), mechanism=\"kai\" from KAI Scheduler's GPU_PORTION times the device's total memory (a share KAI schedules by and does not enforce), read from the environment each process started with. Only where a limit is set and known for the device, with per-process accounting.",
		Labels: append(append([]string(nil), usageLabelNames...), "mechanism"), Optional: usageOptional,
		render: func(p *pageWriter, in Input, f family) {
			for i, l := range p.usageLabels(in) {
				if u := &in.Containers[i]; u.Mechanism != "" && u.MemoryLimitBytes > 0 {
					p.line(&f, l, "mechanism", u.Mechanism, u.MemoryLimitBytes)
				}
			}
		},
	}
	// containerSMLimitFamily is gpu_container_sm_limit_ratio:
	// Input.Containers with a mechanism's SM share.
	containerSMLimitFamily = Family{
		Name: "gpu_container_sm_limit_ratio", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "Share of the GPU's SMs (0-1) the sharing mechanism gave the container's processes, beside gpu_container_utilization_ratio: mechanism=\"mps\" from CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, mechanism=\"hami\" from HAMi's CUDA_DEVICE_SM_LIMIT(_<i>), read from the environment each process started with. Only where a limit is set, with per-process accounting.",
		Labels: append(append([]string(nil), usageLabelNames...), "mechanism"), Optional: usageOptional,
		render: func(p *pageWriter, in Input, f family) {
			for i, l := range p.usageLabels(in) {
				if u := &in.Containers[i]; u.Mechanism != "" && u.SMLimit > 0 {
					p.line(&f, l, "mechanism", u.Mechanism, u.SMLimit)
				}
			}
		},
	}
	// processUtilizationFamily is gpu_process_utilization_ratio:
	// Input.Processes.
	processUtilizationFamily = Family{
		Name: "gpu_process_utilization_ratio", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "Share of the GPU's SM time used by one process since the previous collection (0-1); only with --collect.processes=process.",
		Labels: processUsageLabelNames, Optional: usageOptional,
		render: func(p *pageWriter, in Input, f family) {
			for i, l := range p.processLabels(in) {
				if u := &in.Processes[i]; u.UtilizationKnown {
					p.line(&f, l, "pid", strconv.FormatUint(uint64(u.PID), 10), u.Utilization)
				}
			}
		},
	}
	// processMemoryFamily is gpu_process_memory_used_bytes:
	// Input.Processes.
	processMemoryFamily = Family{
		Name: "gpu_process_memory_used_bytes", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "Device memory used by one process; only with --collect.processes=process.",
		Labels: processUsageLabelNames, Optional: usageOptional,
		render: func(p *pageWriter, in Input, f family) {
			for i, l := range p.processLabels(in) {
				if u := &in.Processes[i]; u.MemoryKnown {
					p.line(&f, l, "pid", strconv.FormatUint(uint64(u.PID), 10), u.MemoryBytes)
				}
			}
		},
	}
)

// usageLabels returns the label sets of in.Containers, built once per
// page for the families of container rows.
func (p *pageWriter) usageLabels(in Input) [][]byte {
	if p.usage == nil && len(in.Containers) > 0 {
		p.usage = make([][]byte, len(in.Containers))
		for i := range in.Containers {
			p.usage[i] = appendUsageLabels(nil, in, &in.Containers[i])
		}
	}
	return p.usage
}

// processLabels returns the label sets of in.Processes, built once per
// page for the families of process rows.
func (p *pageWriter) processLabels(in Input) [][]byte {
	if p.processes == nil && len(in.Processes) > 0 {
		p.processes = make([][]byte, len(in.Processes))
		for i := range in.Processes {
			p.processes[i] = appendUsageLabels(nil, in, &in.Processes[i])
		}
	}
	return p.processes
}

// appendUsageLabels appends the entity's labels, then the container's.
func appendUsageLabels(b []byte, in Input, u *ContainerUsage) []byte {
	b = entityLabels(b, &in.Sample.Inventory.Entities[u.Entity], nil)
	b = appendLabel(b, false, "namespace", u.Namespace)
	b = appendLabel(b, false, "pod", u.Pod)
	b = appendLabel(b, false, "container", u.Container)
	if u.PodUID != "" {
		b = appendLabel(b, false, "pod_uid", u.PodUID)
	}
	if u.ContainerID != "" {
		b = appendLabel(b, false, "container_id", u.ContainerID)
	}
	return b
}

// ExportsProcesses reports whether naming exports the process accounting
// families, so that process accounting runs only where it shows.
func ExportsProcesses(naming Naming) bool {
	return containerUtilizationFamily.Naming == naming
}

// WantsProcesses reports whether the renderer's naming exports the process
// accounting families (Input.Containers, Input.Processes).
func (r *Renderer) WantsProcesses() bool {
	return containerUtilizationFamily.Naming == r.opts.Naming
}
