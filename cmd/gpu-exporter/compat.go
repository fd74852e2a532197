package main

import (
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
)

// logCompat notes at start-up what dcgm-exporter's flags did, and naming
// flags that have no effect.
func logCompat(logger *slog.Logger, o *options, fs *pflag.FlagSet) {
	use := o.dcgmExporter
	for _, n := range use.Already {
		logger.Info("dcgm-exporter flag needs no counterpart in gpu-exporter", "note", n)
	}
	if len(use.Given) > 0 && !fs.Changed("naming") {
		logger.Info("dcgm-exporter flags or environment variables in use, but series keep gpu-exporter's names and units; add --naming=dcgm for dcgm-exporter's DCGM_FI_* names, units and labels", "given", strings.Join(use.Given, ","))
	}
	if o.namingMode == exposition.NamingDCGM {
		return
	}
	var idle []string
	for _, name := range []string{"naming.hostname-label", "naming.old-namespace", "naming.replace-blanks-in-model-name", "naming.vgpu-label", "naming.xid-count-window", "naming.clock-events-count-window"} {
		if fs.Changed(name) {
			idle = append(idle, "--"+name)
		}
	}
	if len(idle) > 0 {
		logger.Warn("naming flags have no effect with --naming=prometheus", "flags", strings.Join(idle, ","))
	}
}
