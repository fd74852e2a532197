package doctor

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
)

// Processes is the process accounting configuration to check.
type Processes struct {
	// Mode is --collect.processes; Given says it was set (flag or
	// environment), not left at its default: a failure of what it needs
	// is then a fail, else a warn (as --kubernetes.enabled true and auto).
	Mode  processes.Mode
	Given bool
	// Naming is --naming; Runs says that naming runs process accounting
	// (exposition.ExportsProcesses: not dcgm).
	Naming string
	Runs   bool
	// Sampling returns the process sampling the Opener started beside the
	// source; nil when it started none (the source failed to open).
	Sampling func() *ProcessSampling
}

// ProcessSampling is process sampling as the exporter opens it.
type ProcessSampling struct {
	// Sampler lists the processes on each GPU.
	Sampler processes.Sampler
	// Procfs is where their PIDs are resolved: --path.procfs, or the
	// simulator's fake tree.
	Procfs string
	// HostPIDs says the sampler reports the host's PIDs (NVML), so that
	// Procfs must show the host's PID namespace.
	HostPIDs bool
	// Pods says the source names pods and containers itself (the
	// simulator).
	Pods bool
}

// procfsFix is the fix for a procfs that does not show the host's PIDs.
const procfsFix = "run the exporter with hostPID: true and the host's /proc mounted read-only, with --path.procfs pointing at it (the chart does both with processAccounting.enabled; the overlay deployment/kubernetes/overlays/process-accounting too), or set --collect.processes=off"

// checkProcesses says whether per-container process accounting will work
// with these flags: whether it runs at all, whether NVML loads and lists
// the GPUs' processes, whether --path.procfs can be read and shows the
// host's PID namespace, and how pods and containers will be named.
func checkProcesses(ctx context.Context, cfg Config) Result {
	p := cfg.Processes
	res := Result{Check: CheckProcesses}
	switch {
	case p.Mode == processes.ModeOff:
		res.Status, res.Found = OK, "skipped: process accounting is off (--collect.processes=off)"
		return res
	case !p.Runs:
		// --collect.processes=process under it is refused with the flags.
		res.Status, res.Found = OK, fmt.Sprintf("skipped: --naming=%s does not run process accounting (dcgm-exporter has no per-container families): --collect.processes=%s has no effect", p.Naming, p.Mode)
		if p.Given {
			res.Status, res.Fix = Warn, "drop --collect.processes, or use --naming=prometheus for gpu_container_* families"
		}
		return res
	}
	needed := Warn
	if p.Given {
		needed = Fail
	}
	var ps *ProcessSampling
	if p.Sampling != nil {
		ps = p.Sampling()
	}
	if ps == nil || ps.Sampler == nil {
		res.Status, res.Found = Warn, "not checked: process sampling opens beside the GPU source, which did not open"
		res.Fix = "fix the gpu-source check first"
		return res
	}
	mode := fmt.Sprintf("--collect.processes=%s", p.Mode)
	// procfs reads can block (a process stuck in the kernel, a hung
	// mount): each step is bounded by the check's deadline.
	cctx, cancel := withTimeout(ctx, cfg)
	defer cancel()
	if !ps.HostPIDs {
		res.Details = append(res.Details, "simulated processes, resolved in the simulator's own procfs tree "+ps.Procfs)
	} else if found, ok := boundedProcfs(cctx, ps.Procfs); !ok {
		res.Status, res.Found, res.Fix = needed, mode+": "+found, procfsFix
		return res
	} else {
		res.Details = append(res.Details, found)
	}
	probe, err := bounded.Call(cctx, "processes probe of "+ps.Procfs, 0, func() (processes.Probe, error) {
		return processes.ProbeSampler(cctx, ps.Sampler, ps.Procfs)
	})
	switch {
	case err != nil && cctx.Err() != nil:
		res.Status, res.Found = needed, fmt.Sprintf("%s: listing the GPUs' processes and reading them in %s: no answer within %s: %v", mode, ps.Procfs, cfg.Timeout, err)
		res.Fix = "check the driver with nvidia-smi, and that " + ps.Procfs + " can be read (ps hangs too when a process is stuck in the kernel)"
		return res
	case errors.Is(err, processes.ErrUnavailable):
		res.Status, res.Found = needed, fmt.Sprintf("%s: NVML cannot be loaded or initialised: %v", mode, err)
		res.Fix = LibNVML + " and a running driver are needed beside any source: " +
			"run the exporter with the NVIDIA container runtime (NVIDIA_DRIVER_CAPABILITIES=compute,utility), or set --collect.processes=off on nodes without the driver " +
			"(the exporter retries NVML every 30s to 5m meanwhile, gpu_exporter_process_accounting_available 0)"
		return res
	case err != nil && probe.Devices == 0:
		res.Status, res.Found = needed, fmt.Sprintf("%s: listing the GPUs' processes: %v", mode, err)
		res.Fix = "check the driver with nvidia-smi; the exporter counts each failed collection in gpu_exporter_collection_errors_total{stage=\"processes\"}"
		return res
	case err != nil:
		res.Details = append(res.Details, "some devices could not be read: "+err.Error())
	}
	res.Details = append(res.Details, probeLine(probe))
	for _, e := range probe.Errors {
		res.Details = append(res.Details, "unreadable: "+e)
	}
	names, named := podNames(cfg, ps)
	res.Details = append(res.Details, names)
	res.Found = fmt.Sprintf("%s: %d devices sampled, %d GPU processes", mode, probe.Devices, probe.Processes)
	res.Status = OK
	switch {
	case err != nil:
		res.Status, res.Fix = Warn, "check the driver with nvidia-smi for the devices named below"
	case ps.HostPIDs && probe.Processes > 0 && probe.Missing == probe.Processes:
		// HostPIDNamespace passed, yet no listed PID exists: procfs is
		// not the one NVML's PIDs live in.
		res.Status, res.Fix = needed, procfsFix
		res.Found += fmt.Sprintf("; none of them is in %s", ps.Procfs)
	case probe.Unreadable > 0:
		res.Status, res.Fix = Warn, "those processes are left out (gpu_exporter_process_accounting_unresolved_total{reason=\"unreadable\"}): report the cgroup file's content"
	case !named:
		res.Status = Warn
		res.Fix = "set NODE_NAME from the downward API (spec.nodeName) and grant list/watch on pods to name containers (the chart does with processAccounting.enabled); until then series carry pod_uid and container_id"
	}
	return res
}

// boundedProcfs is checkProcfs given up on when ctx is done.
func boundedProcfs(ctx context.Context, procfs string) (found string, ok bool) {
	type verdict struct {
		found string
		ok    bool
	}
	v, err := bounded.Call(ctx, "procfs "+procfs, 0, func() (verdict, error) {
		found, ok := checkProcfs(ctx, procfs)
		return verdict{found, ok}, nil
	})
	if err != nil {
		return fmt.Sprintf("--path.procfs %s cannot be read: %v", procfs, err), false
	}
	return v.found, v.ok
}

// checkProcfs reads the procfs directory and says whether it shows the
// host's PID namespace (processes.HostPIDNamespace: kthreadd, PID 2, has
// parent 0 only there, proc(5) and pid_namespaces(7)).
func checkProcfs(ctx context.Context, procfs string) (found string, ok bool) {
	entries, err := bounded.ReadDir(ctx, procfs, maxProcfsEntries, 0)
	if err != nil {
		return fmt.Sprintf("--path.procfs %s cannot be read: %v", procfs, err), false
	}
	pids := 0
	for _, e := range entries {
		if _, err := strconv.ParseUint(e.Name(), 10, 32); err == nil && e.IsDir() {
			pids++
		}
	}
	if pids == 0 {
		return fmt.Sprintf("--path.procfs %s lists no process: it is not a proc filesystem", procfs), false
	}
	host, err := processes.HostPIDNamespace(ctx, procfs)
	switch {
	case err != nil:
		return fmt.Sprintf("--path.procfs %s does not show the host's PID namespace (%v): NVML reports host PIDs, which it cannot resolve", procfs, err), false
	case !host:
		return fmt.Sprintf("--path.procfs %s shows a container's PID namespace (its PID 2 is not kthreadd, child of PID 0): NVML reports host PIDs, which it cannot resolve", procfs), false
	}
	return fmt.Sprintf("--path.procfs %s: %d processes, the host's PID namespace (PID 2 is kthreadd, child of PID 0)", procfs, pids), true
}

// probeLine says who runs the GPU processes.
func probeLine(p processes.Probe) string {
	return fmt.Sprintf("%d GPU processes: %d in pods' containers, %d on the host, %d not in procfs (exited, or another PID namespace), %d unreadable",
		p.Processes, p.Containers, p.Host, p.Missing, p.Unreadable)
}

// podNames says how the accountant will name pods and containers, as
// sourceopen.ProcessSampling.Accountant chooses: the simulator's pods, the
// pod labels informer, an informer of its own where NODE_NAME is set, or
// pod UIDs and container ids. It does not call the API server.
func podNames(cfg Config, ps *ProcessSampling) (string, bool) {
	switch {
	case ps.Pods:
		return "pods and containers named by the simulator", true
	case cfg.PodLabels && cfg.NodeName != "":
		return "pods and containers named by the pod informer of --kubernetes.pod-labels/--kubernetes.pod-uid (see the pod-labels check)", true
	case cfg.NodeName != "":
		return "pods and containers named by a pod informer on node " + cfg.NodeName + " (needs list/watch on pods: the chart's pod-reader RBAC)", true
	}
	return "NODE_NAME is empty: no pod informer; GPU usage is labelled with pod_uid and container_id instead of namespace, pod and container", false
}
