// Command gpu-exporter serves GPU telemetry from DCGM, NVML or the built-in
// simulator as Prometheus metrics, with each GPU attributed to the
// Kubernetes pod, namespace and container that holds it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/common/version"
	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/doctor"
	"github.com/gpu-exporter/gpu-exporter/pkg/rightsize"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr, hup))
}

// run is main without the process globals: it returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, hup <-chan os.Signal) int {
	for _, c := range commands(getenv) {
		if len(args) > 0 && args[0] == c.name {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	o, fs, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpu-exporter: %v\n", err)
		return 2
	}
	if o.version {
		fmt.Fprintln(stdout, version.Print("gpu-exporter"))
		return 0
	}
	logger := o.log.Logger(stderr)
	logger.Info("starting gpu-exporter", "version", version.Info(), "build_context", version.BuildContext())
	logCompat(logger, o, fs)
	a, err := newApp(ctx, o, logger)
	if err != nil && ctx.Err() != nil {
		// SIGTERM or SIGINT during start-up: a requested stop, not a failure.
		logger.Info("stopped during start-up", "err", err)
		return 0
	}
	if err != nil {
		logger.Error("cannot start", "err", err)
		return 1
	}
	if err := a.run(ctx, hup); err != nil {
		logger.Error("exporter stopped on error", "err", err)
		return 1
	}
	logger.Info("stopped")
	return 0
}

// command is a subcommand, named first on the command line.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands are the subcommands, as --help lists them.
func commands(getenv func(string) string) []command {
	return []command{
		{doctorCommand, doctor.Summary, func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			return runDoctor(ctx, args, getenv, stdout, stderr)
		}},
		{"rightsize", rightsize.Summary, rightsize.Main},
		{"help", "print this help on stdout", func(_ context.Context, _ []string, stdout, _ io.Writer) int {
			_, _, _ = parseFlags([]string{"--help"}, getenv, stdout)
			return 0
		}},
	}
}
