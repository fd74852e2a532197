package sourceopen

import (
	"fmt"
	"os"

	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/sim"
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

// openProcesses opens process sampling beside the source when cfg asks
// for it: the simulator's processes (with their procfs tree in a
// temporary directory) for --source=sim, NVML otherwise, whatever the
// source (NVML is present wherever the driver is).
func (o *Opened) openProcesses(cfg Config) error {
	if cfg.Processes == processes.ModeOff {
		return nil
	}
	if src, ok := o.Source.(*sim.Source); ok {
		dir, err := os.MkdirTemp("", "gpu-exporter-sim-proc-")
		if err != nil {
			return fmt.Errorf("simulated procfs: %w", err)
		}
		o.cleanup = append(o.cleanup, func() { _ = os.RemoveAll(dir) })
		ps, err := src.ProcessSampler(dir)
		if err != nil {
			return err
		}
		o.cleanup = append(o.cleanup, func() { _ = ps.Close() })
		o.Processes = &ProcessSampling{Sampler: ps, Procfs: dir, Pods: ps}
		return nil
	}
	s, err := processes.NewNVML(processes.NVMLConfig{CallTimeout: callTimeout(cfg)})
	if err != nil {
		return fmt.Errorf("--collect.processes: %w", err)
	}
	o.cleanup = append(o.cleanup, func() { _ = s.Close() })
	o.Processes = &ProcessSampling{Sampler: s, Procfs: cfg.Procfs, HostPIDs: true}
	return nil
}
