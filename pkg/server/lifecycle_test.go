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
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
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

// heldPages answers like fakePages once release is closed; until then
// each call waits, so that a request stays in flight. held counts the
// calls waiting.
type heldPages struct {
	fakePages
	release chan struct{}
	held    atomic.Int32
}

func (p *heldPages) Page() *exposition.Page {
	p.held.Add(1)
	<-p.release
	return p.fakePages.Page()
}

func (p *heldPages) Readiness() (bool, string) {
	p.held.Add(1)
	<-p.release
	return p.fakePages.Readiness()
}

// lockedBuffer collects log lines written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestShutdownClosesStalledConnections: a client that holds a connection
// past the grace period is cut off, and Shutdown reports no error: running
// out of grace is a normal stop. Nothing else would end the connections:
// the header timeout is an hour, and a request in flight waits until the
// test ends. So Shutdown returning (waited for with a deadline, not timed)
// and its log line, which only the grace period running out with the
// connections open writes, show that the grace period was applied. (A
// half-read request would also be closed by net/http's own rule for
// connections that sent no complete header within 5s, which a test
// timing Shutdown had to race.)
func TestShutdownClosesStalledConnections(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		request string
		held    bool // the handler waits: the request is in flight
	}{
		{"half a request", "GET /metrics HTTP/1.1\r\nHost: x\r\n", false},
		{"a request still being answered", "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pages := &heldPages{release: make(chan struct{})}
			if tc.held {
				t.Cleanup(func() { close(pages.release) }) // after the connections are closed
			} else {
				close(pages.release)
			}
			pages.page.Store(testPage(t))
			logs := &lockedBuffer{}
			reg := prometheus.NewRegistry()
			s, err := New(Config{TelemetryPath: "/metrics", ListenAddresses: []string{"127.0.0.1:0"}, HealthListenAddress: "127.0.0.1:0",
				ReadHeaderTimeout: time.Hour}, pages, reg, reg, slog.New(slog.NewTextHandler(logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
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
				request := tc.request
				if addr == s.HealthAddr().String() {
					request = strings.Replace(request, "/metrics", "/readyz", 1)
				}
				if _, err := c.Write([]byte(request)); err != nil {
					t.Fatal(err)
				}
				conns = append(conns, c)
			}
			poll.Until(t, "both connections tracked by the server", func() bool { return s.open.Load() == 2 })
			if tc.held {
				poll.Until(t, "both requests in their handlers", func() bool { return pages.held.Load() == 2 })
			}
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			shut := make(chan error, 1)
			go func() { shut <- s.Shutdown(ctx) }()
			if err := poll.Receive(t, "Shutdown to return once the grace period is over", shut); err != nil {
				t.Errorf("Shutdown after the grace period = %v, want nil", err)
			}
			if log := logs.String(); !strings.Contains(log, "shutdown grace period over") || !strings.Contains(log, "connections=2") {
				t.Errorf("log does not say the grace period ran out with both connections open:\n%s", log)
			}
			for _, c := range conns {
				// Shutdown closed the connections before returning: the read
				// ends at once; the deadline only stops a test whose server
				// left them open.
				_ = c.SetReadDeadline(time.Now().Add(poll.DefaultTimeout))
				if _, err := bufio.NewReader(c).ReadByte(); err == nil {
					t.Error("stalled connection still open after Shutdown")
				} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
					t.Error("stalled connection not closed by Shutdown")
				}
			}
			if err := poll.Receive(t, "Serve to return", served); !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("Serve = %v, want http.ErrServerClosed", err)
			}
		})
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
