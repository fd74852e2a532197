package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"

	"github.com/gpu-exporter/gpu-exporter/pkg/collector"
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/hpcjobs"
	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/server"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/sourceopen"
)

// app is the wired exporter.
type app struct {
	o      *options
	logger *slog.Logger
	cat    *fields.Catalog
	reg    *prometheus.Registry

	src      source.Source
	pods     *podresources.Client
	podStore *podlabels.Store
	// procSampling is what process accounting reads, when on.
	procSampling *sourceopen.ProcessSampling
	coll         *collector.Collector
	srv          *server.Server
	cleanup      []func()

	jobs *hpcjobs.Reader
	// simJobDir and simPods: where the simulator writes its HPC jobs, what it tells of its pods.
	simJobDir string
	simPods   *podlabels.Static
}

func newApp(ctx context.Context, o *options, logger *slog.Logger) (_ *app, err error) {
	a := &app{o: o, logger: logger, reg: prometheus.NewRegistry()}
	defer func() {
		if err != nil {
			a.close() // release what was opened before the failure
		}
	}()
	if a.cat, err = fields.New(); err != nil {
		return nil, err
	}
	a.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		versioncollector.NewCollector("gpu_exporter"),
	)
	counters, err := o.collect.Counters(ctx, &o.naming, a.cat, logger)
	if err != nil {
		return nil, err
	}
	socket, err := a.openSource(ctx)
	if err != nil {
		return nil, err
	}
	dra, stopDRA, err := podresources.OpenDRA(o.dra, o.nodeName, o.kubernetes.Enabled != "false", logger, a.reg)
	if err != nil {
		return nil, err
	}
	a.cleanup = append(a.cleanup, stopDRA)
	if a.pods, err = podresources.Open(o.kubernetes, socket, dra, logger, a.reg); err != nil {
		return nil, err
	}
	if a.pods != nil {
		a.cleanup = append(a.cleanup, func() { _ = a.pods.Close() })
	}
	if a.podStore, err = podlabels.Open(o.podLabels, o.nodeName, a.pods != nil, logger, a.reg); err != nil {
		return nil, err
	}
	if a.podStore != nil {
		a.cleanup = append(a.cleanup, a.podStore.Close)
	}
	if a.jobs, err = hpcjobs.Open(o.hpc, a.simJobDir, logger, a.reg); err != nil {
		return nil, err
	}
	cfg := o.collect.Config(counters)
	cfg.Naming, cfg.DCGM = o.naming.Naming, o.naming.DCGMFor(a.hostname)
	cfg.RequireGPUs = !o.source.Traits().MayLackGPUs
	if ps := a.procSampling; ps != nil {
		acc, started, err := ps.Accountant(o.processes.Mode, a.podStore, o.nodeName, logger, a.reg)
		if err != nil {
			return nil, err
		}
		if started != nil {
			a.podStore = started
			a.cleanup = append(a.cleanup, started.Close)
		}
		a.cleanup = append(a.cleanup, acc.Close)
		cfg.Processes = acc
	}
	// Typed nil pointers would be non-nil interfaces: set only what is on.
	if a.podStore != nil {
		cfg.PodInfo = a.podStore
	} else if a.simPods != nil {
		cfg.PodInfo = a.simPods
	}
	if a.jobs != nil {
		cfg.Jobs = a.jobs
	}
	var attr collector.Attribution
	if a.pods != nil {
		attr = a.pods
	}
	if a.coll, err = collector.New(cfg, a.src, attr, logger, a.reg); err != nil {
		return nil, err
	}
	if a.srv, err = o.web.Open(ctx, a.coll, a.reg, a.reg, logger); err != nil {
		return nil, err
	}
	return a, nil
}

// openSource opens the --source backend; it returns the simulated kubelet's socket, if any.
func (a *app) openSource(ctx context.Context) (kubeletSocket string, err error) {
	o := a.o
	s := sourceopen.Settings{Settings: source.Settings{
		Interval: o.collect.Interval, CollectTimeout: o.collect.Timeout, FabricInterval: o.collect.FabricInterval, GPUs: o.collect.GPUList,
		Kubelet: o.kubernetes.Enabled != "false", KubeletSocket: o.kubernetes.GivenSocket(), JobMappingDir: o.hpc.Dir,
	}}
	if exposition.ExportsProcesses(o.naming.Naming) {
		s.Processes, s.Procfs = o.processes.Mode, o.processes.Procfs
	}
	opened, err := o.source.Open(ctx, s, a.logger)
	if err != nil {
		return "", err
	}
	a.src = opened.Source
	a.simJobDir, a.simPods = opened.JobMappingDir, opened.Pods
	a.procSampling = opened.Processes
	a.cleanup = append(a.cleanup, opened.Close)
	return opened.KubeletSocket, nil
}

// hostname is the hostname label's value (exposition.HostnameValue).
func (a *app) hostname() string {
	return exposition.HostnameValue(a.o.source.Traits().RemoteHost, a.pods != nil, a.o.nodeName, a.logger)
}

// run serves until ctx is done or the server fails, reloading the counters file on SIGHUP.
func (a *app) run(ctx context.Context, hup <-chan os.Signal) error {
	defer a.close()
	loopCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	if a.podStore != nil {
		// Wait (bounded) for the pod informer, so that the first pages carry
		// pod labels instead of changing series identity a moment later.
		if err := a.podStore.Run(loopCtx); err != nil {
			return fmt.Errorf("pod informer: %w", err)
		}
	}
	if a.jobs != nil {
		// A first read before the first collection, so that the first pages carry job labels.
		_ = a.jobs.Refresh(loopCtx)
		wg.Add(1)
		go func() { defer wg.Done(); a.jobs.Run(loopCtx) }()
	}
	if a.pods != nil {
		// The kubelet's first answer (or its timeout) before the first
		// collection, so that the first page names the holders.
		_ = a.pods.Prime(ctx)
		wg.Add(1)
		go func() { defer wg.Done(); a.pods.Run(loopCtx) }()
	}
	go func() { defer wg.Done(); a.coll.Run(loopCtx) }()
	serveErr := make(chan error, 1)
	go func() { serveErr <- a.srv.Serve() }()
	for _, addr := range a.srv.Addrs() {
		a.logger.Info("serving metrics", "address", addr.String(), "path", a.o.web.TelemetryPath)
	}
	if addr := a.srv.HealthAddr(); addr != nil {
		a.logger.Info("serving health probes without TLS or auth", "address", addr.String(), "paths", "/healthz,/readyz")
	}

	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			a.logger.Info("shutting down: finishing in-flight requests", "grace", a.o.web.ShutdownGrace)
			break loop
		case err = <-serveErr:
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			break loop
		case <-hup:
			a.reload(ctx)
		}
	}
	// Past the grace period the server closes what is still open and
	// reports no error: a routine stop exits 0.
	sctx, scancel := context.WithTimeout(context.Background(), a.o.web.ShutdownGrace)
	defer scancel()
	if serr := a.srv.Shutdown(sctx); serr != nil && err == nil {
		err = fmt.Errorf("shutdown: %w", serr)
	}
	cancel()
	wg.Wait()
	return err
}

// reload re-reads the counters file; a bad file keeps the running set.
func (a *app) reload(ctx context.Context) {
	if a.o.collect.CountersFile == "" {
		a.logger.Info("SIGHUP: no --collect.counters file to reload")
		return
	}
	k, err := a.o.collect.Counters(ctx, &a.o.naming, a.cat, a.logger)
	if err == nil {
		err = a.coll.SetCounters(k)
	}
	if err != nil {
		a.logger.Error("SIGHUP: counters file rejected; keeping the running field set", "err", err)
		return
	}
	a.logger.Info("SIGHUP: counters file reloaded", "file", a.o.collect.CountersFile, "fields", len(k.Fields))
}

func (a *app) close() {
	for i := len(a.cleanup) - 1; i >= 0; i-- {
		a.cleanup[i]()
	}
	a.cleanup = nil
}
