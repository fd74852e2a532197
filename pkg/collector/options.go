package collector

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/config"
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Options are the --collect.* flags but --collect.processes: how often to
// collect, what, and from which GPUs.
type Options struct {
	Interval, FabricInterval time.Duration
	// Timeout bounds one collection; Validate makes 0 the interval.
	Timeout time.Duration
	// CountersFile is the counters file; empty is the naming's default set.
	CountersFile string
	MaxSeries    int
	// GPUs is --collect.gpus as given; GPUList the indices it names (nil:
	// every GPU), set by Validate.
	GPUs    string
	GPUList []int
}

// AddFlags declares the --collect.* flags on fs, bound to o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.Interval, "collect.interval", 10*time.Second, "Time between two collections from the GPU source (at least 100ms).")
	fs.DurationVar(&o.FabricInterval, "collect.nvlink-interval", 30*time.Second, "Time between two updates of the NVLink, NVSwitch and fabric manager fields and the NVLink states (DCGM: a field group of their own; NVML: the link and fabric calls; the simulator), at least 100ms; links multiply series and NVML calls, so they are sampled less often than the GPUs, and collections in between repeat the last values.")
	fs.DurationVar(&o.Timeout, "collect.timeout", 0, "Longest time one collection may take before it counts as failed, at most the collect interval (0: the collect interval).")
	fs.StringVar(&o.CountersFile, "collect.counters", "", "Counters file listing the fields to collect, dcgm-exporter CSV format (empty: the built-in default set). Reloaded on SIGHUP.")
	fs.IntVar(&o.MaxSeries, "collect.max-series", 0, "Most GPU series on one page; the excess is dropped and counted (0: no limit).")
	fs.StringVar(&o.GPUs, "collect.gpus", "", "GPU indices to export, comma-separated, with ranges (0,2-3); their MIG instances come with them (empty: every GPU).")
}

// Validate checks the flags, each error naming its flag, and fills the
// defaults and GPUList. The counters file is checked when it is read.
func (o *Options) Validate() error {
	if o.Interval < source.MinInterval {
		return fmt.Errorf("--collect.interval must be at least %s, got %s", source.MinInterval, o.Interval)
	}
	if o.FabricInterval < source.MinInterval {
		return fmt.Errorf("--collect.nvlink-interval must be at least %s, got %s", source.MinInterval, o.FabricInterval)
	}
	if o.Timeout < 0 {
		return fmt.Errorf("--collect.timeout must not be negative, got %s", o.Timeout)
	}
	if o.Timeout == 0 {
		o.Timeout = o.Interval
	}
	if o.Timeout < source.MinInterval {
		// 1ns failed every collection.
		return fmt.Errorf("--collect.timeout must be at least %s (or 0: the collect interval), got %s", source.MinInterval, o.Timeout)
	}
	if o.Timeout > o.Interval {
		return fmt.Errorf("--collect.timeout (%s) must not exceed --collect.interval (%s): a collection must end before the next one starts", o.Timeout, o.Interval)
	}
	if o.MaxSeries < 0 {
		return fmt.Errorf("--collect.max-series must not be negative, got %d", o.MaxSeries)
	}
	gpus, err := source.ParseGPUList(o.GPUs)
	if err != nil {
		return fmt.Errorf("--collect.gpus: %w", err)
	}
	o.GPUList = gpus
	return nil
}

// Counters returns what CountersFile lists, or the built-in set of the
// naming when it is empty. The read stops when ctx is done; rows skipped
// or changed are logged.
func (o *Options) Counters(ctx context.Context, naming *exposition.NamingOptions, cat *fields.Catalog, logger *slog.Logger) (exposition.Counters, error) {
	if o.CountersFile == "" {
		return exposition.BuiltinCounters(naming.Naming, cat), nil
	}
	c, err := config.LoadCountersContext(ctx, o.CountersFile, cat)
	if err != nil {
		return exposition.Counters{}, fmt.Errorf("--collect.counters: %w", err)
	}
	for _, sk := range c.Skipped {
		logger.Warn("counters file row skipped: gpu-exporter does not export it", "at", sk.Where, "name", sk.Name, "reason", sk.Reason)
	}
	for _, w := range c.Warnings {
		logger.Warn("counters file row read with a change", "at", w.Where, "name", w.Name, "warning", w.Message)
	}
	k, unused := exposition.FileCounters(naming.Naming, c, naming.XIDCountWindow, naming.ClockEventsCountWindow)
	if unused {
		logger.Info("counters file lists label fields or DCGM_EXP_* counters; they apply with --naming=dcgm only", "file", o.CountersFile)
	}
	return k, nil
}

// Config returns the collector's configuration for o, collecting k.
func (o *Options) Config(k exposition.Counters) Config {
	return Config{
		Interval: o.Interval, Timeout: o.Timeout, MaxSeries: o.MaxSeries, GPUs: o.GPUList,
		Fields: k.Fields, Labels: k.Labels, XIDErrorsCount: k.XIDErrorsCount, ClockEventsCount: k.ClockEventsCount,
	}
}
