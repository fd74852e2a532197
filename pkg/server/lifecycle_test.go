//go:build unix

package server

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"
)

// basicAuthConfig writes a web config that requires basic auth (no TLS).
func basicAuthConfig(t *testing.T) string {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(p, []byte("basic_auth_users:\n  prom: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestHealthListener: with basic auth on, the main listener refuses the
// probes without credentials while the health listener answers them, and
// serves nothing else.
func TestHealthListener(t *testing.T) {
	t.Parallel()
	s, pages := newTestServer(t, Config{WebConfigFile: basicAuthConfig(t), HealthListenAddress: "127.0.0.1:0"})
	pages.page.Store(testPage(t))
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve() }()
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	main, health := "http://"+s.Addrs()[0].String(), "http://"+s.HealthAddr().String()
	cases := []struct {
		url   string
		ready bool
		want  int
	}{
		{main + "/readyz", false, http.StatusUnauthorized},
		{main + "/healthz", false, http.StatusUnauthorized},
		{health + "/healthz", false, http.StatusOK},
		{health + "/readyz", false, http.StatusServiceUnavailable},
		{health + "/readyz", true, http.StatusOK},
		{health + "/metrics", true, http.StatusNotFound},
		{health + "/", true, http.StatusNotFound},
		{health + "/debug/pprof/", true, http.StatusNotFound},
	}
	for _, tc := range cases {
		pages.ready.Store(tc.ready)
		if got := status(t, tc.url); got != tc.want {
			t.Errorf("GET %s (ready %v) = %d, want %d", tc.url, tc.ready, got, tc.want)
		}
	}
}

func TestHealthListenAddressInUse(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, _ := newTestServer(t, Config{HealthListenAddress: l.Addr().String()})
	if err := s.Listen(); err == nil || !strings.Contains(err.Error(), "--web.health-listen-address "+l.Addr().String()) {
		t.Errorf("Listen error = %v, want one naming the flag and address", err)
	}
	if len(s.Addrs()) != 0 {
		t.Error("main listeners left open after the failure")
	}
}

// TestShutdownClosesStalledConnections: a client that holds a connection
// past the grace period is cut off, and Shutdown reports no error: running
// out of grace is a normal stop.
func TestShutdownClosesStalledConnections(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t, Config{HealthListenAddress: "127.0.0.1:0", ReadHeaderTimeout: time.Minute})
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	var conns []net.Conn
	for _, addr := range []string{s.Addrs()[0].String(), s.HealthAddr().String()} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Half a request: the server waits for the rest.
		if _, err := c.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n")); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	// Wait until both connections are tracked by the server.
	deadline := time.Now().Add(5 * time.Second)
	for s.open.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("connections open = %d, want 2", s.open.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown after the grace period = %v, want nil", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Shutdown took %s", took)
	}
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := bufio.NewReader(c).ReadByte(); err == nil {
			t.Error("stalled connection still open after Shutdown")
		} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			t.Error("stalled connection not closed by Shutdown")
		}
	}
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve = %v, want http.ErrServerClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Serve did not return")
	}
}

// TestWebConfigNotRegularFile: a named pipe as --web.config.file used to
// block start-up in exporter-toolkit's read.
func TestWebConfigNotRegularFile(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "web.yml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		reg := prometheus.NewRegistry()
		_, err := New(Config{TelemetryPath: "/metrics", ListenAddresses: []string{":0"}, WebConfigFile: fifo}, &fakePages{}, reg, reg, slog.New(slog.DiscardHandler))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "--web.config.file") || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("New blocked on a named pipe")
	}
}
