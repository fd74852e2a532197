package main

import (
	"context"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"
)

// logCompat notes at start-up what dcgm-exporter's and the naming and process flags did.
func logCompat(logger *slog.Logger, o *options, fs *pflag.FlagSet) {
	use := o.dcgmExporter
	for _, n := range use.Already {
		logger.Info("dcgm-exporter flag needs no counterpart in gpu-exporter", "note", n)
	}
	if len(use.Given) > 0 && !fs.Changed("naming") {
		logger.Info("dcgm-exporter flags or environment variables in use, but series keep gpu-exporter's names and units; add --naming=dcgm for dcgm-exporter's DCGM_FI_* names, units and labels", "given", strings.Join(use.Given, ","))
	}
	if level, msg, args := o.naming.StartupLog(fs.Changed); msg != "" {
		logger.Log(context.Background(), level, msg, args...) //nolint:sloglint // msg is one of StartupLog's constant messages
	}
	if idle, _ := o.processesIdle(fs.Changed); idle {
		logger.Warn("--collect.processes has no effect with this naming: it has no process accounting families, so process accounting does not run",
			"naming", o.naming.Name, "collect_processes", o.processes.Processes)
	}
}
