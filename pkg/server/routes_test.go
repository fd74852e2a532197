package server

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestTelemetryPathShape checks --web.telemetry-path values that used to
// panic in http.ServeMux (a duplicate or malformed pattern) or to take
// another route.
func TestTelemetryPathShape(t *testing.T) {
	t.Parallel()
	cases := []struct {
		path  string
		pprof bool
		want  string // "" when accepted
	}{
		{"/metrics", false, ""},
		{"/gpu/metrics", false, ""},
		{"/metrics.txt", false, ""},
		{"/", false, ""},
		{"/debug/pprof/x", false, ""},
		{"/healthz", false, "health endpoint"},
		{"/readyz", false, "health endpoint"},
		{"/debug/pprof/", true, "without a trailing /"},
		{"/debug/pprof/cmdline", true, "--web.enable-pprof"},
		{"/debug/pprof", true, "--web.enable-pprof"},
		{"/met rics", false, "' ' at byte 4"},
		{"/{", false, "'{' at byte 1"},
		{"/{name}", false, "'{' at byte 1"},
		{"/{$}", false, "'{' at byte 1"},
		{"/%41", false, "'%' at byte 1"},
		{"/metrics?x", false, "'?'"},
		{"/metrics#x", false, "'#'"},
		{"/métrique", false, "not allowed"},
		{"/metrics/", false, `such as "/metrics"`},
		{"//metrics", false, "clean path"},
		{"/a/../metrics", false, "clean path"},
		{"/./metrics", false, "clean path"},
		{"metrics", false, "must start with /"},
		{"GET /metrics", false, "must start with /"},
		{"", false, "must not be empty"},
		{"/" + strings.Repeat("m", maxTelemetryPath), false, "longer than"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			err := ValidateTelemetryPath(tc.path, tc.pprof)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--web.telemetry-path") {
				t.Fatalf("err = %v, want one naming the flag and containing %q", err, tc.want)
			}
			// server.New validates the same way and never panics.
			reg := prometheus.NewRegistry()
			_, nerr := New(Config{TelemetryPath: tc.path, EnablePprof: tc.pprof, ListenAddresses: []string{":0"}}, &fakePages{}, reg, reg, slog.New(slog.DiscardHandler))
			if (nerr == nil) != (err == nil) {
				t.Errorf("New err = %v, ValidateTelemetryPath err = %v", nerr, err)
			}
		})
	}
}

// TestTelemetryPathRoot serves metrics at "/" exactly, with no landing
// page, and keeps the health routes.
func TestTelemetryPathRoot(t *testing.T) {
	t.Parallel()
	s, pages := newTestServer(t, Config{TelemetryPath: "/"})
	pages.page.Store(testPage(t))
	for path, want := range map[string]int{"/": http.StatusOK, "/healthz": http.StatusOK, "/readyz": http.StatusServiceUnavailable, "/other": http.StatusNotFound} {
		if r := get(t, s.Handler(), path, nil); r.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, r.StatusCode, want)
		}
	}
	if r := get(t, s.Handler(), "/", nil); !strings.Contains(string(body(t, r)), "gpu_utilization_ratio") {
		t.Error("/ does not serve the metrics page")
	}
}

// FuzzTelemetryPath: any path ValidateTelemetryPath accepts builds a
// server (no ServeMux panic) that serves metrics there.
func FuzzTelemetryPath(f *testing.F) {
	for _, s := range []string{"/metrics", "/", "/healthz", "/{", "/a b", "/debug/pprof/", "/x/"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, path string, pprof bool) {
		if ValidateTelemetryPath(path, pprof) != nil {
			return
		}
		reg := prometheus.NewRegistry()
		pages := &fakePages{}
		pages.page.Store(testPage(t))
		s, err := New(Config{TelemetryPath: path, EnablePprof: pprof, ListenAddresses: []string{":0"}}, pages, reg, reg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("accepted path %q: New: %v", path, err)
		}
		if r := get(t, s.Handler(), path, nil); r.StatusCode != http.StatusOK || !strings.Contains(string(body(t, r)), "gpu_utilization_ratio") {
			t.Errorf("GET %s = %d, want the metrics page", path, r.StatusCode)
		}
	})
}
