package server

import (
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/crypto/bcrypt"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

type fakePages struct {
	page  atomic.Pointer[exposition.Page]
	ready atomic.Bool
}

func (f *fakePages) Page() *exposition.Page { return f.page.Load() }
func (f *fakePages) Readiness() (bool, string) {
	if f.ready.Load() {
		return true, ""
	}
	return false, "not ready: testing"
}

func testPage(t *testing.T) *exposition.Page {
	t.Helper()
	cat := fields.MustNew()
	set := cat.Defaults()
	inv := &source.Inventory{Entities: []source.Entity{{Kind: source.GPU, UUID: "GPU-1", Device: "nvidia0", Model: "H100"}}}
	s := source.NewSample(time.Now(), inv, set)
	for c := range set {
		s.Set(0, c, source.IntValue(int64(c)))
	}
	return exposition.NewRenderer(exposition.Options{}).Render(exposition.Input{Sample: s, Holdings: []exposition.Holding{{Entity: 0}}})
}

func newTestServer(t *testing.T, cfg Config) (*Server, *fakePages) {
	t.Helper()
	pages := &fakePages{}
	pages.page.Store(exposition.Empty())
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpu_exporter_test_value", Help: "test"}))
	if cfg.TelemetryPath == "" {
		cfg.TelemetryPath = "/metrics"
	}
	if len(cfg.ListenAddresses) == 0 {
		cfg.ListenAddresses = []string{"127.0.0.1:0"}
	}
	s, err := New(cfg, pages, reg, reg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return s, pages
}

func get(t *testing.T, h http.Handler, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadiness(t *testing.T) {
	t.Parallel()
	s, pages := newTestServer(t, Config{})
	if r := get(t, s.Handler(), "/readyz", nil); r.StatusCode != http.StatusServiceUnavailable || string(body(t, r)) != "not ready: testing\n" {
		t.Errorf("readyz before first collection = %d, want 503 with the reason", r.StatusCode)
	}
	pages.ready.Store(true)
	if r := get(t, s.Handler(), "/readyz", nil); r.StatusCode != http.StatusOK {
		t.Errorf("readyz after = %d, want 200", r.StatusCode)
	}
	if r := get(t, s.Handler(), "/healthz", nil); r.StatusCode != http.StatusOK {
		t.Errorf("healthz = %d, want 200", r.StatusCode)
	}
	r := get(t, s.Handler(), "/", nil)
	if r.StatusCode != http.StatusOK || !bytes.Contains(body(t, r), []byte("/metrics")) {
		t.Error("landing page missing or lacks the metrics link")
	}
}

func TestMetricsText(t *testing.T) {
	t.Parallel()
	s, pages := newTestServer(t, Config{})
	page := testPage(t)
	pages.page.Store(page)
	r := get(t, s.Handler(), "/metrics", nil)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type = %q", ct)
	}
	b := body(t, r)
	if !bytes.HasPrefix(b, page.Text) {
		t.Error("response does not start with the prepared page")
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("response does not parse (duplicate family?): %v", err)
	}
	for _, want := range []string{"gpu_utilization_ratio", "gpu_exporter_test_value", "gpu_exporter_scrapes_total"} {
		if fams[want] == nil {
			t.Errorf("family %s missing", want)
		}
	}
}

func TestMetricsOpenMetrics(t *testing.T) {
	t.Parallel()
	s, pages := newTestServer(t, Config{})
	pages.page.Store(testPage(t))
	r := get(t, s.Handler(), "/metrics", map[string]string{"Accept": "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"})
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text; version=1.0.0") {
		t.Errorf("Content-Type = %q", ct)
	}
	b := body(t, r)
	if !bytes.HasSuffix(b, []byte("# EOF\n")) || bytes.Count(b, []byte("# EOF")) != 1 {
		t.Error("OpenMetrics response must end with exactly one # EOF")
	}
	dec := expfmt.NewDecoder(bytes.NewReader(b), expfmt.FmtOpenMetrics_1_0_0)
	seen := map[string]bool{}
	for {
		var mf dto.MetricFamily
		err := dec.Decode(&mf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("OpenMetrics response does not parse: %v", err)
		}
		if seen[mf.GetName()] {
			t.Fatalf("family %s twice", mf.GetName())
		}
		seen[mf.GetName()] = true
	}
	if !seen["gpu_energy_joules_total"] || !seen["gpu_exporter_test_value"] {
		t.Errorf("families missing: %v", seen)
	}
}

func TestMetricsGzipDecodesToPlain(t *testing.T) {
	t.Parallel()
	s, pages := newTestServer(t, Config{})
	page := testPage(t)
	pages.page.Store(page)
	r := get(t, s.Handler(), "/metrics", map[string]string{"Accept-Encoding": "gzip"})
	if r.Header.Get("Content-Encoding") != "gzip" {
		t.Fatal("gzip not used")
	}
	zr, err := gzip.NewReader(bytes.NewReader(body(t, r)))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(plain, page.Text) || !bytes.Contains(plain, []byte("gpu_exporter_test_value 0")) {
		t.Errorf("gzip body decodes to something else:\n%s", plain)
	}
	if r := get(t, s.Handler(), "/metrics", map[string]string{"Accept-Encoding": "gzip;q=0"}); r.Header.Get("Content-Encoding") != "" {
		t.Error("gzip used although refused with q=0")
	}
}

func TestListenAddressInUse(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, _ := newTestServer(t, Config{ListenAddresses: []string{l.Addr().String()}})
	err = s.Listen()
	if err == nil || !strings.Contains(err.Error(), "--web.listen-address "+l.Addr().String()) {
		t.Errorf("Listen error = %v, want one naming the flag and address", err)
	}
}

func TestBadConfig(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	logger := slog.New(slog.DiscardHandler)
	if _, err := New(Config{TelemetryPath: "metrics", ListenAddresses: []string{":0"}}, &fakePages{}, reg, reg, logger); err == nil || !strings.Contains(err.Error(), "--web.telemetry-path") {
		t.Errorf("bad path error = %v", err)
	}
	bad := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(bad, []byte("tls_server_config: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{TelemetryPath: "/metrics", ListenAddresses: []string{":0"}, WebConfigFile: bad}, &fakePages{}, reg, reg, logger); err == nil || !strings.Contains(err.Error(), "--web.config.file") {
		t.Errorf("bad web config error = %v", err)
	}
}

// TestBasicAuthAndTLS serves over a real listener with exporter-toolkit's web
// config: a wrong password gets 401, a plain-HTTP client is refused.
func TestBasicAuthAndTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := writeSelfSignedCert(t, dir)
	cfgFile := filepath.Join(dir, "web.yml")
	cfg := "tls_server_config:\n  cert_file: " + certFile + "\n  key_file: " + keyFile + "\nbasic_auth_users:\n  prom: " + string(hash) + "\n"
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s, pages := newTestServer(t, Config{WebConfigFile: cfgFile})
	pages.page.Store(testPage(t))
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve() }()
	defer func() { _ = s.Shutdown(t.Context()) }()
	addr := s.Addrs()[0].String()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test cert

	do := func(user, pass string) int {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := do("prom", "wrong"); got != http.StatusUnauthorized {
		t.Errorf("wrong password: %d, want 401", got)
	}
	if got := do("", ""); got != http.StatusUnauthorized {
		t.Errorf("no credentials: %d, want 401", got)
	}
	if got := do("prom", "s3cret"); got != http.StatusOK {
		t.Errorf("right password: %d, want 200", got)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/metrics")
	if err == nil {
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP served metrics although TLS is required")
		}
	}
}
