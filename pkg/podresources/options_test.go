package podresources

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/flagtest"
)

func parseOptions(t *testing.T, collect time.Duration, args ...string) (*Options, error) {
	t.Helper()
	o := &Options{}
	flagtest.Parse(t, o.AddFlags, args...)
	return o, o.Validate(collect)
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		collect time.Duration
		args    []string
		want    string // error; "" for none
		ok      func(*Options) bool
	}{
		{"refresh follows the collect interval", 3 * time.Second, nil, "", func(o *Options) bool {
			return o.RefreshInterval == 3*time.Second && o.CallTimeout == 3*time.Second && o.IDType == IDTypeAuto
		}},
		{"call timeout kept under the refresh", 10 * time.Second, nil, "", func(o *Options) bool { return o.CallTimeout == 5*time.Second }},
		{"call timeout cut to a short refresh", time.Second, []string{"--kubernetes.refresh-interval=2s"}, "", func(o *Options) bool {
			return o.RefreshInterval == 2*time.Second && o.CallTimeout == 2*time.Second
		}},
		{"id type", time.Second, []string{"--kubernetes.gpu-id-type=device-name"}, "", func(o *Options) bool { return o.IDType == IDTypeDeviceName }},
		{"no socket needed when off", time.Second, []string{"--kubernetes.enabled=false", "--kubernetes.pod-resources-socket= "}, "", func(*Options) bool { return true }},
		{"given call timeout above the refresh", 10 * time.Second, []string{"--kubernetes.refresh-interval=1s", "--kubernetes.timeout=2s"}, "--kubernetes.timeout (2s) must not exceed the refresh interval (1s)", nil},
		{"enabled", time.Second, []string{"--kubernetes.enabled=maybe"}, "--kubernetes.enabled: want auto, true or false", nil},
		{"socket", time.Second, []string{"--kubernetes.pod-resources-socket= "}, "--kubernetes.pod-resources-socket must not be empty while --kubernetes.enabled=auto", nil},
		{"empty resource name", time.Second, []string{"--kubernetes.resource-names=a,,b"}, "--kubernetes.resource-names: empty name", nil},
		{"resource name pattern", time.Second, []string{"--kubernetes.resource-names=a/[b"}, `--kubernetes.resource-names: pattern "a/[b"`, nil},
		{"bad id type", time.Second, []string{"--kubernetes.gpu-id-type=serial"}, "--kubernetes.gpu-id-type: ", nil},
		{"negative refresh", time.Second, []string{"--kubernetes.refresh-interval=-1s"}, "--kubernetes.refresh-interval must not be negative", nil},
		{"spinning refresh", time.Second, []string{"--kubernetes.refresh-interval=10ms"}, "--kubernetes.refresh-interval must be at least 100ms", nil},
		{"zero call timeout", time.Second, []string{"--kubernetes.timeout=0s"}, "--kubernetes.timeout must be at least 100ms, got 0s", nil},
		{"call timeout under the floor", time.Second, []string{"--kubernetes.timeout=1ns"}, "--kubernetes.timeout must be at least 100ms, got 1ns", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, err := parseOptions(t, tc.collect, tc.args...)
			if flagtest.WantErr(t, err, tc.want) {
				return
			}
			if !tc.ok(o) {
				t.Errorf("options %+v", o)
			}
		})
	}
}

func TestOptionsConfigAndSocket(t *testing.T) {
	t.Parallel()
	o, err := parseOptions(t, time.Second, "--kubernetes.resource-names=example.com/gpu")
	if err != nil {
		t.Fatal(err)
	}
	if o.GivenSocket() != "" {
		t.Errorf("GivenSocket = %q without the flag, want none", o.GivenSocket())
	}
	cfg := o.Config()
	if want := append(DefaultResourceNames(), "example.com/gpu"); !slices.Equal(cfg.ResourceNames, want) {
		t.Errorf("resource names %v, want %v", cfg.ResourceNames, want)
	}
	if cfg.Socket != DefaultSocket || cfg.RefreshInterval != time.Second || cfg.CallTimeout != time.Second {
		t.Errorf("config %+v does not carry the options", cfg)
	}
	if o, err = parseOptions(t, time.Second, "--kubernetes.pod-resources-socket=/run/k.sock"); err != nil || o.GivenSocket() != "/run/k.sock" {
		t.Errorf("GivenSocket = %q (%v), want /run/k.sock", o.GivenSocket(), err)
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "kubelet.sock")
	cases := []struct {
		name    string
		enabled string
		on      bool
		log     string
	}{
		{"off", "false", false, ""},
		{"auto without the socket", "auto", false, "pod attribution is off"},
		{"true waits for the socket", "true", true, "pod attribution on"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, err := parseOptions(t, time.Second, "--kubernetes.enabled="+tc.enabled)
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			c, err := Open(*o, missing, nil, slog.New(slog.NewTextHandler(&log, nil)), nil)
			if err != nil {
				t.Fatal(err)
			}
			if (c != nil) != tc.on {
				t.Fatalf("client %v, want on=%v", c, tc.on)
			}
			if c != nil {
				_ = c.Close()
			}
			if !strings.Contains(log.String(), tc.log) || (tc.log != "" && !strings.Contains(log.String(), missing)) {
				t.Errorf("log %q, want %q naming the socket", log.String(), tc.log)
			}
		})
	}
}
