package sourceopen

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// ProcessSampling is what process accounting reads beside the source.
type ProcessSampling struct {
	// Sampler lists the processes on each GPU.
	Sampler processes.Sampler
	// Procfs is the proc filesystem their PIDs live in: --path.procfs, or
	// the simulator's fake tree.
	Procfs string
	// HostPIDs is set when the sampler reports the host's PIDs (NVML), so
	// that Procfs must show the host's PID namespace.
	HostPIDs bool
	// Pods names pods and containers where the source knows them (the
	// simulator, standing in for the Kubernetes API); nil otherwise.
	Pods processes.PodLookup
}

// openProcesses opens process sampling beside the source when s asks for
// it: a simulated node's own processes (with their procfs tree in a
// temporary directory), NVML otherwise, whatever the source (NVML is
// present wherever the driver is).
func (o *Opened) openProcesses(s Settings, logger *slog.Logger) error {
	if s.Processes == processes.ModeOff {
		return nil
	}
	if src, ok := o.Source.(processes.Simulated); ok {
		dir, err := os.MkdirTemp("", "gpu-exporter-sim-proc-")
		if err != nil {
			return fmt.Errorf("simulated procfs: %w", err)
		}
		o.OnClose(func() { _ = os.RemoveAll(dir) })
		ps, err := src.SimulatedProcesses(dir)
		if err != nil {
			return err
		}
		o.OnClose(func() { _ = ps.Close() })
		o.Processes = &ProcessSampling{Sampler: ps, Procfs: dir, Pods: ps}
		return nil
	}
	sampler, err := processes.NewNVML(processes.NVMLConfig{CallTimeout: cgocall.CallTimeout(s.CollectTimeout), Logger: logger})
	if err != nil {
		return fmt.Errorf("--collect.processes: %w", err)
	}
	o.OnClose(func() { _ = sampler.Close() })
	o.Processes = &ProcessSampling{Sampler: sampler, Procfs: s.Procfs, HostPIDs: true}
	return nil
}

// Accountant starts process accounting on what ps samples. Pods and
// containers are named by the simulator's pods, else the pod informer
// store (the one pod labels run; nil if none), else an informer of its own
// when the exporter runs in a pod (node, from NODE_NAME, set), which it
// returns for the caller to run and close. Without either, usage carries
// pod_uid and container_id, and the accountant says so.
func (ps *ProcessSampling) Accountant(mode processes.Mode, store *podlabels.Store, node string, logger *slog.Logger, reg prometheus.Registerer) (_ *processes.Accountant, started *podlabels.Store, _ error) {
	pods := ps.Pods
	if pods == nil && store == nil && node != "" {
		s, err := podlabels.NewInCluster(podlabels.Config{Node: node, Containers: true}, logger, reg)
		if err != nil {
			logger.Warn("process accounting cannot watch pods; it labels GPU usage with pod_uid and container_id", "err", err)
		} else {
			store, started = s, s
		}
	}
	if pods == nil && store != nil {
		pods = store
	}
	acc, err := processes.NewAccountant(processes.Config{Procfs: ps.Procfs, Mode: mode, HostPIDs: ps.HostPIDs, Pods: pods}, ps.Sampler, logger, reg)
	if err != nil {
		if started != nil {
			started.Close()
		}
		return nil, nil, err
	}
	logger.Info("process accounting on", "mode", mode.String(), "procfs", ps.Procfs)
	return acc, started, nil
}
