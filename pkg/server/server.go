// Package server serves the exporter over HTTP: the metrics page with content
// negotiation and gzip, health endpoints, the landing page and optional
// pprof, with TLS and basic auth from exporter-toolkit's web config file,
// and optionally a second, plain-HTTP listener for the health probes only.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
)

// Pages gives the current page and readiness; the collector implements it.
type Pages interface {
	Page() *exposition.Page
	// Readiness reports whether the exporter is ready and, when it is not,
	// why (the /readyz body).
	Readiness() (ready bool, reason string)
}

// Config configures the HTTP server.
type Config struct {
	// ListenAddresses are host:port pairs to listen on, or vsock://:port
	// (vsock://CID:port) addresses, which exporter-toolkit opens.
	ListenAddresses []string
	// WebConfigFile is exporter-toolkit's TLS and auth file; empty for none.
	WebConfigFile string
	// SystemdSocket uses systemd socket activation instead of listening.
	SystemdSocket bool
	// TelemetryPath is where metrics are served (see ValidateTelemetryPath).
	TelemetryPath string
	// HealthListenAddress, when not empty, is a host:port where a second,
	// plain-HTTP listener serves /healthz and /readyz only, without the web
	// config's TLS and basic auth, for probes.
	HealthListenAddress string
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
	health   *http.Server // nil without HealthListenAddress
	metrics  *metricsHandler
	listener []net.Listener
	healthL  net.Listener
	open     atomic.Int64 // connections open on both servers
}

// New validates cfg and builds the server; it does not listen yet.
func New(cfg Config, pages Pages, gatherer prometheus.Gatherer, reg prometheus.Registerer, logger *slog.Logger) (*Server, error) {
	if err := ValidateTelemetryPath(cfg.TelemetryPath, cfg.EnablePprof); err != nil {
		return nil, err
	}
	if len(cfg.ListenAddresses) == 0 && !cfg.SystemdSocket {
		return nil, errors.New("--web.listen-address: at least one address is required")
	}
	if cfg.WebConfigFile != "" {
		if err := validateWebConfig(cfg.WebConfigFile); err != nil {
			return nil, err
		}
	}
	mh, err := newMetricsHandler(pages, gatherer, reg, logger, cfg.SelfMetricsMaxAge)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, logger: logger, metrics: mh}
	var landing http.Handler
	if cfg.TelemetryPath != "/" {
		if landing, err = landingPage(cfg); err != nil {
			return nil, err
		}
	}
	health, ready := healthHandler(), readyHandler(pages)
	s.http = s.newHTTPServer(routes(cfg, mh, health, ready, landing))
	if cfg.HealthListenAddress != "" {
		s.health = s.newHTTPServer(healthRoutes(health, ready))
	}
	return s, nil
}

func (s *Server) newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
		ConnState:         s.countConn,
	}
}

// countConn keeps the number of open connections, for the shutdown log.
func (s *Server) countConn(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		s.open.Add(1)
	case http.StateClosed, http.StateHijacked:
		s.open.Add(-1)
	}
}

// webConfigStatTimeout bounds the look at --web.config.file before it is
// read: a path on a hung mount fails the start instead of hanging it.
const webConfigStatTimeout = 5 * time.Second

// validateWebConfig refuses a web config path that is not a regular file
// before exporter-toolkit reads it (a named pipe would block its read), then
// lets exporter-toolkit check the content.
func validateWebConfig(path string) error {
	st, err := bounded.Stat(context.Background(), path, webConfigStatTimeout)
	if err != nil {
		return fmt.Errorf("--web.config.file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("--web.config.file %s: not a regular file (mode %s)", path, st.Mode().Type())
	}
	if err := web.Validate(path); err != nil {
		return fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	return nil
}

func landingPage(cfg Config) (http.Handler, error) {
	links := []web.LandingLinks{
		{Address: cfg.TelemetryPath, Text: "Metrics"},
		{Address: healthPath, Text: "Health", Description: "200 while the process runs"},
		{Address: readyPath, Text: "Readiness", Description: "200 once a GPU collection has succeeded and, from DCGM or NVML, found a GPU"},
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
	return landing, nil
}

// Handler returns the server's handler, without TLS or auth (for tests).
func (s *Server) Handler() http.Handler { return s.http.Handler }

// IsVsockAddress reports whether a listen address is a vsock:// address,
// which exporter-toolkit's web.ListenAndServe listens on (its
// tls_config.go, "vsock://").
func IsVsockAddress(addr string) bool { return strings.HasPrefix(addr, "vsock://") }

// byToolkit reports whether exporter-toolkit's web.ListenAndServe opens the
// main listeners: for systemd socket activation and vsock addresses, which
// it alone knows how to open.
func (s *Server) byToolkit() bool {
	return s.cfg.SystemdSocket || slices.ContainsFunc(s.cfg.ListenAddresses, IsVsockAddress)
}

// Listen opens the listeners, so that "address in use" is reported at start
// rather than from a goroutine. With systemd socket activation or a vsock
// address, exporter-toolkit opens the main listeners in Serve instead, and
// Addrs is empty.
func (s *Server) Listen() error {
	if !s.byToolkit() {
		for _, addr := range s.cfg.ListenAddresses {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				s.closeListeners()
				return fmt.Errorf("--web.listen-address %s: %w", addr, err)
			}
			s.listener = append(s.listener, l)
		}
	}
	if s.health != nil {
		l, err := net.Listen("tcp", s.cfg.HealthListenAddress)
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("--web.health-listen-address %s: %w", s.cfg.HealthListenAddress, err)
		}
		s.healthL = l
	}
	return nil
}

// Addrs returns the bound addresses of the main listeners (useful with
// port 0).
func (s *Server) Addrs() []net.Addr {
	out := make([]net.Addr, len(s.listener))
	for i, l := range s.listener {
		out[i] = l.Addr()
	}
	return out
}

// HealthAddr returns the health listener's bound address; nil without one.
func (s *Server) HealthAddr() net.Addr {
	if s.healthL == nil {
		return nil
	}
	return s.healthL.Addr()
}

func (s *Server) closeListeners() {
	for _, l := range s.listener {
		_ = l.Close()
	}
	s.listener = nil
	if s.healthL != nil {
		_ = s.healthL.Close()
		s.healthL = nil
	}
}

// Serve serves until Shutdown; it returns http.ErrServerClosed then, or the
// first error of either listener.
func (s *Server) Serve() error {
	errs := make(chan error, 2)
	if s.health != nil && s.healthL != nil {
		go func() { errs <- s.health.Serve(s.healthL) }()
	}
	go func() { errs <- s.serveMain() }()
	return <-errs
}

func (s *Server) serveMain() error {
	cfgFile := s.cfg.WebConfigFile
	systemd := s.cfg.SystemdSocket
	addrs := s.cfg.ListenAddresses
	flags := &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &cfgFile}
	if s.byToolkit() {
		return web.ListenAndServe(s.http, flags, s.logger)
	}
	return web.ServeMultiple(s.listener, s.http, flags, s.logger)
}

// Shutdown stops accepting connections and lets in-flight requests finish
// until ctx is done; then it closes the connections still open (slow
// readers, stalled clients). Running out of grace is a normal stop, logged
// and not an error; only a failure to close is.
func (s *Server) Shutdown(ctx context.Context) error {
	servers := []*http.Server{s.http}
	if s.health != nil {
		servers = append(servers, s.health)
	}
	done := make(chan error, len(servers))
	for _, srv := range servers {
		go func() { done <- srv.Shutdown(ctx) }()
	}
	var graceOver bool
	for range servers {
		if err := <-done; err != nil {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				return err
			}
			graceOver = true
		}
	}
	if !graceOver {
		return nil
	}
	open := s.open.Load()
	var errs []error
	for _, srv := range servers {
		if err := srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	s.logger.Warn("shutdown grace period over; closed the connections still open", "connections", open)
	return errors.Join(errs...)
}
