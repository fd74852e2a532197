package server

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
)

// Options are the --web.* flags: the server's Config and how long a
// shutdown waits for requests in flight.
type Options struct {
	Config
	// ShutdownGrace is how long in-flight requests may take to finish on
	// SIGTERM (--web.shutdown-grace).
	ShutdownGrace time.Duration
}

// AddFlags declares the --web.* flags on fs, bound to o, and sets the
// settings that have no flag.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	c := &o.Config
	c.ReadHeaderTimeout, c.IdleTimeout, c.MaxHeaderBytes, c.SelfMetricsMaxAge = 10*time.Second, 2*time.Minute, 64<<10, time.Second
	fs.StringSliceVar(&c.ListenAddresses, "web.listen-address", []string{":9400"}, "Addresses to listen on for HTTP requests (repeatable or comma-separated): host:port, or vsock://:port or vsock://CID:port (virtio-vsock).")
	fs.StringVar(&c.WebConfigFile, "web.config.file", "", "Path to a web configuration file enabling TLS and/or basic auth (exporter-toolkit format).")
	fs.BoolVar(&c.SystemdSocket, "web.systemd-socket", false, "Use systemd socket activation listeners instead of --web.listen-address.")
	fs.StringVar(&c.TelemetryPath, "web.telemetry-path", "/metrics", "Path under which to expose metrics.")
	fs.DurationVar(&c.WriteTimeout, "web.write-timeout", 30*time.Second, "Longest time to write one HTTP response; bounds slow readers.")
	fs.BoolVar(&c.EnablePprof, "web.enable-pprof", false, "Serve Go profiling endpoints under /debug/pprof/ (behind the same TLS and auth).")
	fs.StringVar(&c.HealthListenAddress, "web.health-listen-address", "", "Address of a second, plain-HTTP listener serving only /healthz and /readyz, without the TLS and basic auth of --web.config.file, for probes (empty: none).")
	fs.DurationVar(&o.ShutdownGrace, "web.shutdown-grace", 10*time.Second, "On SIGTERM, longest time in-flight requests may take to finish; connections still open then are closed.")
}

// Validate checks the --web.* flags before anything listens; each error
// names its flag. The web config file is checked when it is read
// (CheckWebConfigFiles).
func (o *Options) Validate() error {
	if err := CheckListeners(o.ListenAddresses, o.HealthListenAddress, o.SystemdSocket); err != nil {
		return err // names the flag
	}
	if err := ValidateTelemetryPath(o.TelemetryPath, o.EnablePprof); err != nil {
		return err // names the flag
	}
	if o.WriteTimeout < MinWriteTimeout {
		return fmt.Errorf("--web.write-timeout must be at least %s, got %s", MinWriteTimeout, o.WriteTimeout)
	}
	if o.ShutdownGrace < MinShutdownGrace {
		return fmt.Errorf("--web.shutdown-grace must be at least %s, got %s", MinShutdownGrace, o.ShutdownGrace)
	}
	return nil
}

// MinWriteTimeout is the shortest --web.write-timeout accepted: below it
// responses, /healthz's included, are cut before they are written (1ns
// dropped every connection, and a liveness probe restarted the pod
// forever), and a page of a large node takes longer than that to write to
// a scraper across the network.
const MinWriteTimeout = time.Second

// MinShutdownGrace is the shortest --web.shutdown-grace accepted: less
// cuts every scrape in flight at SIGTERM.
const MinShutdownGrace = 100 * time.Millisecond

// Open checks the web config file (and the files it names), builds the
// server on pages and opens its listeners.
func (o *Options) Open(ctx context.Context, pages Pages, gatherer prometheus.Gatherer, reg prometheus.Registerer, logger *slog.Logger) (*Server, error) {
	if o.WebConfigFile != "" {
		if err := CheckWebConfigFiles(ctx, o.WebConfigFile); err != nil {
			return nil, err
		}
	}
	s, err := New(o.Config, pages, gatherer, reg, logger)
	if err != nil {
		return nil, err
	}
	if err := s.Listen(); err != nil {
		return nil, err
	}
	return s, nil
}
