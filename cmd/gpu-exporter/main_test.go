package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
)

// syncBuffer is a bytes.Buffer safe for the exporter's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func noEnv(string) string { return "" }

func envFrom(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestBadFlagsExitWithTheirName(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"zero interval", []string{"--collect.interval=0s"}, nil, "--collect.interval must be at least 100ms"},
		{"negative interval", []string{"--collect.interval=-5s"}, nil, "--collect.interval must be at least 100ms"},
		{"spinning interval", []string{"--collect.interval=1ns"}, nil, "--collect.interval must be at least 100ms, got 1ns"},
		{"spinning interval from dcgm-exporter's -c", []string{"-c", "1"}, nil, `--collect.interval must be at least 100ms, got 1ms (--collect.interval set by -c/--collect-interval="1")`},
		{"spinning interval from dcgm-exporter's variable", nil, map[string]string{"DCGM_EXPORTER_INTERVAL": "5"}, `(--collect.interval set by environment variable DCGM_EXPORTER_INTERVAL="5")`},
		{"timeout above interval", []string{"--collect.interval=1s", "--collect.timeout=2s"}, nil, "--collect.timeout (2s) must not exceed --collect.interval (1s)"},
		{"spinning kubelet refresh", []string{"--kubernetes.refresh-interval=1ms"}, nil, "--kubernetes.refresh-interval must be at least 100ms"},
		{"kubelet timeout above refresh", []string{"--kubernetes.refresh-interval=1s", "--kubernetes.timeout=2s"}, nil, "--kubernetes.timeout (2s) must not exceed the refresh interval (1s)"},
		{"telemetry path on healthz", []string{"--web.telemetry-path=/healthz"}, nil, "--web.telemetry-path \"/healthz\" is the exporter's own health endpoint"},
		{"telemetry path on readyz", []string{"--web.telemetry-path=/readyz"}, nil, "--web.telemetry-path \"/readyz\" is the exporter's own health endpoint"},
		{"telemetry path with a space", []string{"--web.telemetry-path=/my metrics"}, nil, "--web.telemetry-path \"/my metrics\": character ' '"},
		{"telemetry path pattern", []string{"--web.telemetry-path=/{"}, nil, "--web.telemetry-path \"/{\": character '{'"},
		{"telemetry path trailing slash", []string{"--web.telemetry-path=/metrics/"}, nil, "--web.telemetry-path \"/metrics/\" must be a clean path"},
		{"telemetry path under pprof", []string{"--web.enable-pprof", "--web.telemetry-path=/debug/pprof/cmdline"}, nil, "is under /debug/pprof/, served by --web.enable-pprof"},
		{"telemetry path from env", nil, map[string]string{"GPU_EXPORTER_WEB_TELEMETRY_PATH": "/healthz"}, "--web.telemetry-path \"/healthz\""},
		{"listen address without port", []string{"--web.listen-address=localhost"}, nil, "--web.listen-address \"localhost\": want host:port"},
		{"listen address bad port", []string{"--web.listen-address=:99999"}, nil, "--web.listen-address \":99999\": port \"99999\""},
		{"listen address twice", []string{"--web.listen-address=:9400,:9400"}, nil, "--web.listen-address \":9400\" is given twice"},
		{"health address bad", []string{"--web.health-listen-address=9401"}, nil, "--web.health-listen-address \"9401\""},
		{"health address on the metrics port", []string{"--web.health-listen-address=127.0.0.1:9400"}, nil, "the health listener needs its own port"},
		{"shutdown grace", []string{"--web.shutdown-grace=0s"}, nil, "--web.shutdown-grace must be at least 100ms, got 0s"},
		{"resource name glob", []string{"--kubernetes.resource-names=nvidia.com/[gpu"}, nil, "--kubernetes.resource-names: pattern \"nvidia.com/[gpu\""},
		{"unknown source", []string{"--source=cuda"}, nil, `--source: unknown source "cuda"`},
		{"unknown flag", []string{"--no-such-flag"}, nil, "unknown flag: --no-such-flag"},
		{"bad duration", []string{"--collect.interval=often"}, nil, `invalid argument "often" for "--collect.interval"`},
		{"kubernetes enabled", []string{"--kubernetes.enabled=maybe"}, nil, "--kubernetes.enabled"},
		{"id type", []string{"--kubernetes.gpu-id-type=serial"}, nil, "--kubernetes.gpu-id-type"},
		{"dcgm mode", []string{"--dcgm.mode=remote"}, nil, "--dcgm.mode=remote needs --dcgm.remote-address"},
		{"log level", []string{"--log.level=loud"}, nil, "--log.level"},
		{"env twin", nil, map[string]string{"GPU_EXPORTER_COLLECT_INTERVAL": "soon"}, "GPU_EXPORTER_COLLECT_INTERVAL"},
		{"positional", []string{"extra"}, nil, `unexpected argument "extra"`},
		{"pod labels regex", []string{"--kubernetes.pod-labels=team("}, nil, "--kubernetes.pod-labels"},
		{"pod labels limit", []string{"--kubernetes.pod-labels-limit=0"}, nil, "--kubernetes.pod-labels-limit must be 1..12"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stderr syncBuffer
			code := run(t.Context(), tc.args, envFrom(tc.env), io.Discard, &stderr, nil)
			if code != 2 {
				t.Errorf("exit code = %d, want 2", code)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tc.want)
			}
		})
	}
}

func TestEnvTwinAndCommandLinePrecedence(t *testing.T) {
	t.Parallel()
	o, _, err := parseFlags([]string{"--collect.interval=3s"}, envFrom(map[string]string{
		"GPU_EXPORTER_COLLECT_INTERVAL":   "7s",
		"GPU_EXPORTER_WEB_TELEMETRY_PATH": "/m",
		"GPU_EXPORTER_WEB_LISTEN_ADDRESS": "127.0.0.1:1,127.0.0.1:2",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.collect.Interval != 3*time.Second || o.web.TelemetryPath != "/m" || len(o.web.ListenAddresses) != 2 {
		t.Errorf("interval %s, path %s, addresses %v", o.collect.Interval, o.web.TelemetryPath, o.web.ListenAddresses)
	}
	if o.collect.Timeout != o.collect.Interval || o.kubernetes.RefreshInterval != o.collect.Interval {
		t.Error("timeout and refresh interval do not default to the collect interval")
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if code := run(t.Context(), []string{"--version"}, noEnv, &out, io.Discard, nil); code != 0 || !strings.Contains(out.String(), "gpu-exporter") {
		t.Errorf("--version: code %d, output %q", code, out.String())
	}
}

// TestHelpListsCommands: --help (on stderr) and `gpu-exporter help` (on
// stdout) name every subcommand, and a stray argument points at them.
func TestHelpListsCommands(t *testing.T) {
	t.Parallel()
	var names []string
	for _, c := range commands(noEnv) {
		names = append(names, c.name)
	}
	if !slices.Contains(names, "doctor") || !slices.Contains(names, "rightsize") {
		t.Fatalf("commands = %v, want doctor and rightsize among them", names)
	}
	cases := []struct {
		args       []string
		code       int
		fromStdout bool
	}{
		{[]string{"--help"}, 0, false},
		{[]string{"-h"}, 0, false},
		{[]string{"help"}, 0, true},
		{[]string{"serve"}, 2, false},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), tc.args, noEnv, &stdout, &stderr, nil)
		out := stderr.String()
		if tc.fromStdout {
			out = stdout.String()
		}
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
		}
		for _, n := range names {
			if !strings.Contains(out, n) {
				t.Errorf("%v: output does not name the %s command:\n%s", tc.args, n, out)
			}
		}
	}
}

func TestStartupErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badScenario := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badScenario, []byte("name: bad\ngpus:\n  - model: X\n    memory_mib: 1024\n    fields:\n      DCGM_FI_NOPE: {constant: 1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badCounters := filepath.Join(dir, "counters.csv")
	if err := os.WriteFile(badCounters, []byte("DCGM_FI_DEV_GPU_TEMP, gauge, ok\nDCGM_FI_BOGUS, gauge, no\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() }) // the subtests run after this function returns
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"missing scenario", []string{"--source=sim", "--sim.scenario=" + filepath.Join(dir, "none.yaml")}, []string{"--sim.scenario", "none.yaml"}},
		{"unknown builtin", []string{"--source=sim", "--sim.scenario=nope"}, []string{"--sim.scenario", "nope"}},
		{"malformed scenario", []string{"--source=sim", "--sim.scenario=" + badScenario}, []string{"bad.yaml:6", "DCGM_FI_NOPE"}},
		{"bad counters", []string{"--source=sim", "--collect.counters=" + badCounters}, []string{"counters.csv:2", "DCGM_FI_BOGUS"}},
		{"pod labels outside a cluster", []string{"--source=sim", "--kubernetes.enabled=true", "--kubernetes.pod-labels=team"}, []string{"--kubernetes.pod-labels/--kubernetes.pod-uid"}},
		{"pod labels without attribution", []string{"--source=sim", "--kubernetes.pod-uid"}, []string{"pod attribution must be on"}},
		{"auto without DCGM", []string{"--source=auto"}, []string{"--source=auto: no GPU source answered", "--source=sim"}},
		{"port in use", []string{"--source=sim", "--web.listen-address=" + busy.Addr().String()}, []string{"--web.listen-address " + busy.Addr().String(), "address already in use"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stderr syncBuffer
			args := append([]string{"--kubernetes.enabled=false"}, tc.args...)
			if !strings.Contains(strings.Join(tc.args, " "), "--web.listen-address") {
				args = append(args, "--web.listen-address=127.0.0.1:0")
			}
			if code := run(t.Context(), args, noEnv, io.Discard, &stderr, nil); code != 1 {
				t.Errorf("exit code = %d, want 1", code)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr = %q, want it to contain %q", stderr.String(), w)
				}
			}
		})
	}
}

// waitFor polls url until it answers want or the deadline passes.
func waitFor(t *testing.T, url string, want int) {
	t.Helper()
	poll.Problems(t, 20*time.Second, 20*time.Millisecond, func() []string {
		resp, err := http.Get(url)
		if err != nil {
			return []string{fmt.Sprintf("%s did not answer %d in time (last error %v)", url, want, err)}
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			return []string{fmt.Sprintf("%s did not answer %d in time (last answer %d)", url, want, resp.StatusCode)}
		}
		return nil
	})
}

func scrape(t *testing.T, url string) (map[string]*dto.MetricFamily, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams, b
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestDemoServesAttributedGPUs runs the exporter in-process on the demo
// scenario, with the simulated kubelet and the real pod-resources client.
func TestDemoServesAttributedGPUs(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	dir := t.TempDir()
	counters := filepath.Join(dir, "counters.csv")
	if err := os.WriteFile(counters, []byte("DCGM_FI_DEV_GPU_UTIL, gauge, u\nDCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_FB_USED, gauge, m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	hup := make(chan os.Signal, 1)
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--source=sim", "--web.listen-address=" + addr, "--collect.interval=200ms", "--collect.counters=" + counters}, noEnv, io.Discard, &stderr, hup)
	}()
	base := "http://" + addr
	waitFor(t, base+"/readyz", http.StatusOK)

	// Attribution arrives with the first kubelet refresh; poll for it.
	var fams map[string]*dto.MetricFamily
	deadline := time.Now().Add(20 * time.Second)
	for {
		fams, _ = scrape(t, base+"/metrics")
		if fams["gpu_pod_allocation_info"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pod attribution appeared; log:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	gpus := map[string]bool{}
	held := 0
	for _, m := range fams["gpu_temperature_celsius"].GetMetric() {
		l := labels(m)
		gpus[l["gpu"]] = true
		if l["pod"] != "" {
			held++
			if l["namespace"] == "" || l["container"] == "" {
				t.Errorf("partial attribution labels: %v", l)
			}
		}
	}
	if len(gpus) != 8 {
		t.Errorf("temperature for %d GPUs, want 8", len(gpus))
	}
	if held == 0 || held == len(fams["gpu_temperature_celsius"].GetMetric()) {
		t.Errorf("%d held series: want some GPUs held and some free", held)
	}
	if fams["gpu_exporter_source_up"] == nil || fams["gpu_exporter_podresources_up"] == nil || fams["gpu_exporter_build_info"] == nil {
		t.Error("self-metrics missing")
	}

	// SIGHUP with a broken counters file keeps the running set.
	if err := os.WriteFile(counters, []byte("DCGM_FI_BROKEN, gauge, x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup <- syscall.SIGHUP
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "counters file rejected") {
		if time.Now().After(deadline) {
			t.Fatalf("reload rejection not logged:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if fams, _ = scrape(t, base+"/metrics"); fams["gpu_temperature_celsius"] == nil {
		t.Error("bad reload dropped the running field set")
	}
	// A good file takes effect.
	if err := os.WriteFile(counters, []byte("DCGM_FI_DEV_POWER_USAGE, gauge, p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup <- syscall.SIGHUP
	deadline = time.Now().Add(10 * time.Second)
	for {
		fams, _ = scrape(t, base+"/metrics")
		if fams["gpu_power_watts"] != nil && fams["gpu_temperature_celsius"] == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("reloaded counters file not applied")
		}
		time.Sleep(50 * time.Millisecond)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code after shutdown = %d, want 0; log:\n%s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("exporter did not stop within 15s of shutdown")
	}
}

// TestBinarySIGTERM builds the binary and checks that SIGTERM during scrapes
// lets them finish and exits 0.
func TestBinarySIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "gpu-exporter")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--source=sim", "--web.listen-address="+addr, "--collect.interval=100ms")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "http://"+addr+"/readyz", http.StatusOK)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				resp, err := http.Get("http://" + addr + "/metrics")
				if err != nil {
					return // the listener closed: expected once shutdown starts
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- fmt.Errorf("scrape cut short: %w", err)
				}
			}
		}()
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("no exit within 15s of SIGTERM")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
