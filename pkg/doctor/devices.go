package doctor

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// nvidiactl is the driver's control node, which NVML and DCGM open first
// (NVIDIA driver README, "Installing the NVIDIA driver: device files").
const nvidiactl = "/dev/nvidiactl"

// checkDevices checks that the NVIDIA device nodes exist and can be opened
// for reading and writing.
func checkDevices(cfg Config) Result {
	res := Result{Check: CheckDevices}
	nodes, err := cfg.Host.DeviceNodes()
	if err != nil {
		res.Status, res.Found = Warn, fmt.Sprintf("listing /dev/nvidia*: %v", err)
		return res
	}
	slices.Sort(nodes)
	if !cfg.Traits.Checkup.LocalDevices {
		res.Status = OK
		res.Found = fmt.Sprintf("not needed by --source=%s; %d NVIDIA device nodes present", cfg.Source, len(nodes))
		return res
	}
	if !slices.Contains(nodes, nvidiactl) {
		res.Status, res.Found = Warn, nvidiactl+" is absent: the driver is not loaded or the container does not see the GPUs"
		res.Fix = "run the exporter with the NVIDIA container runtime (runtimeClassName: nvidia) and NVIDIA_VISIBLE_DEVICES=all, or load the driver on the host"
		return res
	}
	var denied, gpus []string
	for _, n := range nodes {
		base := filepath.Base(n)
		if strings.TrimLeft(strings.TrimPrefix(base, "nvidia"), "0123456789") == "" && base != "nvidia" {
			gpus = append(gpus, n)
		}
		if n != nvidiactl && !slices.Contains(gpus, n) {
			continue // uvm, modeset, caps: not opened by NVML or DCGM reads
		}
		if err := cfg.Host.Access(n); err != nil {
			denied = append(denied, fmt.Sprintf("%s: %v", n, err))
		}
	}
	res.Details = denied
	switch {
	case len(denied) > 0:
		res.Status, res.Found = Fail, fmt.Sprintf("%d of %d device nodes cannot be opened for reading and writing", len(denied), len(gpus)+1)
		res.Fix = "run the exporter as root or in the group that owns the device nodes (often video), or with a device cgroup rule that allows them"
	case len(gpus) == 0:
		res.Status, res.Found = Warn, nvidiactl+" is present but no /dev/nvidiaN GPU node"
		res.Fix = "NVIDIA_VISIBLE_DEVICES may hide the GPUs: set it to all"
	default:
		res.Status, res.Found = OK, fmt.Sprintf("%s and %d GPU device nodes can be opened", nvidiactl, len(gpus))
	}
	return res
}

// checkProfiling says whether profiling (DCP) fields are in the set and, if
// so, whether the process holds CAP_SYS_ADMIN, which the embedded
// hostengine's profiling module needs (the chart adds it with
// dcgm.profiling=true, as deployment/helm's NOTES.txt states).
func checkProfiling(cfg Config, set []fields.Field) Result {
	res := Result{Check: CheckProfiling}
	var prof []string
	for _, f := range set {
		if f.Profiling {
			prof = append(prof, f.DCGMName)
		}
	}
	switch {
	case len(prof) == 0:
		res.Status, res.Found = OK, "no profiling fields in the set: CAP_SYS_ADMIN not needed"
		return res
	case cfg.Traits.Checkup.Profiling == source.ProfilingSimulated:
		res.Status, res.Found = OK, fmt.Sprintf("%d profiling fields, simulated", len(prof))
		return res
	case cfg.Traits.Checkup.Profiling == source.ProfilingNone:
		res.Status, res.Found = Warn, fmt.Sprintf("%d profiling fields in the set, but --source=%s cannot read them: they stay blank", len(prof), cfg.Source)
		res.Fix = "use --source=dcgm for profiling fields, or remove them from --collect.counters"
		return res
	case cfg.Traits.Checkup.Profiling == source.ProfilingRemote:
		res.Status, res.Found = OK, fmt.Sprintf("%d profiling fields: read by the remote hostengine, which needs CAP_SYS_ADMIN itself", len(prof))
		return res
	}
	has, err := cfg.Host.CapSysAdmin()
	switch {
	case err != nil:
		res.Status, res.Found = Warn, fmt.Sprintf("%d profiling fields; CAP_SYS_ADMIN unknown: %v", len(prof), err)
	case !has:
		res.Status, res.Found = Warn, fmt.Sprintf("%d profiling fields in the set, but the process lacks CAP_SYS_ADMIN: the embedded hostengine cannot load the profiling module and they stay blank", len(prof))
		res.Fix = "add the SYS_ADMIN capability (chart: dcgm.profiling=true), or remove the profiling fields (" + strings.Join(prof, ", ") + ")"
	default:
		res.Status, res.Found = OK, fmt.Sprintf("%d profiling fields; the process holds CAP_SYS_ADMIN", len(prof))
	}
	return res
}

// checkPodLabels checks what the pod informer needs: NODE_NAME and
// in-cluster credentials.
func checkPodLabels(cfg Config) Result {
	res := Result{Check: CheckPodLabels}
	switch {
	case cfg.Kubernetes.Enabled == "false":
		res.Status, res.Found = Fail, "--kubernetes.pod-labels/--kubernetes.pod-uid need pod attribution, which --kubernetes.enabled=false turns off"
		res.Fix = "set --kubernetes.enabled=auto or true"
	case cfg.NodeName == "":
		res.Status, res.Found = Fail, "--kubernetes.pod-labels/--kubernetes.pod-uid need NODE_NAME, which is empty"
		res.Fix = "set NODE_NAME from the downward API (spec.nodeName); the chart does"
	default:
		res.Status, res.Found = OK, "pod informer watches pods on node "+cfg.NodeName+" (needs list/watch on pods: the chart's pod-reader RBAC)"
	}
	return res
}
