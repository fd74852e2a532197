// Package node opens the simulated node as one: the simulator's GPU
// source, the kubelet that serves its pods' allocations, the job-mapping
// directory it writes its HPC jobs to, and (through the source) its
// processes and their procfs tree, so that the exporter's real clients and
// readers run against them. It describes --source=sim to pkg/sourceopen's
// table.
package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/config"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim/jobdir"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim/kubelet"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Kind describes --source=sim to pkg/sourceopen's table.
func Kind() source.Kind {
	return source.Kind{
		Name: "sim", Usage: "sim (built-in simulator)", HelpPlace: source.AfterProcesses,
		NewOptions: func() source.Options { return &Options{} },
	}
}

// Options are the simulator's flags (--sim.scenario).
type Options struct {
	sim.Options
}

// Traits: the simulator may declare no GPU (for tests), reads no device
// node and simulates profiling fields.
func (o *Options) Traits() source.Traits {
	return source.Traits{MayLackGPUs: true, Checkup: source.Checkup{
		Profiling: source.ProfilingSimulated,
		Why:       func(string) string { return " (scenario " + o.Scenario + ")" },
		Fix: func(func(string) bool) string {
			return "check --sim.scenario: a built-in name or a readable scenario file"
		},
	}}
}

// Open loads the scenario, starts the simulator and, when pod attribution
// is on, its simulated kubelet, and writes the scenario's HPC jobs.
func (o *Options) Open(ctx context.Context, s source.Settings, logger *slog.Logger) (_ *source.Opened, err error) {
	scn, err := LoadScenario(ctx, o.Scenario)
	if err != nil {
		return nil, fmt.Errorf("--sim.scenario: %w", err)
	}
	src := sim.New(scn, sim.WithFabricInterval(s.FabricInterval))
	opened := &source.Opened{Source: src}
	defer func() {
		if err != nil {
			opened.Close()
		}
	}()
	opened.OnClose(func() { _ = src.Close() })
	if err := o.openJobs(opened, src, s, logger); err != nil {
		return nil, err
	}
	if !s.Kubelet {
		return opened, nil
	}
	socket := s.KubeletSocket
	if socket == "" {
		dir, err := os.MkdirTemp("", "gpu-exporter-sim-")
		if err != nil {
			return nil, fmt.Errorf("simulated kubelet: %w", err)
		}
		opened.OnClose(func() { _ = os.RemoveAll(dir) })
		socket = filepath.Join(dir, "kubelet.sock")
	}
	kubelet, err := kubelet.Start(socket)
	if err != nil {
		return nil, fmt.Errorf("simulated kubelet on %s: %w", socket, err)
	}
	opened.OnClose(kubelet.Stop)
	kubelet.FollowSim(src)
	opened.KubeletSocket = socket
	logger.Info("simulator running", "scenario", o.Scenario, "simulated_kubelet", socket)
	return opened, nil
}

// openJobs starts writing the scenario's HPC jobs into a job-mapping
// directory, so that the exporter's real reader runs against it.
func (o *Options) openJobs(opened *source.Opened, src *sim.Source, s source.Settings, logger *slog.Logger) error {
	if !src.Scenario().HasJobs() {
		return nil
	}
	dir := s.JobMappingDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "gpu-exporter-sim-jobs-")
		if err != nil {
			return fmt.Errorf("simulated job-mapping directory: %w", err)
		}
		opened.OnClose(func() { _ = os.RemoveAll(tmp) })
		dir = tmp
	}
	w, err := jobdir.New(dir, logger)
	if err != nil {
		return fmt.Errorf("simulated job-mapping directory: %w", err)
	}
	every := s.Interval
	if every <= 0 {
		every = time.Second
	}
	if err := w.Follow(src, every); err != nil {
		w.Stop()
		return fmt.Errorf("simulated job-mapping directory: %w", err)
	}
	opened.OnClose(w.Stop)
	opened.JobMappingDir = dir
	logger.Info("simulator writes HPC jobs", "scenario", o.Scenario, "job_mapping_dir", dir)
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
