// Package sourceopen opens the GPU source that --source names: DCGM, NVML,
// the simulator (with its simulated kubelet), or, for auto, DCGM when it
// answers and NVML otherwise. It is the one place that knows every source.
package sourceopen

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/config"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim/jobdir"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim/kubelet"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/dcgm"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/nvml"
)

// ProbeTimeout bounds how long Kind "auto" waits for DCGM to answer.
const ProbeTimeout = 10 * time.Second

// Config says which source to open and how.
type Config struct {
	// Kind is auto, dcgm, nvml or sim; anything else is auto (the flag is
	// validated before).
	Kind string
	// Interval is the collection interval (DCGM's watch period);
	// CollectTimeout bounds one collection, and so each DCGM or NVML call.
	Interval, CollectTimeout time.Duration
	// FabricInterval is the watch period of the NVLink, NVSwitch and
	// fabric manager fields (DCGM), the time between two reads of the
	// links and fabric fields (NVML); 0 is Interval.
	FabricInterval time.Duration
	// GPUs selects GPU indices; empty is every GPU.
	GPUs []int

	DCGMMode, DCGMRemoteAddress string

	// Scenario is a built-in simulator scenario name or a YAML file path.
	Scenario string
	// SimKubelet starts a simulated kubelet serving the simulator's
	// allocations; SimKubeletSocket is its socket path (empty: a new
	// temporary directory's kubelet.sock).
	SimKubelet       bool
	SimKubeletSocket string
	// SimJobDir is where a scenario's HPC jobs are written, as a Slurm
	// prolog would (empty: a new temporary directory). Scenarios without
	// jobs write nothing.
	SimJobDir string

	// Processes opens process sampling beside the source unless
	// processes.ModeOff; Procfs is --path.procfs.
	Processes processes.Mode
	Procfs    string
}

// Opened is an open source.
type Opened struct {
	Source source.Source
	// KubeletSocket is the simulated kubelet's socket, or "".
	KubeletSocket string
	// JobMappingDir is the directory the simulator writes its HPC jobs
	// to, or "" when the scenario has none.
	JobMappingDir string
	// Processes is process sampling (processes.go); nil when off.
	Processes *ProcessSampling
	cleanup   []func()
}

// Close releases the source and whatever was started with it, last opened
// first. It is safe to call more than once.
func (o *Opened) Close() {
	for i := len(o.cleanup) - 1; i >= 0; i-- {
		o.cleanup[i]()
	}
	o.cleanup = nil
}

// Open opens the source cfg names. On error nothing stays open.
func Open(ctx context.Context, cfg Config, logger *slog.Logger) (_ *Opened, err error) {
	o := &Opened{}
	defer func() {
		if err != nil {
			o.Close()
		}
	}()
	switch cfg.Kind {
	case "sim":
		err = o.openSim(ctx, cfg, logger)
	case "dcgm":
		// An explicit DCGM source starts even while the hostengine is down:
		// it reconnects with backoff and gpu_exporter_source_up says so.
		err = o.openDCGM(cfg, logger)
	case "nvml":
		err = o.openNVML(cfg, logger)
	default:
		err = o.openAuto(ctx, cfg, logger)
	}
	if err == nil {
		err = o.openProcesses(cfg, logger)
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}

// callTimeout bounds one DCGM or NVML call: at most 10s, and never more
// than a whole collection may take.
func callTimeout(cfg Config) time.Duration {
	return min(dcgm.DefaultCallTimeout, cfg.CollectTimeout)
}

func (o *Opened) openNVML(cfg Config, logger *slog.Logger) error {
	src, err := nvml.New(nvml.Config{CallTimeout: callTimeout(cfg), GPUs: cfg.GPUs, FabricInterval: cfg.FabricInterval}, logger)
	if err != nil {
		return fmt.Errorf("--source=nvml: %w", err)
	}
	o.Source = src
	o.cleanup = append(o.cleanup, func() { _ = src.Close() })
	return nil
}

func (o *Opened) openDCGM(cfg Config, logger *slog.Logger) error {
	src, err := dcgm.New(dcgm.Config{
		Mode: cfg.DCGMMode, RemoteAddress: cfg.DCGMRemoteAddress,
		Interval: cfg.Interval, CallTimeout: callTimeout(cfg), Health: true, GPUs: cfg.GPUs,
		FabricInterval: cfg.FabricInterval,
	}, logger)
	if err != nil {
		return fmt.Errorf("--source=dcgm: %w", err)
	}
	o.Source = src
	o.cleanup = append(o.cleanup, func() { _ = src.Close() })
	return nil
}

// openAuto picks DCGM when it answers, else NVML when the driver's library
// is there, and says why neither would do otherwise.
func (o *Opened) openAuto(ctx context.Context, cfg Config, logger *slog.Logger) error {
	if err := o.openDCGM(cfg, logger); err != nil {
		return fmt.Errorf("--source=auto: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	_, dcgmErr := o.Source.Inventory(pctx)
	if dcgmErr == nil {
		logger.Info("--source=auto picked DCGM", "mode", cfg.DCGMMode)
		return nil
	}
	o.Close() // the DCGM source was the only thing opened so far
	o.Source = nil
	nvmlErr := nvml.Available(pctx)
	if nvmlErr == nil {
		logger.Info("--source=auto picked NVML: DCGM did not answer", "dcgm_err", dcgmErr)
		return o.openNVML(cfg, logger)
	}
	return fmt.Errorf("--source=auto: no GPU source answered: DCGM: %w; NVML: %w. Use --source=dcgm to wait for a hostengine, or --source=sim to try the simulator", dcgmErr, nvmlErr)
}

// openSim loads the scenario, starts the simulator and its simulated
// kubelet, so that the real pod-resources client path runs against it.
func (o *Opened) openSim(ctx context.Context, cfg Config, logger *slog.Logger) error {
	scn, err := LoadScenario(ctx, cfg.Scenario)
	if err != nil {
		return fmt.Errorf("--sim.scenario: %w", err)
	}
	src := sim.New(scn, sim.WithFabricInterval(cfg.FabricInterval))
	o.Source = src
	o.cleanup = append(o.cleanup, func() { _ = src.Close() })
	if err := o.openSimJobs(src, cfg, logger); err != nil {
		return err
	}
	if !cfg.SimKubelet {
		return nil
	}
	socket := cfg.SimKubeletSocket
	if socket == "" {
		dir, err := os.MkdirTemp("", "gpu-exporter-sim-")
		if err != nil {
			return fmt.Errorf("simulated kubelet: %w", err)
		}
		o.cleanup = append(o.cleanup, func() { _ = os.RemoveAll(dir) })
		socket = filepath.Join(dir, "kubelet.sock")
	}
	kubelet, err := kubelet.Start(socket)
	if err != nil {
		return fmt.Errorf("simulated kubelet on %s: %w", socket, err)
	}
	o.cleanup = append(o.cleanup, kubelet.Stop)
	kubelet.FollowSim(src)
	o.KubeletSocket = socket
	logger.Info("simulator running", "scenario", cfg.Scenario, "simulated_kubelet", socket)
	return nil
}

// openSimJobs starts writing the scenario's HPC jobs into a job-mapping
// directory, so that the exporter's real reader runs against it.
func (o *Opened) openSimJobs(src *sim.Source, cfg Config, logger *slog.Logger) error {
	if !src.Scenario().HasJobs() {
		return nil
	}
	dir := cfg.SimJobDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "gpu-exporter-sim-jobs-")
		if err != nil {
			return fmt.Errorf("simulated job-mapping directory: %w", err)
		}
		o.cleanup = append(o.cleanup, func() { _ = os.RemoveAll(tmp) })
		dir = tmp
	}
	w, err := jobdir.New(dir, logger)
	if err != nil {
		return fmt.Errorf("simulated job-mapping directory: %w", err)
	}
	every := cfg.Interval
	if every <= 0 {
		every = time.Second
	}
	if err := w.Follow(src, every); err != nil {
		w.Stop()
		return fmt.Errorf("simulated job-mapping directory: %w", err)
	}
	o.cleanup = append(o.cleanup, w.Stop)
	o.JobMappingDir = dir
	logger.Info("simulator writes HPC jobs", "scenario", cfg.Scenario, "job_mapping_dir", dir)
	return nil
}

// LoadScenario takes a built-in scenario name or a file path. A file must
// be a regular file; its read stops at a deadline or when ctx is done.
func LoadScenario(ctx context.Context, name string) (*sim.Scenario, error) {
	if !strings.ContainsAny(name, "/.") {
		return sim.LoadBuiltin(name)
	}
	data, err := config.ReadFile(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return sim.Parse(name, data)
}
