// Package server serves the exporter over HTTP: the metrics page with content
// negotiation and gzip, health endpoints, the landing page and optional
// pprof, with TLS and basic auth from exporter-toolkit's web config file.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
)

// Pages gives the current page and readiness; the collector implements it.
type Pages interface {
	Page() *exposition.Page
	Ready() bool
}

// Config configures the HTTP server.
type Config struct {
	// ListenAddresses are host:port pairs to listen on.
	ListenAddresses []string
	// WebConfigFile is exporter-toolkit's TLS and auth file; empty for none.
	WebConfigFile string
	// SystemdSocket uses systemd socket activation instead of listening.
	SystemdSocket bool
	// TelemetryPath is where metrics are served.
	TelemetryPath string
	// ReadHeaderTimeout, WriteTimeout and IdleTimeout bound slow clients.
	ReadHeaderTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxHeaderBytes caps request headers.
	MaxHeaderBytes int
	// EnablePprof mounts /debug/pprof/ (behind the same auth as the rest).
	EnablePprof bool
	// SelfMetricsMaxAge is how long one encoding of the exporter's own
	// metrics is shared by scrapes; 0 gathers them on every scrape.
	SelfMetricsMaxAge time.Duration
}

// Server is the exporter's HTTP server.
type Server struct {
	cfg      Config
	logger   *slog.Logger
	http     *http.Server
	metrics  *metricsHandler
	listener []net.Listener
}

// New validates cfg and builds the server; it does not listen yet.
func New(cfg Config, pages Pages, gatherer prometheus.Gatherer, reg prometheus.Registerer, logger *slog.Logger) (*Server, error) {
	if !strings.HasPrefix(cfg.TelemetryPath, "/") {
		return nil, fmt.Errorf("--web.telemetry-path must start with /, got %q", cfg.TelemetryPath)
	}
	if len(cfg.ListenAddresses) == 0 && !cfg.SystemdSocket {
		return nil, errors.New("--web.listen-address: at least one address is required")
	}
	if cfg.WebConfigFile != "" {
		if err := web.Validate(cfg.WebConfigFile); err != nil {
			return nil, fmt.Errorf("--web.config.file %s: %w", cfg.WebConfigFile, err)
		}
	}
	mh, err := newMetricsHandler(pages, gatherer, reg, logger, cfg.SelfMetricsMaxAge)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, logger: logger, metrics: mh}
	mux := http.NewServeMux()
	mux.Handle(cfg.TelemetryPath, mh)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !pages.Ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: no successful GPU collection yet\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	if cfg.EnablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if cfg.TelemetryPath != "/" {
		links := []web.LandingLinks{
			{Address: cfg.TelemetryPath, Text: "Metrics"},
			{Address: "/healthz", Text: "Health", Description: "200 while the process runs"},
			{Address: "/readyz", Text: "Readiness", Description: "200 once a GPU collection has succeeded"},
		}
		profiling := "false"
		if cfg.EnablePprof {
			profiling = "true"
		}
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "GPU Exporter",
			Description: "Prometheus exporter for GPU telemetry with Kubernetes pod attribution",
			Version:     version.Info(),
			Links:       links,
			Profiling:   profiling,
		})
		if err != nil {
			return nil, fmt.Errorf("landing page: %w", err)
		}
		mux.Handle("/", landing)
	}
	s.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// Handler returns the server's handler, without TLS or auth (for tests).
func (s *Server) Handler() http.Handler { return s.http.Handler }

// Listen opens the listeners, so that "address in use" is reported at start
// rather than from a goroutine.
func (s *Server) Listen() error {
	if s.cfg.SystemdSocket {
		return nil
	}
	for _, addr := range s.cfg.ListenAddresses {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("--web.listen-address %s: %w", addr, err)
		}
		s.listener = append(s.listener, l)
	}
	return nil
}

// Addrs returns the bound addresses (useful with port 0).
func (s *Server) Addrs() []net.Addr {
	out := make([]net.Addr, len(s.listener))
	for i, l := range s.listener {
		out[i] = l.Addr()
	}
	return out
}

func (s *Server) closeListeners() {
	for _, l := range s.listener {
		_ = l.Close()
	}
	s.listener = nil
}

// Serve serves until Shutdown; it returns http.ErrServerClosed then.
func (s *Server) Serve() error {
	cfgFile := s.cfg.WebConfigFile
	systemd := s.cfg.SystemdSocket
	addrs := s.cfg.ListenAddresses
	flags := &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &cfgFile}
	if systemd {
		return web.ListenAndServe(s.http, flags, s.logger)
	}
	return web.ServeMultiple(s.listener, s.http, flags, s.logger)
}

// Shutdown stops accepting connections and waits for in-flight requests
// until ctx is done.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }
