package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/collector"
	"github.com/gpu-exporter/gpu-exporter/pkg/config"
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/hpcjobs"
	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/server"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/sourceopen"
)

// app is the wired exporter.
type app struct {
	o      *options
	fs     *pflag.FlagSet
	logger *slog.Logger
	cat    *fields.Catalog
	reg    *prometheus.Registry

	src      source.Source
	pods     *podresources.Client
	podStore *podlabels.Store
	// procSampling and procAcc are process accounting (processes.go).
	procSampling *sourceopen.ProcessSampling
	procAcc      *processes.Accountant
	coll         *collector.Collector
	srv          *server.Server
	cleanup      []func()

	jobs *hpcjobs.Reader
	// simJobDir is where the simulator writes its HPC jobs, if it does.
	simJobDir string
}

func newApp(ctx context.Context, o *options, fs *pflag.FlagSet, logger *slog.Logger) (_ *app, err error) {
	a := &app{o: o, fs: fs, logger: logger, reg: prometheus.NewRegistry()}
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
	counters, err := a.loadCounters(ctx)
	if err != nil {
		return nil, err
	}
	socket, err := a.openSource(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.openKubernetes(socket); err != nil {
		return nil, err
	}
	if err := a.openPodLabels(); err != nil {
		return nil, err
	}
	if err := a.openHPCJobs(); err != nil {
		return nil, err
	}
	if err := a.openProcesses(); err != nil {
		return nil, err
	}
	var attr collector.Attribution
	if a.pods != nil {
		attr = a.pods
	}
	a.coll, err = collector.New(collector.Config{
		Interval: o.interval, Timeout: o.timeout, MaxSeries: o.maxSeries, GPUs: o.gpuList,
		Fields: counters.Fields, Labels: counters.Labels,
		XIDErrorsCount: counters.XIDErrorsCount, ClockEventsCount: counters.ClockEventsCount,
		Naming: o.namingMode, DCGM: a.dcgmNaming(), PodInfo: a.podInfo(), Jobs: a.jobAttribution(),
		Processes:   a.processAccounting(),
		RequireGPUs: a.src.Name() != "sim", // the simulator may declare no GPU, for tests
	}, a.src, attr, logger, a.reg)
	if err != nil {
		return nil, err
	}
	if o.webConfigFile != "" {
		if err := server.CheckWebConfigFiles(ctx, o.webConfigFile); err != nil {
			return nil, err
		}
	}
	a.srv, err = server.New(server.Config{
		ListenAddresses: o.listenAddresses, WebConfigFile: o.webConfigFile, SystemdSocket: o.systemdSocket,
		TelemetryPath: o.telemetryPath, HealthListenAddress: o.healthAddress, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: o.writeTimeout,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, EnablePprof: o.enablePprof, SelfMetricsMaxAge: time.Second,
	}, a.coll, a.reg, a.reg, logger)
	if err != nil {
		return nil, err
	}
	if err := a.srv.Listen(); err != nil {
		return nil, err
	}
	return a, nil
}

// flagSet reports whether a flag was given (on the command line or through
// its environment twin).
func (a *app) flagSet(name string) bool { return a.fs != nil && a.fs.Changed(name) }

// openSource opens the --source backend and returns the simulated
// kubelet's socket, if one was started.
func (a *app) openSource(ctx context.Context) (kubeletSocket string, err error) {
	cfg := sourceopen.Config{
		Kind: a.o.source, Interval: a.o.interval, CollectTimeout: a.o.timeout, GPUs: a.o.gpuList,
		DCGMMode: a.o.dcgmMode, DCGMRemoteAddress: a.o.dcgmRemoteAddress,
		Scenario: a.o.scenario, SimKubelet: a.o.k8sEnabled != "false",
	}
	if exposition.ExportsProcesses(a.o.namingMode) {
		cfg.Processes, cfg.Procfs = a.o.processMode, a.o.procfs
	}
	cfg.FabricInterval = a.o.nvlinkInterval
	if a.flagSet("kubernetes.pod-resources-socket") {
		cfg.SimKubeletSocket = a.o.k8sSocket
	}
	cfg.SimJobDir = a.o.hpcJobDir
	opened, err := sourceopen.Open(ctx, cfg, a.logger)
	if err != nil {
		return "", err
	}
	a.src = opened.Source
	a.simJobDir = opened.JobMappingDir
	a.procSampling = opened.Processes
	a.cleanup = append(a.cleanup, opened.Close)
	return opened.KubeletSocket, nil
}

// loadCounters returns what --collect.counters lists, or the built-in set of
// the naming. The read stops when ctx is done.
func (a *app) loadCounters(ctx context.Context) (exposition.Counters, error) {
	if a.o.countersCSV == "" {
		return exposition.BuiltinCounters(a.o.namingMode, a.cat), nil
	}
	c, err := config.LoadCountersContext(ctx, a.o.countersCSV, a.cat)
	if err != nil {
		return exposition.Counters{}, fmt.Errorf("--collect.counters: %w", err)
	}
	for _, sk := range c.Skipped {
		a.logger.Warn("counters file row skipped: gpu-exporter does not export it", "at", sk.Where, "name", sk.Name, "reason", sk.Reason)
	}
	for _, w := range c.Warnings {
		a.logger.Warn("counters file row read with a change", "at", w.Where, "name", w.Name, "warning", w.Message)
	}
	k, unused := exposition.FileCounters(a.o.namingMode, c, a.o.xidWindow, a.o.clockEventsWindow)
	if unused {
		a.logger.Info("counters file lists label fields or DCGM_EXP_* counters; they apply with --naming=dcgm only", "file", a.o.countersCSV)
	}
	return k, nil
}

// dcgmNaming returns the options of --naming=dcgm.
func (a *app) dcgmNaming() exposition.DCGMOptions {
	o := exposition.DCGMOptions{
		HostnameLabel: a.o.hostnameLabel, OldNamespace: a.o.oldNamespace, ReplaceBlanksInModelName: a.o.replaceBlanks,
		VirtualGPUs: a.o.vgpuLabel,
	}
	if a.o.namingMode != exposition.NamingDCGM || a.o.hostnameLabel == "none" {
		o.HostnameLabel = ""
		return o
	}
	o.Hostname = a.hostname()
	return o
}

// hostname is the hostname label's value, chosen as dcgm-exporter chooses
// it: the remote hostengine's host when one is used and pods are not
// attributed, else $NODE_NAME, else the host name.
func (a *app) hostname() string {
	if a.o.dcgmMode == "remote" && a.pods == nil && a.o.source != "sim" {
		host, _, err := net.SplitHostPort(a.o.dcgmRemoteAddress)
		if err != nil {
			host = a.o.dcgmRemoteAddress // a unix socket path, or no port
		}
		return host
	}
	if a.o.nodeName != "" {
		return a.o.nodeName
	}
	h, err := os.Hostname()
	if err != nil {
		a.logger.Warn("host name unknown; the hostname label is left out", "err", err)
		return ""
	}
	return h
}

// openKubernetes starts the pod-resources client when attribution is on.
// socket, when not empty, is the simulated kubelet's socket.
func (a *app) openKubernetes(socket string) error {
	path := a.o.k8sSocket
	if socket != "" {
		path = socket
	}
	switch a.o.k8sEnabled {
	case "false":
		return nil
	case "auto":
		if _, err := os.Stat(path); err != nil {
			a.logger.Info("kubelet pod-resources socket not found; pod attribution is off (set --kubernetes.enabled=true to wait for it)", "socket", path)
			return nil
		}
	}
	idType, err := podresources.ParseIDType(a.o.k8sIDType)
	if err != nil {
		return fmt.Errorf("--kubernetes.gpu-id-type: %w", err)
	}
	cfg := podresources.DefaultConfig()
	cfg.Socket = path
	cfg.RefreshInterval = a.o.k8sRefresh
	cfg.CallTimeout = a.o.k8sCallTimeout
	cfg.ResourceNames = append(cfg.ResourceNames, a.o.k8sResources...)
	cfg.IDType = idType
	c, err := podresources.New(cfg, a.logger, a.reg)
	if err != nil {
		return fmt.Errorf("kubernetes pod attribution: %w", err)
	}
	a.pods = c
	a.cleanup = append(a.cleanup, func() { _ = c.Close() })
	a.logger.Info("pod attribution on", "socket", path, "refresh_interval", a.o.k8sRefresh)
	return nil
}

// openPodLabels starts the pod informer when pod labels or UIDs are asked
// for.
func (a *app) openPodLabels() error {
	if a.o.podAllow == nil && !a.o.podUID {
		return nil
	}
	if a.pods == nil {
		return fmt.Errorf("--kubernetes.pod-labels and --kubernetes.pod-uid label attributed series: pod attribution must be on (--kubernetes.enabled)")
	}
	store, err := podlabels.NewInCluster(podlabels.Config{
		Node: os.Getenv("NODE_NAME"), Allowlist: a.o.podAllow, UID: a.o.podUID, MaxLabels: a.o.podLabelsLimit,
	}, a.logger, a.reg)
	if err != nil {
		return fmt.Errorf("--kubernetes.pod-labels/--kubernetes.pod-uid: %w", err)
	}
	a.podStore = store
	a.cleanup = append(a.cleanup, store.Close)
	return nil
}

// openHPCJobs starts the job-mapping reader when --hpc.job-mapping-dir is
// set, or on the directory the simulator writes its jobs to. A directory
// that does not exist yet is logged by the reader and read again at every
// refresh.
func (a *app) openHPCJobs() error {
	dir := a.o.hpcJobDir
	if dir == "" {
		dir = a.simJobDir
	}
	if dir == "" {
		return nil
	}
	r, err := hpcjobs.New(hpcjobs.Config{Dir: dir, RefreshInterval: a.o.hpcRefresh}, a.logger, a.reg)
	if err != nil {
		return fmt.Errorf("--hpc.job-mapping-dir: %w", err)
	}
	a.jobs = r
	a.logger.Info("HPC job attribution on", "dir", dir, "refresh_interval", a.o.hpcRefresh)
	return nil
}

// jobAttribution is the collector's view of the job-mapping reader; nil
// when off.
func (a *app) jobAttribution() collector.JobAttribution {
	if a.jobs == nil {
		return nil
	}
	return a.jobs
}

// podInfo is the collector's view of the pod informer; nil when off.
func (a *app) podInfo() collector.PodInfo {
	if a.podStore == nil {
		return nil
	}
	return a.podStore
}

// run serves until ctx is done or the server fails, reloading the counters
// file on SIGHUP.
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
		// A first read before the first collection, so that the first
		// pages carry job labels; failures are logged and counted.
		_ = a.jobs.Refresh(loopCtx)
		wg.Add(1)
		go func() { defer wg.Done(); a.jobs.Run(loopCtx) }()
	}
	go func() { defer wg.Done(); a.coll.Run(loopCtx) }()
	if a.pods != nil {
		wg.Add(1)
		go func() { defer wg.Done(); a.pods.Run(loopCtx) }()
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- a.srv.Serve() }()
	for _, addr := range a.srv.Addrs() {
		a.logger.Info("serving metrics", "address", addr.String(), "path", a.o.telemetryPath)
	}
	if addr := a.srv.HealthAddr(); addr != nil {
		a.logger.Info("serving health probes without TLS or auth", "address", addr.String(), "paths", "/healthz,/readyz")
	}

	var err error
loop:
	for {
		select {
		case <-ctx.Done():
			a.logger.Info("shutting down: finishing in-flight requests", "grace", a.o.shutdownGrace)
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
	sctx, scancel := context.WithTimeout(context.Background(), a.o.shutdownGrace)
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
	if a.o.countersCSV == "" {
		a.logger.Info("SIGHUP: no --collect.counters file to reload")
		return
	}
	k, err := a.loadCounters(ctx)
	if err == nil {
		err = a.coll.SetCounters(k)
	}
	if err != nil {
		a.logger.Error("SIGHUP: counters file rejected; keeping the running field set", "err", err)
		return
	}
	a.logger.Info("SIGHUP: counters file reloaded", "file", a.o.countersCSV, "fields", len(k.Fields))
}

func (a *app) close() {
	for i := len(a.cleanup) - 1; i >= 0; i-- {
		a.cleanup[i]()
	}
	a.cleanup = nil
}
