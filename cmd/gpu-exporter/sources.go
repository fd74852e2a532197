package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/config"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources/fake"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/dcgm"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/nvml"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/sim"
)

// probeTimeout bounds how long --source=auto waits for a backend to answer.
const probeTimeout = 10 * time.Second

// openSource opens the --source backend. For the simulator it also starts a
// simulated kubelet and returns its socket path, so that the real
// pod-resources client path runs against it.
func (a *app) openSource(ctx context.Context) (kubeletSocket string, err error) {
	switch a.o.source {
	case "sim":
		return a.openSim(ctx)
	case "dcgm":
		// An explicit DCGM source starts even while the hostengine is down:
		// it reconnects with backoff and gpu_exporter_source_up says so.
		return "", a.openDCGM()
	case "nvml":
		return "", a.openNVML()
	default: // "auto"; validated with the flags
		return "", a.openAuto(ctx)
	}
}

// callTimeout bounds one DCGM or NVML call: at most 10s, and never more
// than a whole collection may take.
func (a *app) callTimeout() time.Duration {
	return min(dcgm.DefaultCallTimeout, a.o.timeout)
}

// openNVML opens the NVML source.
func (a *app) openNVML() error {
	src, err := nvml.New(nvml.Config{CallTimeout: a.callTimeout(), GPUs: a.o.gpuList}, a.logger)
	if err != nil {
		return fmt.Errorf("--source=nvml: %w", err)
	}
	a.src = src
	a.cleanup = append(a.cleanup, func() { _ = src.Close() })
	return nil
}

// openDCGM opens the DCGM source.
func (a *app) openDCGM() error {
	src, err := dcgm.New(dcgm.Config{
		Mode: a.o.dcgmMode, RemoteAddress: a.o.dcgmRemoteAddress,
		Interval: a.o.interval, CallTimeout: a.callTimeout(), Health: true, GPUs: a.o.gpuList,
	}, a.logger)
	if err != nil {
		return fmt.Errorf("--source=dcgm: %w", err)
	}
	a.src = src
	a.cleanup = append(a.cleanup, func() { _ = src.Close() })
	return nil
}

// openAuto picks DCGM when it answers, else NVML when the driver's library
// is there, and says why neither would do otherwise.
func (a *app) openAuto(ctx context.Context) error {
	if err := a.openDCGM(); err != nil {
		return fmt.Errorf("--source=auto: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	_, dcgmErr := a.src.Inventory(pctx)
	if dcgmErr == nil {
		a.logger.Info("--source=auto picked DCGM", "mode", a.o.dcgmMode)
		return nil
	}
	a.close() // the DCGM source was the only thing opened so far
	a.src = nil
	nvmlErr := nvml.Available(pctx)
	if nvmlErr == nil {
		a.logger.Info("--source=auto picked NVML: DCGM did not answer", "dcgm_err", dcgmErr)
		return a.openNVML()
	}
	return fmt.Errorf("--source=auto: no GPU source answered: DCGM: %w; NVML: %w. Use --source=dcgm to wait for a hostengine, or --source=sim to try the simulator", dcgmErr, nvmlErr)
}

// openSim loads the scenario, starts the simulator and its fake kubelet.
func (a *app) openSim(ctx context.Context) (string, error) {
	scn, err := loadScenario(ctx, a.o.scenario)
	if err != nil {
		return "", fmt.Errorf("--sim.scenario: %w", err)
	}
	src := sim.New(scn)
	a.src = src
	a.cleanup = append(a.cleanup, func() { _ = src.Close() })
	if a.o.k8sEnabled == "false" {
		return "", nil
	}
	socket := a.o.k8sSocket
	if !a.flagSet("kubernetes.pod-resources-socket") {
		dir, err := os.MkdirTemp("", "gpu-exporter-sim-")
		if err != nil {
			return "", fmt.Errorf("simulated kubelet: %w", err)
		}
		a.cleanup = append(a.cleanup, func() { _ = os.RemoveAll(dir) })
		socket = filepath.Join(dir, "kubelet.sock")
	}
	kubelet, err := fake.Start(socket)
	if err != nil {
		return "", fmt.Errorf("simulated kubelet on %s: %w", socket, err)
	}
	a.cleanup = append(a.cleanup, kubelet.Stop)
	kubelet.FollowSim(src)
	a.logger.Info("simulator running", "scenario", a.o.scenario, "simulated_kubelet", socket)
	return socket, nil
}

// loadScenario takes a built-in scenario name or a file path. A file must
// be a regular file; its read stops at a deadline or when ctx is done.
func loadScenario(ctx context.Context, name string) (*sim.Scenario, error) {
	if !strings.ContainsAny(name, "/.") {
		return sim.LoadBuiltin(name)
	}
	data, err := config.ReadFile(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return sim.Parse(name, data)
}
