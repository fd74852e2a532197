// Package kubeapi runs a real kube-apiserver for tests: kube-apiserver-etcd,
// k8s.io/kubernetes' cmd/kube-apiserver over an embedded etcd, built by
// `make tools` into tests/tools/bin (tests/tools/kubeapiserver). One server
// is started per test binary, on first use, and stopped when the binary's
// tests end (Main). Only tests import it.
//
// There is no controller-manager: nothing creates a namespace's default
// ServiceAccount (the ServiceAccount admission plugin refuses pods without
// it), garbage-collects or finishes deleting pods. Use CreateNamespace, and
// delete pods with grace period 0.
package kubeapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/gpu-exporter/gpu-exporter/tests/testbin"
)

// StartTimeout bounds how long Start waits for /readyz; the server is
// ready about 3 s after start on two cores, the first start after a build
// takes longer.
const StartTimeout = 90 * time.Second

// Server is a running kube-apiserver.
type Server struct {
	// Host is the server's https://127.0.0.1:<port> address.
	Host string
	// CAFile is the self-signed serving certificate the server made.
	CAFile string
	// AdminToken authenticates as a member of system:masters.
	AdminToken string
	// Log is the file that holds the server's output.
	Log string

	dir string
	cmd *exec.Cmd
}

// Config returns a client config for token (AdminToken for an
// administrator, or a ServiceAccount token from Token).
func (s *Server) Config(token string) *rest.Config {
	return &rest.Config{
		Host:            s.Host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: s.CAFile},
		QPS:             -1, // no client-side rate limit in tests
	}
}

// Admin returns an administrator's client config.
func (s *Server) Admin() *rest.Config { return s.Config(s.AdminToken) }

// Start starts kube-apiserver-etcd at bin with its data under dir and
// waits until /readyz answers 200, at most StartTimeout. extra are more
// kube-apiserver flags (e.g. --runtime-config).
func Start(bin, dir string, extra ...string) (*Server, error) {
	s := &Server{dir: dir, Log: filepath.Join(dir, "kube-apiserver.log"),
		CAFile: filepath.Join(dir, "certs", "apiserver.crt")}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	s.AdminToken = hex.EncodeToString(tok)
	// --token-auth-file: token,user,uid,"group1,group2" (kube-apiserver's
	// static token file format).
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(s.AdminToken+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		return nil, err
	}
	saKey := filepath.Join(dir, "sa.key")
	if err := writeRSAKey(saKey); err != nil {
		return nil, err
	}
	addr, err := testbin.FreeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(addr, ":")
	s.Host = "https://" + addr
	args := append([]string{
		"--etcd-data-dir=" + filepath.Join(dir, "etcd"), "--",
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + port,
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		"--service-cluster-ip-range=10.96.0.0/24",
		// A loopback advertise address is refused by the endpoint reconciler
		// ("may not be in the loopback range"); tests need no endpoints.
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--watch-cache=true",
	}, extra...)
	log, err := os.Create(s.Log)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	// The server must not outlive a test binary that dies without Main's
	// cleanup (a panic, a timeout).
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	if err := s.waitReady(StartTimeout); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%w (log: %s)", err, tail(s.Log))
	}
	return s, nil
}

// Stop kills the server and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

func (s *Server) waitReady(timeout time.Duration) error {
	// The serving certificate appears only once the server has made it.
	cfg := s.Admin()
	cfg.TLSClientConfig = rest.TLSClientConfig{Insecure: true}
	cfg.Timeout = 2 * time.Second
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	exited := make(chan struct{})
	go func() {
		// Process.Wait would reap it from under Stop; poll with signal 0.
		for ctx.Err() == nil {
			if s.cmd.Process.Signal(syscall.Signal(0)) != nil {
				close(exited)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Host+"/readyz", nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("kube-apiserver not ready within " + timeout.String())
		case <-exited:
			return errors.New("kube-apiserver exited")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func writeRSAKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}

// tail returns the last 2 KiB of a file, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return string(bytes.TrimSpace(b))
}

// shared is the one server of a test binary (see Shared and Main).
type shared struct {
	once sync.Once
	srv  *Server
	err  error
	dir  string
}

// theServer is the test binary's server: a test tool's per-process state,
// like the binary's own temporary directory.
var theServer shared //nolint:gochecknoglobals // one server per test binary, by design

// Shared returns the test binary's server, starting it on first use. A
// missing kube-apiserver-etcd skips the test (fails it under CI); a
// server that does not start fails it. The package's TestMain must call
// Main so that the server is stopped.
func Shared(t testing.TB) *Server {
	t.Helper()
	bin := testbin.Tool(t, "kube-apiserver-etcd")
	theServer.once.Do(func() {
		theServer.dir, theServer.err = os.MkdirTemp("", "kubeapi-")
		if theServer.err == nil {
			theServer.srv, theServer.err = Start(bin, theServer.dir)
		}
	})
	if theServer.err != nil {
		t.Fatalf("kube-apiserver: %v", theServer.err)
	}
	return theServer.srv
}

// Main runs the package's tests and stops the shared server if one was
// started: `func TestMain(m *testing.M) { os.Exit(kubeapi.Main(m)) }`.
func Main(m *testing.M) int {
	code := m.Run()
	if theServer.srv != nil {
		theServer.srv.Stop()
	}
	if theServer.dir != "" {
		_ = os.RemoveAll(theServer.dir)
	}
	return code
}
