package main

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/server"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// minInterval is the shortest collection and kubelet refresh interval: DCGM
// samples most fields every 100ms at best, and shorter loops only spin.
const minInterval = 100 * time.Millisecond

// validate checks every flag and fills the values derived from them. Each
// error names its flag. Paths of files (counters, scenario, web config) are
// checked when they are read, with a deadline.
func (o *options) validate(fs *pflag.FlagSet) error {
	for _, check := range []func(*pflag.FlagSet) error{o.validateWeb, o.validateCollect, o.validateNaming, o.validateKubernetes, o.validateHPC, o.validateDCGM} {
		if err := check(fs); err != nil {
			return err
		}
	}
	return nil
}

func (o *options) validateWeb(*pflag.FlagSet) error {
	if err := server.CheckListeners(o.listenAddresses, o.healthAddress, o.systemdSocket); err != nil {
		return err // names the flag
	}
	if err := server.ValidateTelemetryPath(o.telemetryPath, o.enablePprof); err != nil {
		return err // names the flag
	}
	if o.writeTimeout <= 0 {
		return fmt.Errorf("--web.write-timeout must be positive, got %s", o.writeTimeout)
	}
	if o.shutdownGrace <= 0 {
		return fmt.Errorf("--web.shutdown-grace must be positive, got %s", o.shutdownGrace)
	}
	return nil
}

func (o *options) validateCollect(*pflag.FlagSet) error {
	switch o.source {
	case "auto", "dcgm", "nvml", "sim":
	default:
		return fmt.Errorf("--source: unknown source %q (want auto, dcgm, nvml or sim)", o.source)
	}
	if o.interval < minInterval {
		return fmt.Errorf("--collect.interval must be at least %s, got %s", minInterval, o.interval)
	}
	if o.nvlinkInterval < minInterval {
		return fmt.Errorf("--collect.nvlink-interval must be at least %s, got %s", minInterval, o.nvlinkInterval)
	}
	if o.timeout < 0 {
		return fmt.Errorf("--collect.timeout must not be negative, got %s", o.timeout)
	}
	if o.timeout == 0 {
		o.timeout = o.interval
	}
	if o.timeout > o.interval {
		return fmt.Errorf("--collect.timeout (%s) must not exceed --collect.interval (%s): a collection must end before the next one starts", o.timeout, o.interval)
	}
	if o.maxSeries < 0 {
		return fmt.Errorf("--collect.max-series must not be negative, got %d", o.maxSeries)
	}
	gpus, err := source.ParseGPUList(o.gpus)
	if err != nil {
		return fmt.Errorf("--collect.gpus: %w", err)
	}
	o.gpuList = gpus
	if strings.TrimSpace(o.scenario) == "" {
		return fmt.Errorf("--sim.scenario must name a built-in scenario or a file")
	}
	if o.processMode, err = processes.ParseMode(o.processes); err != nil {
		return err // names the flag
	}
	if strings.TrimSpace(o.procfs) == "" {
		return fmt.Errorf("--path.procfs must name the proc filesystem (default /proc)")
	}
	return nil
}

func (o *options) validateNaming(*pflag.FlagSet) error {
	var err error
	if o.namingMode, err = exposition.ParseNaming(o.naming); err != nil {
		return fmt.Errorf("--naming: %w", err)
	}
	switch o.hostnameLabel {
	case exposition.HostnameLabel, exposition.HostnameLabelLower, "none":
	default:
		return fmt.Errorf("--naming.hostname-label: want %s, %s or none, got %q", exposition.HostnameLabel, exposition.HostnameLabelLower, o.hostnameLabel)
	}
	if o.xidWindow <= 0 {
		return fmt.Errorf("--naming.xid-count-window must be positive, got %s", o.xidWindow)
	}
	if o.clockEventsWindow <= 0 {
		return fmt.Errorf("--naming.clock-events-count-window must be positive, got %s", o.clockEventsWindow)
	}
	return nil
}

func (o *options) validateKubernetes(fs *pflag.FlagSet) error {
	switch o.k8sEnabled {
	case "auto", "true", "false":
	default:
		return fmt.Errorf("--kubernetes.enabled: want auto, true or false, got %q", o.k8sEnabled)
	}
	if o.k8sEnabled != "false" && strings.TrimSpace(o.k8sSocket) == "" {
		return fmt.Errorf("--kubernetes.pod-resources-socket must not be empty while --kubernetes.enabled=%s", o.k8sEnabled)
	}
	for _, name := range o.k8sResources {
		if strings.TrimSpace(name) == "" {
			return fmt.Errorf("--kubernetes.resource-names: empty name in the list")
		}
		if _, err := path.Match(name, ""); err != nil {
			return fmt.Errorf("--kubernetes.resource-names: pattern %q: %w", name, err)
		}
	}
	if _, err := podresources.ParseIDType(o.k8sIDType); err != nil {
		return fmt.Errorf("--kubernetes.gpu-id-type: %w", err)
	}
	if o.k8sRefresh < 0 {
		return fmt.Errorf("--kubernetes.refresh-interval must not be negative, got %s", o.k8sRefresh)
	}
	if o.k8sRefresh == 0 {
		o.k8sRefresh = o.interval
	}
	if o.k8sRefresh < minInterval {
		return fmt.Errorf("--kubernetes.refresh-interval must be at least %s, got %s", minInterval, o.k8sRefresh)
	}
	if o.k8sCallTimeout <= 0 {
		return fmt.Errorf("--kubernetes.timeout must be positive, got %s", o.k8sCallTimeout)
	}
	if o.k8sCallTimeout > o.k8sRefresh {
		if fs.Changed("kubernetes.timeout") {
			return fmt.Errorf("--kubernetes.timeout (%s) must not exceed the refresh interval (%s)", o.k8sCallTimeout, o.k8sRefresh)
		}
		o.k8sCallTimeout = o.k8sRefresh
	}
	allow, err := podlabels.ParseAllowlist(o.podLabels)
	if err != nil {
		return err // names the flag
	}
	o.podAllow = allow
	if o.podLabelsLimit < 1 || o.podLabelsLimit > podlabels.MaxLabelsLimit {
		return fmt.Errorf("--kubernetes.pod-labels-limit must be 1..%d, got %d", podlabels.MaxLabelsLimit, o.podLabelsLimit)
	}
	return nil
}

// validateHPC checks the job-mapping flags. The directory need not exist
// at start: a prolog creates it with the first job (dcgm-exporter also
// starts without it).
func (o *options) validateHPC(*pflag.FlagSet) error {
	if o.hpcJobDir != "" && !filepath.IsAbs(o.hpcJobDir) {
		return fmt.Errorf("--hpc.job-mapping-dir must be an absolute path, got %q", o.hpcJobDir)
	}
	if o.hpcRefresh < 0 {
		return fmt.Errorf("--hpc.refresh-interval must not be negative, got %s", o.hpcRefresh)
	}
	if o.hpcRefresh == 0 {
		o.hpcRefresh = o.interval
	}
	if o.hpcRefresh < minInterval {
		return fmt.Errorf("--hpc.refresh-interval must be at least %s, got %s", minInterval, o.hpcRefresh)
	}
	return nil
}

func (o *options) validateDCGM(fs *pflag.FlagSet) error {
	if o.dcgmRemoteAddress != "" && !fs.Changed("dcgm.mode") {
		o.dcgmMode = "remote"
	}
	switch o.dcgmMode {
	case "embedded":
		if o.dcgmRemoteAddress != "" {
			return fmt.Errorf("--dcgm.mode=embedded conflicts with --dcgm.remote-address=%s", o.dcgmRemoteAddress)
		}
	case "remote":
		if strings.TrimSpace(o.dcgmRemoteAddress) == "" {
			return fmt.Errorf("--dcgm.mode=remote needs --dcgm.remote-address")
		}
	default:
		return fmt.Errorf("--dcgm.mode: want embedded or remote, got %q", o.dcgmMode)
	}
	return nil
}
