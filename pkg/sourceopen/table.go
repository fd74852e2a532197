package sourceopen

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/sim/node"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/dcgm"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/nvml"
)

// table lists every value of --source, in the order its help names them.
// A new source is one more row.
func table() []source.Kind {
	return []source.Kind{
		{Name: auto, Usage: "auto (DCGM, else NVML)"}, // the table's own row: its options are newAuto's
		dcgm.Kind(),
		nvml.Kind(),
		node.Kind(),
	}
}

// auto is --source's default: DCGM when it answers, else NVML.
const auto = "auto"

// ProbeTimeout bounds how long --source=auto waits for DCGM to answer.
const ProbeTimeout = 10 * time.Second

// autoOptions picks DCGM or NVML with their own options; it has no flags
// of its own.
type autoOptions struct {
	dcgm *dcgm.Options
	nvml *nvml.Options
}

func (o *Options) newAuto() *autoOptions {
	a := &autoOptions{}
	for _, opt := range o.opts {
		switch opt := opt.(type) {
		case *dcgm.Options:
			a.dcgm = opt
		case *nvml.Options:
			a.nvml = opt
		}
	}
	return a
}

func (*autoOptions) AddFlags(*pflag.FlagSet) {}

func (*autoOptions) Validate() error { return nil }

// Open picks DCGM when it answers, else NVML when the driver's library is
// there, and says why neither would do otherwise.
func (a *autoOptions) Open(ctx context.Context, s source.Settings, logger *slog.Logger) (*source.Opened, error) {
	opened, err := a.dcgm.Open(ctx, s, logger)
	if err != nil {
		return nil, fmt.Errorf("--source=auto: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	_, dcgmErr := opened.Source.Inventory(pctx)
	if dcgmErr == nil {
		logger.Info("--source=auto picked DCGM", "mode", a.dcgm.Mode)
		return opened, nil
	}
	opened.Close()
	nvmlErr := nvml.Available(pctx)
	if nvmlErr == nil {
		logger.Info("--source=auto picked NVML: DCGM did not answer", "dcgm_err", dcgmErr)
		return a.nvml.Open(ctx, s, logger)
	}
	return nil, fmt.Errorf("--source=auto: no GPU source answered: DCGM: %w; NVML: %w. Use --source=dcgm to wait for a hostengine, or --source=sim to try the simulator", dcgmErr, nvmlErr)
}

// Traits are DCGM's, but for what is said when DCGM does not answer.
func (a *autoOptions) Traits() source.Traits {
	t := a.dcgm.Traits()
	dcgmWhy := t.Checkup.Why
	t.Checkup.LocalDevices = true // NVML, if DCGM does not answer
	t.Checkup.Why = func(picked string) string {
		if picked == dcgm.Kind().Name {
			return dcgmWhy(picked)
		}
		return " (DCGM did not answer)"
	}
	t.Checkup.Fix = func(missing func(string) bool) string {
		if missing(cgocall.LibDCGM) && missing(cgocall.LibNVML) {
			return "neither " + cgocall.LibDCGM + " nor " + cgocall.LibNVML + " found: " + nvml.DriverFix + "; add DCGM (datacenter-gpu-manager-4) for profiling fields, or use --source=sim to try the simulator"
		}
		return "DCGM: " + a.dcgm.Fix(missing(cgocall.LibDCGM)) + "; NVML: check the driver with nvidia-smi"
	}
	return t
}
