package main

import (
	"log/slog"
	"strings"

	"github.com/spf13/pflag"
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
	if idle := o.naming.Idle(fs.Changed); len(idle) > 0 {
		logger.Warn("naming flags have no effect with --naming=prometheus", "flags", strings.Join(idle, ","))
	}
}
