package server

import (
	"fmt"
	"net/http"
	"net/http/pprof"
	"path"
	"strings"
)

// Fixed routes of the exporter; --web.telemetry-path may not take them.
const (
	healthPath = "/healthz"
	readyPath  = "/readyz"
	pprofPath  = "/debug/pprof/"
)

// maxTelemetryPath bounds --web.telemetry-path; real ones are a few bytes.
const maxTelemetryPath = 256

// ValidateTelemetryPath checks a --web.telemetry-path value: an absolute,
// clean URL path of unreserved characters (RFC 3986, section 2.3) that
// takes none of the exporter's own routes. "/" serves metrics at the root
// only, without the landing page. Any path it accepts can be registered on
// an http.ServeMux without a panic.
func ValidateTelemetryPath(p string, pprofOn bool) error {
	const flag = "--web.telemetry-path"
	switch {
	case p == "":
		return fmt.Errorf("%s must not be empty", flag)
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%s must start with /, got %q", flag, p)
	case len(p) > maxTelemetryPath:
		return fmt.Errorf("%s is longer than %d bytes", flag, maxTelemetryPath)
	}
	for i := 0; i < len(p); i++ {
		if !urlPathByte(p[i]) {
			return fmt.Errorf("%s %q: character %q at byte %d is not allowed (use letters, digits, '-', '.', '_', '~' and '/')", flag, p, p[i], i)
		}
	}
	if p != "/" && (strings.HasSuffix(p, "/") || path.Clean(p) != p) {
		return fmt.Errorf("%s %q must be a clean path without a trailing /, such as %q", flag, p, path.Clean(p))
	}
	switch {
	case p == healthPath || p == readyPath:
		return fmt.Errorf("%s %q is the exporter's own health endpoint; choose another path", flag, p)
	case pprofOn && (p+"/" == pprofPath || strings.HasPrefix(p, pprofPath)):
		return fmt.Errorf("%s %q is under %s, served by --web.enable-pprof; choose another path", flag, p, pprofPath)
	}
	return nil
}

// urlPathByte reports whether b may appear in a telemetry path: RFC 3986's
// unreserved characters and the segment separator. Everything else (space,
// '%', '{', '}', '?', '#', ...) is refused, so the path is also a literal
// http.ServeMux pattern.
func urlPathByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("-._~/", b) >= 0
}

// routes builds the main listener's handler. landing is nil when the
// telemetry path is "/".
func routes(cfg Config, metrics, health, ready, landing http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	if cfg.TelemetryPath == "/" {
		mux.Handle("/{$}", metrics) // exactly "/": other paths stay 404
	} else {
		mux.Handle(cfg.TelemetryPath, metrics)
	}
	mux.Handle(healthPath, health)
	mux.Handle(readyPath, ready)
	if cfg.EnablePprof {
		mux.HandleFunc(pprofPath, pprof.Index)
		mux.HandleFunc(pprofPath+"cmdline", pprof.Cmdline)
		mux.HandleFunc(pprofPath+"profile", pprof.Profile)
		mux.HandleFunc(pprofPath+"symbol", pprof.Symbol)
		mux.HandleFunc(pprofPath+"trace", pprof.Trace)
	}
	if landing != nil {
		mux.Handle("/", landing)
	}
	return mux
}

// healthRoutes builds the health listener's handler: the two probes only.
func healthRoutes(health, ready http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle(healthPath, health)
	mux.Handle(readyPath, ready)
	return mux
}

// healthHandler answers 200 while the process runs.
func healthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
}

// readyHandler answers 200 when pages are ready, else 503 with the reason.
func readyHandler(pages Pages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ok, reason := pages.Readiness(); !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(reason + "\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
}
