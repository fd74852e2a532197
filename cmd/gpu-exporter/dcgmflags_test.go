package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gpu-exporter/gpu-exporter/pkg/dcgmflags"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
)

// Each of dcgm-exporter's flags, and its environment variable, sets the
// gpu-exporter option that means the same.
func TestDCGMExporterFlagsMapOntoOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(o *options) bool
	}{
		{"-f", []string{"-f", "/etc/c.csv"}, nil, func(o *options) bool { return o.collect.CountersFile == "/etc/c.csv" }},
		{"--collectors", []string{"--collectors=/etc/c.csv"}, nil, func(o *options) bool { return o.collect.CountersFile == "/etc/c.csv" }},
		{"-collectors (single dash)", []string{"-collectors", "/etc/c.csv"}, nil, func(o *options) bool { return o.collect.CountersFile == "/etc/c.csv" }},
		{"DCGM_EXPORTER_COLLECTORS", nil, map[string]string{"DCGM_EXPORTER_COLLECTORS": "/e.csv"}, func(o *options) bool { return o.collect.CountersFile == "/e.csv" }},
		{"-a", []string{"-a", ":9500"}, nil, func(o *options) bool { return slices.Equal(o.web.ListenAddresses, []string{":9500"}) }},
		{"DCGM_EXPORTER_LISTEN", nil, map[string]string{"DCGM_EXPORTER_LISTEN": "[::]:9401"}, func(o *options) bool { return slices.Equal(o.web.ListenAddresses, []string{"[::]:9401"}) }},
		{"-c milliseconds", []string{"-c", "1500"}, nil, func(o *options) bool {
			return o.collect.Interval == 1500*time.Millisecond && o.collect.Timeout == o.collect.Interval
		}},
		{"--collect-interval", []string{"--collect-interval=30000"}, nil, func(o *options) bool { return o.collect.Interval == 30*time.Second }},
		{"DCGM_EXPORTER_INTERVAL", nil, map[string]string{"DCGM_EXPORTER_INTERVAL": "250"}, func(o *options) bool { return o.collect.Interval == 250*time.Millisecond }},
		{"-k", []string{"-k"}, nil, func(o *options) bool { return o.kubernetes.Enabled == "true" }},
		{"--kubernetes=false", []string{"--kubernetes=false"}, nil, func(o *options) bool { return o.kubernetes.Enabled == "false" }},
		{"DCGM_EXPORTER_KUBERNETES", nil, map[string]string{"DCGM_EXPORTER_KUBERNETES": "true"}, func(o *options) bool { return o.kubernetes.Enabled == "true" }},
		{"--kubernetes-gpu-id-type", []string{"--kubernetes-gpu-id-type=device-name"}, nil, func(o *options) bool { return o.kubernetes.GPUIDType == "device-name" }},
		{"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE", nil, map[string]string{"DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE": "uid"}, func(o *options) bool { return o.kubernetes.GPUIDType == "uid" }},
		{"-r", []string{"-r", "dcgm.example:5555"}, nil, func(o *options) bool {
			return o.source.Traits().RemoteHost == "dcgm.example" // remote, at that address
		}},
		{"DCGM_REMOTE_HOSTENGINE_INFO", nil, map[string]string{"DCGM_REMOTE_HOSTENGINE_INFO": "10.0.0.1:5555"}, func(o *options) bool { return o.source.Traits().RemoteHost == "10.0.0.1" }},
		{"-d f", []string{"-d", "f"}, nil, func(o *options) bool { return o.collect.GPUList == nil }},
		{"-d g", []string{"-d", "g"}, nil, func(o *options) bool { return o.collect.GPUList == nil }},
		{"-d g:ids", []string{"-d", "g:0,2-3"}, nil, func(o *options) bool { return slices.Equal(o.collect.GPUList, []int{0, 2, 3}) }},
		{"DCGM_EXPORTER_DEVICES_STR", nil, map[string]string{"DCGM_EXPORTER_DEVICES_STR": "g:1"}, func(o *options) bool { return slices.Equal(o.collect.GPUList, []int{1}) }},
		{"--kubernetes-enable-pod-labels", []string{"--kubernetes-enable-pod-labels"}, nil, func(o *options) bool { return o.podLabels.Labels == ".*" }},
		{"pod labels with allowlist", []string{"--kubernetes-enable-pod-labels", "--kubernetes-pod-label-allowlist-regex=team|app"}, nil, func(o *options) bool { return o.podLabels.Labels == "team|app" }},
		{"DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX", nil, map[string]string{"DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS": "true", "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX": "team"}, func(o *options) bool { return o.podLabels.Labels == "team" }},
		{"DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", nil, map[string]string{"DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID": "true"}, func(o *options) bool { return o.podLabels.UID }},
		{"-o", []string{"-o"}, nil, func(o *options) bool { return o.naming.DCGM.OldNamespace }},
		{"--hpc-job-mapping-dir", []string{"--hpc-job-mapping-dir=/run/jobs"}, nil, func(o *options) bool { return o.hpc.Dir == "/run/jobs" }},
		{"DCGM_HPC_JOB_MAPPING_DIR", nil, map[string]string{"DCGM_HPC_JOB_MAPPING_DIR": "/var/run/jobs"}, func(o *options) bool { return o.hpc.Dir == "/var/run/jobs" }},
		{"DCGM_EXPORTER_USE_OLD_NAMESPACE", nil, map[string]string{"DCGM_EXPORTER_USE_OLD_NAMESPACE": "true"}, func(o *options) bool { return o.naming.DCGM.OldNamespace }},
		{"-n", []string{"-n"}, nil, func(o *options) bool { return o.naming.DCGM.HostnameLabel == "none" }},
		{"--no-hostname=false", []string{"--no-hostname=false"}, nil, func(o *options) bool { return o.naming.DCGM.HostnameLabel == "" }},
		{"DCGM_EXPORTER_NO_HOSTNAME", nil, map[string]string{"DCGM_EXPORTER_NO_HOSTNAME": "1"}, func(o *options) bool { return o.naming.DCGM.HostnameLabel == "none" }},
		{"-x", []string{"-x", "60000"}, nil, func(o *options) bool { return o.naming.XIDCountWindow == time.Minute }},
		{"DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE", nil, map[string]string{"DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE": "120000"}, func(o *options) bool { return o.naming.XIDCountWindow == 2*time.Minute }},
		{"--clock-events-count-window-size", []string{"--clock-events-count-window-size", "30000"}, nil, func(o *options) bool { return o.naming.ClockEventsCountWindow == 30*time.Second }},
		{"DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE", nil, map[string]string{"DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE": "1000"}, func(o *options) bool { return o.naming.ClockEventsCountWindow == time.Second }},
		{"-rbmn", []string{"-rbmn"}, nil, func(o *options) bool { return o.naming.DCGM.ReplaceBlanksInModelName }},
		{"--replace-blanks-in-model-name", []string{"--replace-blanks-in-model-name"}, nil, func(o *options) bool { return o.naming.DCGM.ReplaceBlanksInModelName }},
		{"--web-config-file", []string{"--web-config-file=/w.yml"}, nil, func(o *options) bool { return o.web.WebConfigFile == "/w.yml" }},
		{"DCGM_EXPORTER_WEB_CONFIG_FILE", nil, map[string]string{"DCGM_EXPORTER_WEB_CONFIG_FILE": "/w.yml"}, func(o *options) bool { return o.web.WebConfigFile == "/w.yml" }},
		{"--web-systemd-socket", []string{"--web-systemd-socket"}, nil, func(o *options) bool { return o.web.SystemdSocket }},
		{"--pod-resources-kubelet-socket", []string{"--pod-resources-kubelet-socket=/k.sock"}, nil, func(o *options) bool { return o.kubernetes.Socket == "/k.sock" }},
		{"DCGM_POD_RESOURCES_KUBELET_SOCKET", nil, map[string]string{"DCGM_POD_RESOURCES_KUBELET_SOCKET": "/k.sock"}, func(o *options) bool { return o.kubernetes.Socket == "/k.sock" }},
		{"--nvidia-resource-names", []string{"--nvidia-resource-names=nvidia.com/a100,nvidia.com/a10"}, nil, func(o *options) bool {
			return slices.Equal(o.kubernetes.ResourceNames, []string{"nvidia.com/a100", "nvidia.com/a10"})
		}},
		{"NVIDIA_RESOURCE_NAMES", nil, map[string]string{"NVIDIA_RESOURCE_NAMES": "nvidia.com/a100"}, func(o *options) bool { return slices.Equal(o.kubernetes.ResourceNames, []string{"nvidia.com/a100"}) }},
		{"--debug", []string{"--debug"}, nil, func(o *options) bool { return o.log.Level.String() == "debug" }},
		{"--log-format=json", []string{"--log-format=json"}, nil, func(o *options) bool { return o.log.Format.String() == "json" }},
		{"DCGM_EXPORTER_LOG_FORMAT", nil, map[string]string{"DCGM_EXPORTER_LOG_FORMAT": "text"}, func(o *options) bool { return o.log.Format.String() == "logfmt" }},
		{"--enable-pprof", []string{"--enable-pprof"}, nil, func(o *options) bool { return o.web.EnablePprof }},
		{"--kubernetes-virtual-gpus", []string{"--kubernetes-virtual-gpus"}, nil, func(o *options) bool { return o.naming.DCGM.VirtualGPUs }},
		{"KUBERNETES_VIRTUAL_GPUS", nil, map[string]string{"KUBERNETES_VIRTUAL_GPUS": "true"}, func(o *options) bool { return o.naming.DCGM.VirtualGPUs }},
		{"KUBERNETES_VIRTUAL_GPUS=false", nil, map[string]string{"KUBERNETES_VIRTUAL_GPUS": "false"}, func(o *options) bool { return !o.naming.DCGM.VirtualGPUs }},
		{"-v", []string{"-v"}, nil, func(o *options) bool { return o.version }},
		// Flags whose behaviour gpu-exporter always has are accepted and noted.
		{"KUBERNETES_ENABLE_DRA", nil, map[string]string{"KUBERNETES_ENABLE_DRA": "true"}, func(o *options) bool { return o.dra.Mode == "true" }},
		// Unsupported flags given dcgm-exporter's default are accepted.
		{"-m none", []string{"-m", "none"}, nil, func(o *options) bool { return true }},
		{"-s f and -p f", []string{"-s", "f", "-p", "f"}, nil, func(o *options) bool { return true }},
		{"DCGM_EXPORTER_ENABLE_DCGM_LOG=false", nil, map[string]string{"DCGM_EXPORTER_ENABLE_DCGM_LOG": "false"}, func(o *options) bool { return true }},
		{"--kubernetes-enable-pod-labels=false", []string{"--kubernetes-enable-pod-labels=false"}, nil, func(o *options) bool { return true }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, _, err := parseFlags(tc.args, envFrom(tc.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(o) {
				t.Errorf("options not set as dcgm-exporter's flag means: %+v", o)
			}
			if len(o.dcgmExporter.Given) == 0 && tc.name != "-v" {
				t.Error("use of a dcgm-exporter flag not recorded")
			}
		})
	}
}

// The command line beats GPU_EXPORTER_* variables, which beat
// dcgm-exporter's variables; a flag and its dcgm-exporter twin together are
// an error.
func TestDCGMExporterPrecedence(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		env  map[string]string
		want time.Duration
	}{
		{[]string{"-c", "2000"}, map[string]string{"GPU_EXPORTER_COLLECT_INTERVAL": "7s", "DCGM_EXPORTER_INTERVAL": "1000"}, 2 * time.Second},
		{[]string{"--collect.interval=3s"}, map[string]string{"DCGM_EXPORTER_INTERVAL": "1000"}, 3 * time.Second},
		{nil, map[string]string{"GPU_EXPORTER_COLLECT_INTERVAL": "7s", "DCGM_EXPORTER_INTERVAL": "1000"}, 7 * time.Second},
		{nil, map[string]string{"DCGM_EXPORTER_INTERVAL": "1000"}, time.Second},
	}
	for _, tc := range cases {
		o, _, err := parseFlags(tc.args, envFrom(tc.env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if o.collect.Interval != tc.want {
			t.Errorf("args %v env %v: interval %s, want %s", tc.args, tc.env, o.collect.Interval, tc.want)
		}
	}
}

func TestDCGMExporterFlagErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"both names", []string{"--collect.interval=3s", "-c", "1000"}, nil, "-c/--collect-interval and --collect.interval both given"},
		{"bad interval", []string{"-c", "soon"}, nil, "-c/--collect-interval=\"soon\" (dcgm-exporter): want a positive number of milliseconds"},
		{"bad env interval", nil, map[string]string{"DCGM_EXPORTER_INTERVAL": "-5"}, "DCGM_EXPORTER_INTERVAL=\"-5\""},
		{"MIG instance selection", []string{"-d", "i:0,1"}, nil, "selecting MIG instances is not supported"},
		{"bad devices", []string{"-d", "x:1"}, nil, "want f, g, g:<ids>"},
		{"flex with range", []string{"-d", "f:1"}, nil, "no range can follow f"},
		{"bad id type", []string{"--kubernetes-gpu-id-type=serial"}, nil, "want uid or device-name"},
		{"bad log format", []string{"--log-format=xml"}, nil, "want text or json"},
		{"configmap", []string{"-m", "gpu:metrics"}, nil, "-m/--configmap-data=\"gpu:metrics\" (dcgm-exporter) is not supported: mount the ConfigMap as a file and pass it with -f"},
		{"fake gpus", []string{"--fake-gpus"}, nil, "use --source=sim"},
		{"switch devices", []string{"-s", "g:0"}, nil, "NVSwitch selection is not supported"},
		{"dcgm log", []string{"--enable-dcgm-log", "--dcgm-log-level=DEBUG"}, nil, "DCGM's own log is not forwarded"},
		{"hpc relative", nil, map[string]string{"DCGM_HPC_JOB_MAPPING_DIR": "run/jobs"}, "--hpc.job-mapping-dir must be an absolute path"},
		{"dump", []string{"--dump-enabled"}, nil, "debug dumps are not written"},
		{"hostname twice", []string{"-n", "--naming.hostname-label=hostname"}, nil, "-n/--no-hostname and --naming.hostname-label both given"},
		{"naming", []string{"--naming=dcgm-exporter"}, nil, `--naming: unknown naming "dcgm-exporter"`},
		{"hostname label", []string{"--naming.hostname-label=HOSTNAME"}, nil, "--naming.hostname-label: want Hostname, hostname or none"},
		{"gpus", []string{"--collect.gpus=0,a"}, nil, `--collect.gpus: "a" is not a GPU index or range`},
		{"gpus range", []string{"--collect.gpus=3-1"}, nil, `--collect.gpus: "3-1" is not a GPU index or range`},
		{"xid window", []string{"--naming.xid-count-window=0s"}, nil, "--naming.xid-count-window must be at least 100ms, got 0s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stderr syncBuffer
			if code := run(t.Context(), tc.args, envFrom(tc.env), io.Discard, &stderr, nil); code != 2 {
				t.Errorf("exit code = %d, want 2", code)
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tc.want)
			}
		})
	}
}

// The alias table itself: unique names, short forms and variables, and
// targets that exist.
func TestDCGMExporterAliasTable(t *testing.T) {
	t.Parallel()
	o := &options{}
	fs := newFlagSet(o)
	seen := map[string]bool{}
	for _, a := range dcgmflags.Aliases() {
		for _, k := range []string{"name:" + a.Name, "short:" + a.Short, "env:" + a.Env, "name:" + a.Long2} {
			if strings.HasSuffix(k, ":") {
				continue
			}
			if seen[k] {
				t.Errorf("%s used twice", k)
			}
			seen[k] = true
		}
		if fs.Lookup(a.Name) != nil || (a.Short != "" && fs.ShorthandLookup(a.Short) != nil && a.Short != "v") {
			t.Errorf("%s clashes with a gpu-exporter flag", a.Name)
		}
		if (a.Kind == dcgmflags.Mapped) != (a.Target != "") || (a.Kind != dcgmflags.Mapped && a.Note == "") {
			t.Errorf("%s: mapped aliases need a target, the others a note", a.Name)
		}
		if a.Target != "" && fs.Lookup(a.Target) == nil {
			t.Errorf("%s: target --%s does not exist", a.Name, a.Target)
		}
		if len(a.Short) > 1 {
			t.Errorf("%s: short form %q is longer than one letter", a.Name, a.Short)
		}
	}
}

func TestLogCompatHint(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		env  map[string]string
		want []string
		not  []string
	}{
		{[]string{"-f", "/c.csv"}, nil, []string{"add --naming=dcgm", "given=-f/--collectors"}, nil},
		{nil, map[string]string{"DCGM_EXPORTER_INTERVAL": "1000"}, []string{"add --naming=dcgm", "given=DCGM_EXPORTER_INTERVAL"}, nil},
		{[]string{"-f", "/c.csv", "--naming=dcgm"}, nil, nil, []string{"add --naming=dcgm"}},
		{[]string{"--naming.old-namespace"}, nil, []string{"naming flags have no effect with --naming=prometheus", "--naming.old-namespace"}, nil},
		{[]string{"--kubernetes-enable-dra"}, nil, nil, []string{"needs no counterpart"}},
		{[]string{"--naming.vgpu-label"}, nil, []string{"naming flags have no effect with --naming=prometheus", "--naming.vgpu-label"}, nil},
		{nil, nil, nil, []string{"dcgm-exporter", "naming"}},
		{[]string{"--naming=dcgm"}, nil, []string{"level=INFO", "default dcgm-exporter release", "release=4.6.0-4.8.3 hostname_label=hostname"}, nil},
		{[]string{"--naming=dcgm"}, map[string]string{"GPU_EXPORTER_NAMING_DCGM_RELEASE": "4.5.3-4.8.2"}, nil, []string{"default dcgm-exporter release"}},
	}
	for _, tc := range cases {
		o, fs, err := parseFlags(tc.args, envFrom(tc.env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		logCompat(slog.New(slog.NewTextHandler(&b, nil)), o, fs)
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("args %v env %v: log %q lacks %q", tc.args, tc.env, b.String(), w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(b.String(), w) {
				t.Errorf("args %v env %v: log %q contains %q", tc.args, tc.env, b.String(), w)
			}
		}
	}
}

// TestDemoServesDCGMNames runs the exporter in-process on the demo scenario
// with dcgm-exporter's command line and --naming=dcgm: a counters file with
// label and DCGM_EXP_* rows, 1.x label names, no hostname, GPU selection.
func TestDemoServesDCGMNames(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	counters := filepath.Join(t.TempDir(), "counters.csv")
	csv := "DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).\n" +
		"DCGM_FI_DEV_FB_USED, gauge, used MiB\n" +
		"DCGM_EXP_P2P_STATUS, gauge, P2P status\n" +
		"DCGM_FI_DEV_PCIE_TX_THROUGHPUT, counter, skipped\n" +
		"DCGM_FI_DRIVER_VERSION, label, Driver Version\n" +
		"DCGM_EXP_XID_ERRORS_COUNT, counter, XIDs\n"
	if err := os.WriteFile(counters, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var stderr syncBuffer
	done := make(chan int, 1)
	args := []string{"--source=sim", "--naming=dcgm", "-a", addr, "-c", "200", "-f", counters, "-o", "-n", "-d", "g:0-5"}
	go func() { done <- run(ctx, args, noEnv, io.Discard, &stderr, nil) }()
	base := "http://" + addr
	waitFor(t, base+"/readyz", http.StatusOK)
	var fams map[string]*dto.MetricFamily
	deadline := time.Now().Add(20 * time.Second)
	for {
		fams, _ = scrape(t, base+"/metrics")
		if util := fams["DCGM_FI_DEV_GPU_UTIL"]; util != nil && labels(util.Metric[0])["pod_name"] != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no attributed DCGM_FI_DEV_GPU_UTIL appeared; log:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	util := fams["DCGM_FI_DEV_GPU_UTIL"]
	if util.GetHelp() != "GPU utilization (in %)." || len(util.Metric) != 6 {
		t.Errorf("utilization: help %q, %d series; want the file's help and GPUs 0-5", util.GetHelp(), len(util.Metric))
	}
	l := labels(util.Metric[0])
	for _, k := range []string{"uuid", "pci_bus_id", "modelName", "DCGM_FI_DRIVER_VERSION", "pod_name", "pod_namespace", "container_name"} {
		if l[k] == "" {
			t.Errorf("series lacks %s: %v", k, l)
		}
	}
	for _, k := range []string{"UUID", "Hostname", "hostname", "pod"} {
		if _, has := l[k]; has {
			t.Errorf("series has %s: %v", k, l)
		}
	}
	if v := util.Metric[0].GetGauge().GetValue(); v < 1 || v > 100 || v != float64(int(v)) {
		t.Errorf("utilization %v is not a DCGM percentage", v)
	}
	if fams["DCGM_EXP_XID_ERRORS_COUNT"] == nil || fams["gpu_exporter_source_up"] == nil {
		t.Error("window counter or self-metrics missing")
	}
	if fams["gpu_utilization_ratio"] != nil || fams["gpu_info"] != nil {
		t.Error("Prometheus naming families on a dcgm naming page")
	}
	if fams["DCGM_EXP_P2P_STATUS"] != nil {
		t.Error("DCGM_EXP_P2P_STATUS from the simulator, which does not tell the P2P status")
	}
	if !strings.Contains(stderr.String(), "counters file row skipped") {
		t.Errorf("skipped row not logged:\n%s", stderr.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d; log:\n%s", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("exporter did not stop")
	}
}

// The hostname label's value is chosen as dcgm-exporter chooses it.
func TestHostnameLabelValue(t *testing.T) {
	t.Parallel()
	osHost, err := os.Hostname()
	if err != nil {
		t.Skip("no host name")
	}
	cases := []struct {
		name     string
		args     []string
		env      map[string]string
		attrib   bool
		label    string
		hostname string
	}{
		{"host name", []string{"--naming=dcgm"}, nil, false, "hostname", osHost},
		{"NODE_NAME", []string{"--naming=dcgm"}, map[string]string{"NODE_NAME": "node-7"}, false, "hostname", "node-7"},
		{"4.5.3-4.8.2", []string{"--naming=dcgm", "--naming.dcgm-release=4.5.3-4.8.2"}, map[string]string{"NODE_NAME": "node-7"}, false, "Hostname", "node-7"},
		{"4.5.3-4.8.2 from the environment", []string{"--naming=dcgm"}, map[string]string{"NODE_NAME": "node-7", "GPU_EXPORTER_NAMING_DCGM_RELEASE": "4.5.3-4.8.2"}, false, "Hostname", "node-7"},
		{"upper-case label", []string{"--naming=dcgm", "--naming.hostname-label=Hostname"}, map[string]string{"NODE_NAME": "node-7"}, false, "Hostname", "node-7"},
		{"lower-case label on 4.5.3-4.8.2", []string{"--naming=dcgm", "--naming.hostname-label=hostname"}, map[string]string{"NODE_NAME": "node-7", "GPU_EXPORTER_NAMING_DCGM_RELEASE": "4.5.3-4.8.2"}, false, "hostname", "node-7"},
		{"no hostname", []string{"--naming=dcgm", "-n"}, map[string]string{"NODE_NAME": "node-7"}, false, "", ""},
		{"remote hostengine", []string{"--naming=dcgm", "--source=dcgm", "-r", "dcgm-host:5555"}, map[string]string{"NODE_NAME": "node-7"}, false, "hostname", "dcgm-host"},
		{"remote hostengine on Kubernetes", []string{"--naming=dcgm", "--source=dcgm", "-r", "dcgm-host:5555"}, map[string]string{"NODE_NAME": "node-7"}, true, "hostname", "node-7"},
		{"prometheus naming", nil, map[string]string{"NODE_NAME": "node-7"}, false, "", ""},
	}
	for _, tc := range cases {
		o, _, err := parseFlags(tc.args, envFrom(tc.env), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		a := &app{o: o, logger: slog.New(slog.DiscardHandler)}
		if tc.attrib {
			a.pods = new(podresources.Client) // only tested for nil
		}
		got := o.naming.DCGMFor(a.hostname)
		if got.HostnameLabel != tc.label || got.Hostname != tc.hostname {
			t.Errorf("%s: label %q=%q, want %q=%q", tc.name, got.HostnameLabel, got.Hostname, tc.label, tc.hostname)
		}
	}
}
