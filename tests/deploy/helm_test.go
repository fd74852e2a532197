package deploy

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// helmTemplate renders a chart with a values document and --set flags.
func helmTemplate(t *testing.T, chart string, values map[string]any, sets ...string) ([]byte, error) {
	t.Helper()
	return helmTemplateArgs(t, chart, values, nil, sets...)
}

// monitoringAPIs are the --api-versions of a cluster that runs
// prometheus-operator (kube-prometheus-stack).
var monitoringAPIs = []string{
	"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor",
	"--api-versions", "monitoring.coreos.com/v1/PodMonitor",
	"--api-versions", "monitoring.coreos.com/v1/PrometheusRule",
}

// helmTemplateArgs is helmTemplate with extra `helm template` arguments.
func helmTemplateArgs(t *testing.T, chart string, values map[string]any, extra []string, sets ...string) ([]byte, error) {
	t.Helper()
	helm := tool(t, "helm")
	args := append([]string{"template", "gpu", chart, "--namespace", "monitoring"}, extra...)
	var stdin io.Reader
	if len(values) > 0 {
		data, err := yaml.Marshal(values)
		if err != nil {
			t.Fatal(err)
		}
		// From stdin: helm splits --values on commas, which test names hold.
		stdin = bytes.NewReader(data)
		args = append(args, "--values", "-")
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return run(stdin, helm, args...)
}

// render renders the chart and fails the test on an error.
func render(t *testing.T, chart string, values map[string]any, sets ...string) ([]byte, []object) {
	t.Helper()
	out, err := helmTemplate(t, chart, values, sets...)
	if err != nil {
		t.Fatal(err)
	}
	return out, parseObjects(t, out)
}

// fixtureChart copies the chart into a temporary directory with the
// fixture rules and dashboards in place of its files/ copies, so that the
// templates that ship them are tested whatever rules/ and dashboards/ hold.
func fixtureChart(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "gpu-exporter")
	if err := os.CopyFS(dst, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"rules", "dashboards"} {
		dir := filepath.Join(dst, "files", sub)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "chartfiles", sub))); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// toggles are the chart's optional features; TestHelmToggleCombinations
// renders every combination of them.
var toggles = []struct {
	name   string
	values map[string]any
	apply  func(*want)
}{
	{"serviceMonitor", map[string]any{"serviceMonitor": map[string]any{"enabled": true}}, nil},
	{"podMonitor", map[string]any{"podMonitor": map[string]any{"enabled": true, "authorization": podMonitorAuth}}, nil},
	// kube-rbac-proxy's own certificate is self-signed: skipping
	// verification has to be asked for.
	{"rbacProxy", map[string]any{
		"rbacProxy":  map[string]any{"enabled": true},
		"monitoring": map[string]any{"tlsConfig": map[string]any{"insecureSkipVerify": true}},
	}, func(w *want) { w.rbacProxy, w.https = true, true }},
	{"webConfig", map[string]any{
		"webConfig": map[string]any{"enabled": true, "tls": true, "config": map[string]any{
			"tls_server_config": map[string]any{"cert_file": "/etc/gpu-exporter/web/tls.crt", "key_file": "/etc/gpu-exporter/web/tls.key"},
		}},
		"monitoring": map[string]any{"tlsConfig": map[string]any{"ca": map[string]any{"secret": map[string]any{"name": "gpu-exporter-ca", "key": "ca.crt"}}}},
	}, func(w *want) { w.https, w.healthPort = true, 9402 }},
	{"remoteDCGM", map[string]any{"dcgm": map[string]any{"mode": "remote", "remoteAddress": "nvidia-dcgm:5555"}}, func(w *want) { w.remoteDCGM = "nvidia-dcgm:5555" }},
	{"prometheusRule", map[string]any{"prometheusRule": map[string]any{"enabled": true}}, nil},
	{"dashboards", map[string]any{"dashboards": map[string]any{"enabled": true}}, nil},
}

// podMonitorAuth is the scrape credential a PodMonitor needs with
// kube-rbac-proxy.
var podMonitorAuth = map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "prometheus-token", "key": "token"}}

func TestHelmLint(t *testing.T) {
	t.Parallel()
	helm := tool(t, "helm")
	chart := fixtureChart(t)
	all := []string{
		"serviceMonitor.enabled=true", "podMonitor.enabled=true", "rbacProxy.enabled=true", "monitoring.tlsConfig.insecureSkipVerify=true",
		"podMonitor.authorization.type=Bearer", "podMonitor.authorization.credentials.name=prometheus-token", "podMonitor.authorization.credentials.key=token",
		"prometheusRule.enabled=true", "dashboards.enabled=true", "counters.csv=DCGM_FI_DEV_GPU_TEMP\\, gauge\\, t",
	}
	for name, sets := range map[string][]string{"defaults": nil, "everything": all} {
		args := []string{"lint", "--strict", chart}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		if out, err := run(nil, helm, args...); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
}

func TestHelmToggleCombinations(t *testing.T) {
	t.Parallel()
	tool(t, "helm")
	tool(t, "kubevalidate")
	chart := fixtureChart(t)
	for mask := 0; mask < 1<<len(toggles); mask++ {
		values := map[string]any{}
		var names []string
		var w want
		for i, tg := range toggles {
			if mask&(1<<i) == 0 {
				continue
			}
			names = append(names, tg.name)
			for k, v := range tg.values {
				values[k] = v
			}
			if tg.apply != nil {
				tg.apply(&w)
			}
		}
		name := strings.Join(names, "+")
		if name == "" {
			name = "defaults"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, err := helmTemplate(t, chart, values)
			if slices.Contains(names, "rbacProxy") && slices.Contains(names, "webConfig") {
				if err == nil || !strings.Contains(err.Error(), "rbacProxy and webConfig exclude each other") {
					t.Fatalf("rbacProxy with webConfig: want a clear refusal, got err=%v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			objs := parseObjects(t, out)
			kubevalidate(t, out)
			checkWorkload(t, objs, w)
			checkToggles(t, objs, names, w)
		})
	}
}

// checkToggles asserts that each toggle creates its objects and only then.
func checkToggles(t *testing.T, objs []object, names []string, w want) {
	t.Helper()
	on := func(n string) bool { return slices.Contains(names, n) }
	counts := map[string]int{
		"ServiceMonitor": len(find(objs, "ServiceMonitor")),
		"PodMonitor":     len(find(objs, "PodMonitor")),
		"PrometheusRule": len(find(objs, "PrometheusRule")),
		"ClusterRole":    len(find(objs, "ClusterRole")),
		"Secret":         len(find(objs, "Secret")),
	}
	wantCounts := map[string]int{
		"ServiceMonitor": b2i(on("serviceMonitor")),
		"PodMonitor":     b2i(on("podMonitor")),
		"PrometheusRule": b2i(on("prometheusRule")),
		"ClusterRole":    2*b2i(on("rbacProxy")) + b2i(w.dra()),
		"Secret":         b2i(on("webConfig")),
	}
	for k, n := range wantCounts {
		if counts[k] != n {
			t.Errorf("%d %s objects, want %d", counts[k], k, n)
		}
	}
	for _, m := range find(objs, "ServiceMonitor") {
		checkMonitor(t, m, "endpoints", w)
		if w.rbacProxy && get(m, "spec", "endpoints", 0, "bearerTokenFile") == nil {
			t.Error("ServiceMonitor through kube-rbac-proxy sends no service-account token")
		}
	}
	for _, m := range find(objs, "PodMonitor") {
		checkMonitor(t, m, "podMetricsEndpoints", w)
	}
	dash := 0
	for _, cm := range find(objs, "ConfigMap") {
		if get(cm, "metadata", "labels", "grafana_dashboard") == "1" {
			dash++
		}
	}
	if dash != b2i(on("dashboards")) {
		t.Errorf("%d dashboard ConfigMaps labelled grafana_dashboard=1, want %d", dash, b2i(on("dashboards")))
	}
	if on("webConfig") {
		exp := byName(list(only(t, objs, "DaemonSet"), "spec", "template", "spec", "containers"), "exporter")
		if !slices.Contains(stringList(exp, "args"), "--web.config.file=/etc/gpu-exporter/web/web-config.yml") {
			t.Error("webConfig on but no --web.config.file")
		}
		if m := byName(list(exp, "volumeMounts"), "web-config"); m == nil || m["readOnly"] != true {
			t.Errorf("web-config mount = %v, want read-only", m)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestHelmVariants(t *testing.T) {
	t.Parallel()
	tool(t, "kubevalidate")
	cases := []struct {
		name   string
		values map[string]any
		want   want
		check  func(t *testing.T, objs []object)
	}{
		{
			name:   "basic auth probes the plain health listener",
			values: map[string]any{"webConfig": map[string]any{"enabled": true, "basicAuth": true, "config": map[string]any{"basic_auth_users": map[string]any{"prometheus": "$2y$10$x"}}}},
			want:   want{healthPort: 9402},
		},
		{
			name: "basic auth without a health listener makes probes TCP checks",
			values: map[string]any{
				"exporter":  map[string]any{"healthPort": 0},
				"webConfig": map[string]any{"enabled": true, "basicAuth": true, "config": map[string]any{"basic_auth_users": map[string]any{"prometheus": "$2y$10$x"}}},
			},
			want: want{basicAuth: true},
		},
		{
			name:   "pod labels and UIDs read pods with their own RBAC",
			values: map[string]any{"kubernetes": map[string]any{"podLabels": `team|app\.kubernetes\.io/name`, "podUID": true}},
			want:   want{podReader: true},
			check: func(t *testing.T, objs []object) {
				args := stringList(exporterContainer(t, objs), "args")
				for _, a := range []string{`--kubernetes.pod-labels=team|app\.kubernetes\.io/name`, "--kubernetes.pod-uid"} {
					if !slices.Contains(args, a) {
						t.Errorf("args %v lack %s", args, a)
					}
				}
				checkPodReader(t, objs, true)
				checkWorkloadReader(t, objs, false)
			},
		},
		{
			name:   "workload info reads pods and gets their owners, with RBAC of its own",
			values: map[string]any{"kubernetes": map[string]any{"workloadInfo": true}},
			want:   want{podReader: true},
			check: func(t *testing.T, objs []object) {
				if args := stringList(exporterContainer(t, objs), "args"); !slices.Contains(args, "--kubernetes.workload-info") {
					t.Errorf("args %v lack --kubernetes.workload-info", args)
				}
				checkPodReader(t, objs, true)
				checkWorkloadReader(t, objs, true)
			},
		},

		{
			name:   "process accounting shares the host PID namespace and reads its /proc",
			values: map[string]any{"processAccounting": map[string]any{"enabled": true, "mode": "process"}},
			want:   want{podReader: true, hostProcesses: true},
			check: func(t *testing.T, objs []object) {
				spec := get(only(t, objs, "DaemonSet"), "spec", "template", "spec")
				if get(spec, "hostPID") != true {
					t.Errorf("hostPID = %v, want true", get(spec, "hostPID"))
				}
				exp := exporterContainer(t, objs)
				args := stringList(exp, "args")
				for _, a := range []string{"--collect.processes=process", "--path.procfs=/host/proc"} {
					if !slices.Contains(args, a) {
						t.Errorf("args %v lack %s", args, a)
					}
				}
				if m := byName(list(exp, "volumeMounts"), "host-proc"); m == nil || m["readOnly"] != true || m["mountPath"] != "/host/proc" {
					t.Errorf("host-proc mount = %v, want /host/proc read-only", m)
				}
				if v := byName(list(spec, "volumes"), "host-proc"); get(v, "hostPath", "path") != "/proc" {
					t.Errorf("host-proc volume = %v, want hostPath /proc", v)
				}
				checkPodReader(t, objs, true)
			},
		},
		{
			name:   "process accounting off by default: no host PID namespace",
			values: map[string]any{},
			check: func(t *testing.T, objs []object) {
				spec := get(only(t, objs, "DaemonSet"), "spec", "template", "spec")
				if get(spec, "hostPID") != nil {
					t.Errorf("hostPID = %v without process accounting", get(spec, "hostPID"))
				}
				if args := stringList(exporterContainer(t, objs), "args"); !slices.Contains(args, "--collect.processes=off") {
					t.Errorf("args %v lack --collect.processes=off", args)
				}
			},
		},
		{
			name:   "no attribution runs as non-root without the kubelet socket",
			values: map[string]any{"kubernetes": map[string]any{"attribution": false}},
			want:   want{noAttribution: true},
		},
		{
			name:   "DRA attribution off: no ResourceSlice RBAC, no token",
			values: map[string]any{"kubernetes": map[string]any{"dra": false}},
			want:   want{noDRA: true},
		},
		{
			name:   "DRA attribution required",
			values: map[string]any{"kubernetes": map[string]any{"dra": "true"}},
			check: func(t *testing.T, objs []object) {
				if args := stringList(exporterContainer(t, objs), "args"); !slices.Contains(args, "--kubernetes.dra=true") {
					t.Errorf("args %v lack --kubernetes.dra=true", args)
				}
			},
		},
		{
			name:   "embedded profiling adds SYS_ADMIN",
			values: map[string]any{"dcgm": map[string]any{"profiling": true}},
			want:   want{profiling: true},
		},
		{
			name:   "remote profiling needs no capability",
			values: map[string]any{"dcgm": map[string]any{"profiling": true, "mode": "remote"}},
			want:   want{remoteDCGM: "nvidia-dcgm.gpu-operator.svc:5555"},
		},
		{
			name:   "beside the GPU Operator: its hostengine, DCGM only",
			values: map[string]any{"gpuOperator": map[string]any{"enabled": true, "namespace": "nvidia-gpu-operator"}, "dcgm": map[string]any{"profiling": true}},
			want:   want{remoteDCGM: "nvidia-dcgm.nvidia-gpu-operator.svc:5555"},
			check: func(t *testing.T, objs []object) {
				args := stringList(exporterContainer(t, objs), "args")
				for _, a := range []string{"--source=dcgm", "--dcgm.mode=remote"} {
					if !slices.Contains(args, a) {
						t.Errorf("args %v lack %s: an NVML fallback or an embedded hostengine would hold the GPU devices during driver upgrades", args, a)
					}
				}
			},
		},
		{
			name:   "counters from values",
			values: map[string]any{"counters": map[string]any{"csv": "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature.\n"}},
			check: func(t *testing.T, objs []object) {
				cm := only(t, objs, "ConfigMap")
				if !strings.Contains(fmt.Sprint(get(cm, "data", "counters.csv")), "DCGM_FI_DEV_GPU_TEMP") {
					t.Errorf("counters ConfigMap = %v", get(cm, "data"))
				}
				exp := exporterContainer(t, objs)
				if !slices.Contains(stringList(exp, "args"), "--collect.counters=/etc/gpu-exporter/counters/counters.csv") {
					t.Error("no --collect.counters")
				}
				if get(only(t, objs, "DaemonSet"), "spec", "template", "metadata", "annotations", "checksum/counters") == nil {
					t.Error("no checksum annotation: a counters change would not roll the pods")
				}
			},
		},
		{
			name:   "counters from an existing ConfigMap",
			values: map[string]any{"counters": map[string]any{"existingConfigMap": "my-counters"}},
			check: func(t *testing.T, objs []object) {
				if n := len(find(objs, "ConfigMap")); n != 0 {
					t.Errorf("%d ConfigMaps rendered, want none", n)
				}
				vol := byName(list(only(t, objs, "DaemonSet"), "spec", "template", "spec", "volumes"), "counters")
				if get(vol, "configMap", "name") != "my-counters" {
					t.Errorf("counters volume = %v", vol)
				}
			},
		},
		{
			name: "image, runtime class, scheduling and extras",
			values: map[string]any{
				"image":             map[string]any{"repository": "registry.example/gpu-exporter", "digest": "sha256:" + strings.Repeat("ab", 32), "pullPolicy": "Always"},
				"imagePullSecrets":  []any{map[string]any{"name": "regcred"}},
				"runtimeClassName":  "nvidia",
				"priorityClassName": "gpu-agents",
				"extraArgs":         []any{"--collect.max-series=20000"},
				"extraEnv":          []any{map[string]any{"name": "GPU_EXPORTER_COLLECT_TIMEOUT", "value": "5s"}},
				"rbacProxy":         map[string]any{"enabled": true, "metricsReaderSubjects": []any{map[string]any{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}}},
			},
			want: want{rbacProxy: true, https: true},
			check: func(t *testing.T, objs []object) {
				pod := get(only(t, objs, "DaemonSet"), "spec", "template", "spec")
				exp := exporterContainer(t, objs)
				if exp["image"] != "registry.example/gpu-exporter@sha256:"+strings.Repeat("ab", 32) || exp["imagePullPolicy"] != "Always" {
					t.Errorf("image = %v %v", exp["image"], exp["imagePullPolicy"])
				}
				for k, v := range map[string]any{"runtimeClassName": "nvidia", "priorityClassName": "gpu-agents"} {
					if get(pod, k) != v {
						t.Errorf("%s = %v, want %v", k, get(pod, k), v)
					}
				}
				if get(pod, "imagePullSecrets", 0, "name") != "regcred" {
					t.Errorf("imagePullSecrets = %v", get(pod, "imagePullSecrets"))
				}
				if !slices.Contains(stringList(exp, "args"), "--collect.max-series=20000") {
					t.Errorf("extraArgs missing from %v", stringList(exp, "args"))
				}
				if byName(list(exp, "env"), "GPU_EXPORTER_COLLECT_TIMEOUT") == nil {
					t.Error("extraEnv missing")
				}
				var reader object
				for _, b := range find(objs, "ClusterRoleBinding") {
					if strings.HasSuffix(b.name(), "-metrics-reader") {
						reader = b
					}
				}
				if get(reader, "subjects", 0, "name") != "prometheus-k8s" || get(reader, "roleRef", "name") != "gpu-gpu-exporter-metrics-reader" {
					t.Errorf("metrics-reader binding = %v", reader)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, objs := render(t, chartDir, tc.values)
			kubevalidate(t, out)
			checkWorkload(t, objs, tc.want)
			if tc.check != nil {
				tc.check(t, objs)
			}
		})
	}
}

// clusterRole returns the ClusterRole and ClusterRoleBinding whose names
// end in -name, failing unless both exist exactly when want.
func clusterRole(t *testing.T, objs []object, name string, want bool) (role, binding object) {
	t.Helper()
	for _, o := range objs {
		if strings.HasSuffix(o.name(), "-"+name) {
			switch o.kind() {
			case "ClusterRole":
				role = o
			case "ClusterRoleBinding":
				binding = o
			}
		}
	}
	if (role != nil) != want || (binding != nil) != want {
		t.Fatalf("%s ClusterRole %v and binding %v, want present=%v", name, role != nil, binding != nil, want)
	}
	return role, binding
}

// checkPodReader asserts the pod-reader ClusterRole and its binding exist
// exactly when want, with list and watch on pods and nothing more.
func checkPodReader(t *testing.T, objs []object, want bool) {
	t.Helper()
	role, binding := clusterRole(t, objs, "pod-reader", want)
	if !want {
		return
	}
	rules := list(role, "rules")
	if len(rules) != 1 || !reflect.DeepEqual(stringList(rules[0], "resources"), []string{"pods"}) || !reflect.DeepEqual(stringList(rules[0], "verbs"), []string{"list", "watch"}) {
		t.Errorf("pod-reader rules = %v, want list and watch on pods", rules)
	}
	if get(binding, "subjects", 0, "name") != "gpu-gpu-exporter" || get(binding, "subjects", 0, "namespace") != "monitoring" {
		t.Errorf("pod-reader binding subjects = %v", get(binding, "subjects"))
	}
}

// checkWorkloadReader asserts the workload-reader ClusterRole and its
// binding exist exactly when want, with get (only) on replicasets, jobs,
// JobSet's jobsets and Kueue's localqueues.
func checkWorkloadReader(t *testing.T, objs []object, want bool) {
	t.Helper()
	role, binding := clusterRole(t, objs, "workload-reader", want)
	if !want {
		return
	}
	var got []string
	for _, r := range list(role, "rules") {
		if !reflect.DeepEqual(stringList(r, "verbs"), []string{"get"}) {
			t.Errorf("workload-reader rule %v grants more than get", r)
		}
		got = append(got, strings.Join(stringList(r, "apiGroups"), ",")+"/"+strings.Join(stringList(r, "resources"), ","))
	}
	if w := []string{"apps/replicasets", "batch/jobs", "jobset.x-k8s.io/jobsets", "kueue.x-k8s.io/localqueues"}; !reflect.DeepEqual(got, w) {
		t.Errorf("workload-reader grants %v, want %v", got, w)
	}
	if get(binding, "subjects", 0, "name") != "gpu-gpu-exporter" || get(binding, "subjects", 0, "namespace") != "monitoring" {
		t.Errorf("workload-reader binding subjects = %v", get(binding, "subjects"))
	}
}

func exporterContainer(t *testing.T, objs []object) map[string]any {
	t.Helper()
	return byName(list(only(t, objs, "DaemonSet"), "spec", "template", "spec", "containers"), "exporter")
}

func TestHelmSchemaRejectsBadValues(t *testing.T) {
	t.Parallel()
	cases := []struct{ set, want string }{
		{"exporter.port=abc", "/exporter/port"},
		{"exporter.port=70000", "/exporter/port"},
		{"exporter.collectInterval=10", "/exporter/collectInterval"},
		{"exporter.collectInterval=ten", "/exporter/collectInterval"},
		{"exporter.source=cuda", "/exporter/source"},
		{"dcgm.mode=hybrid", "/dcgm/mode"},
		{"serviceMonitor.enabled=yes", "/serviceMonitor/enabled"},
		{"kubernetes.attribution=1", "/kubernetes/attribution"},
		{"kubernetes.gpuIdType=serial", "/kubernetes/gpuIdType"},
		{"image.pullPolicy=Sometimes", "/image/pullPolicy"},
		{"extraArgs[0]=collect.interval=5s", "/extraArgs/0"},
		{"rbacProxy.upstreamPort=http", "/rbacProxy/upstreamPort"},
		{"unknownKey=1", "additional properties 'unknownKey'"},
		{"exporter.colectInterval=5s", "additional properties 'colectInterval'"},
	}
	for _, tc := range cases {
		t.Run(tc.set, func(t *testing.T) {
			t.Parallel()
			_, err := helmTemplate(t, chartDir, nil, tc.set)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("--set %s: want a schema error naming %q, got %v", tc.set, tc.want, err)
			}
		})
	}
	t.Run("string for a port", func(t *testing.T) {
		t.Parallel()
		_, err := run(nil, tool(t, "helm"), "template", "gpu", chartDir, "--set-string", "exporter.port=9400")
		if err == nil || !strings.Contains(err.Error(), "/exporter/port") {
			t.Errorf("--set-string exporter.port=9400: want a schema error, got %v", err)
		}
	})
}

func TestHelmPrometheusRuleAndDashboards(t *testing.T) {
	t.Parallel()
	chart := fixtureChart(t)
	_, objs := render(t, chart, map[string]any{
		"prometheusRule": map[string]any{"enabled": true, "additionalLabels": map[string]any{"release": "kube-prometheus-stack"}},
		"dashboards":     map[string]any{"enabled": true, "annotations": map[string]any{"grafana_folder": "GPUs"}},
	})
	rule := only(t, objs, "PrometheusRule")
	if get(rule, "metadata", "labels", "release") != "kube-prometheus-stack" {
		t.Errorf("PrometheusRule labels = %v", get(rule, "metadata", "labels"))
	}
	var src struct {
		Groups []any `yaml:"groups"`
	}
	data, err := os.ReadFile(filepath.Join("testdata", "chartfiles", "rules", "fixture.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &src); err != nil {
		t.Fatal(err)
	}
	if got := get(rule, "spec", "groups"); !equalYAML(got, src.Groups) {
		t.Errorf("PrometheusRule groups differ from the rules file:\n got %v\nwant %v", got, src.Groups)
	}
	promtoolCheckRules(t, get(rule, "spec", "groups"))

	cms := dashboardConfigMaps(t, objs)
	if len(cms) != 1 || cms[0].name() != "gpu-gpu-exporter-dashboard-fixture" {
		t.Fatalf("want one ConfigMap gpu-gpu-exporter-dashboard-fixture for the fixture dashboard, got %d", len(cms))
	}
	cm := cms[0]
	if get(cm, "metadata", "labels", "grafana_dashboard") != "1" || get(cm, "metadata", "annotations", "grafana_folder") != "GPUs" {
		t.Errorf("dashboards ConfigMap metadata = %v", cm["metadata"])
	}
	want, err := os.ReadFile(filepath.Join("testdata", "chartfiles", "dashboards", "fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := get(cm, "data", "fixture.json"); got != strings.TrimRight(string(want), "\n") {
		t.Errorf("dashboard content changed on the way through the chart:\n%v", got)
	}
}

// equalYAML compares two decoded YAML values by their YAML encoding.
func equalYAML(a, b any) bool {
	x, err1 := yaml.Marshal(a)
	y, err2 := yaml.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// promtoolCheckRules runs `promtool check rules` on rule groups.
func promtoolCheckRules(t *testing.T, groups any) {
	t.Helper()
	promtool := tool(t, "promtool")
	data, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(nil, promtool, "check", "rules", f); err != nil {
		t.Errorf("promtool check rules on the PrometheusRule's groups: %v\n%s", err, out)
	}
}

// configMapKey is the syntax of a ConfigMap data key.
var configMapKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// TestHelmShipsProjectRulesAndDashboards renders the real chart with the
// copies `make chart-sync` put in files/: every rule group and dashboard
// must reach the cluster intact. It checks whatever copies exist.
func TestHelmShipsProjectRulesAndDashboards(t *testing.T) {
	t.Parallel()
	rules, _ := filepath.Glob(filepath.Join(chartDir, "files", "rules", "*.yaml"))
	dashboards, _ := filepath.Glob(filepath.Join(chartDir, "files", "dashboards", "*.json"))
	if len(rules) == 0 && len(dashboards) == 0 {
		t.Skip("the chart holds no rules or dashboards yet (make chart-sync copies them)")
	}
	values := map[string]any{
		// opencost: the opt-in OpenCost group too, so that every file
		// under files/rules is rendered (opencost_test.go checks it is
		// off by default).
		"prometheusRule": map[string]any{"enabled": len(rules) > 0, "opencost": true},
		"dashboards":     map[string]any{"enabled": len(dashboards) > 0},
	}
	out, objs := render(t, chartDir, values)
	kubevalidate(t, out)
	if len(rules) > 0 {
		var names []string
		for _, f := range rules {
			// X.yaml is the defaults rendering of X.src.yaml, which the
			// chart renders in its place.
			if src := strings.TrimSuffix(f, ".yaml") + ".src.yaml"; !strings.HasSuffix(f, ".src.yaml") && slices.Contains(rules, src) {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Groups []struct {
					Name string `yaml:"name"`
				} `yaml:"groups"`
			}
			if err := yaml.Unmarshal(data, &doc); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, g := range doc.Groups {
				names = append(names, g.Name)
			}
		}
		groups := list(only(t, objs, "PrometheusRule"), "spec", "groups")
		var got []string
		for _, g := range groups {
			got = append(got, fmt.Sprint(g["name"]))
		}
		if !slices.Equal(got, names) {
			t.Errorf("PrometheusRule groups = %v, want %v (files/rules/*.yaml in order)", got, names)
		}
		promtoolCheckRules(t, get(only(t, objs, "PrometheusRule"), "spec", "groups"))
	}
	if len(dashboards) > 0 {
		total := 0
		for _, cm := range find(objs, "ConfigMap") {
			data, _ := get(cm, "data").(map[string]any)
			for k, v := range data {
				if !configMapKey.MatchString(k) {
					t.Errorf("ConfigMap key %q is not a valid key", k)
				}
				total += len(fmt.Sprint(v))
			}
		}
		// The API server refuses objects over about 1 MiB.
		if total > 900<<10 {
			t.Errorf("dashboards ConfigMap holds %d bytes; split it before it nears the 1 MiB object limit", total)
		}
	}
}

// TestHelmRefusals: values that cannot work fail the install with a
// message that names the values to change.
func TestHelmRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{
			name: "PodMonitor through kube-rbac-proxy without credentials",
			values: map[string]any{
				"podMonitor": map[string]any{"enabled": true},
				"rbacProxy":  map[string]any{"enabled": true},
			},
			want: "podMonitor with rbacProxy needs podMonitor.authorization",
		},
		{
			name:   "pod UIDs without attribution",
			values: map[string]any{"kubernetes": map[string]any{"attribution": false, "podUID": true}},
			want:   "kubernetes.podLabels and kubernetes.podUID need kubernetes.attribution",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := helmTemplate(t, chartDir, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want a refusal saying %q, got %v", tc.want, err)
			}
		})
	}
}

// TestHelmProcessesNamingRefusal: the chart refuses process accounting's
// per-process mode under dcgm naming, which the exporter refuses at start
// (the pod would crash-loop), however the naming reaches the exporter
// (extraArgs, or extraEnv's GPU_EXPORTER_NAMING without a --naming flag),
// and renders every other combination. The built exporter is the oracle:
// the chart's arguments without the naming, plus the naming as the case
// gives it, must be refused exactly when the chart refuses.
func TestHelmProcessesNamingRefusal(t *testing.T) {
	t.Parallel()
	const want = "--collect.processes=process (from %s) needs --naming=prometheus, but --naming=dcgm comes from %s"
	on := func(mode string) map[string]any { return map[string]any{"enabled": true, "mode": mode} }
	cases := []struct {
		name       string
		accounting map[string]any
		extraArgs  []string // without the naming
		namingArgs []string // extraArgs that set the naming, after extraArgs
		namingEnv  string   // GPU_EXPORTER_NAMING in extraEnv; "" for none
		// refusal is the message expected, "" when the chart renders.
		refusal string
	}{
		{name: "process mode, dcgm naming in extraArgs", accounting: on("process"), namingArgs: []string{"--naming=dcgm"},
			refusal: fmt.Sprintf(want, "processAccounting.mode", "extraArgs")},
		{name: "process mode, dcgm naming in extraEnv", accounting: on("process"), namingEnv: "dcgm",
			refusal: fmt.Sprintf(want, "processAccounting.mode", "extraEnv GPU_EXPORTER_NAMING")},
		{name: "process mode from extraArgs, dcgm naming", extraArgs: []string{"--collect.processes=process"}, namingArgs: []string{"--naming=dcgm"},
			refusal: fmt.Sprintf(want, "extraArgs", "extraArgs")},
		{name: "the last --naming wins: dcgm", accounting: on("process"), namingArgs: []string{"--naming=prometheus", "--naming=dcgm"},
			refusal: fmt.Sprintf(want, "processAccounting.mode", "extraArgs")},
		{name: "the last --naming wins: prometheus", accounting: on("process"), namingArgs: []string{"--naming=dcgm", "--naming=prometheus"}},
		{name: "a --naming flag wins over GPU_EXPORTER_NAMING", accounting: on("process"), namingArgs: []string{"--naming=prometheus"}, namingEnv: "dcgm"},
		{name: "container mode under dcgm naming only idles", accounting: on("container"), namingArgs: []string{"--naming=dcgm"}},
		{name: "accounting off under dcgm naming", namingArgs: []string{"--naming=dcgm"}},
		{name: "process mode overridden by extraArgs", accounting: on("process"), extraArgs: []string{"--collect.processes=container"}, namingArgs: []string{"--naming=dcgm"}},
		{name: "process mode, prometheus naming", accounting: on("process")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			values := func(naming bool) map[string]any {
				v := map[string]any{}
				if tc.accounting != nil {
					v["processAccounting"] = tc.accounting
				}
				args := slices.Clone(tc.extraArgs)
				if naming {
					args = append(args, tc.namingArgs...)
					if tc.namingEnv != "" {
						v["extraEnv"] = []any{map[string]any{"name": "GPU_EXPORTER_NAMING", "value": tc.namingEnv}}
					}
				}
				if len(args) > 0 {
					v["extraArgs"] = args
				}
				return v
			}
			_, err := helmTemplate(t, chartDir, values(true))
			switch {
			case tc.refusal == "" && err != nil:
				t.Fatalf("the chart refuses: %v", err)
			case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
				t.Fatalf("want a refusal saying %q, got %v", tc.refusal, err)
			}
			// The oracle: the exporter with the chart's arguments.
			_, objs := render(t, chartDir, values(false))
			args := append(stringList(exporterContainer(t, objs), "args"), tc.namingArgs...)
			cmd := exec.Command(exporterBinary(t), append(args, "--version")...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			if tc.namingEnv != "" {
				cmd.Env = append(cmd.Env, "GPU_EXPORTER_NAMING="+tc.namingEnv)
			}
			out, runErr := cmd.CombinedOutput()
			if refused := runErr != nil; refused != (tc.refusal != "") {
				t.Errorf("the exporter with %q (GPU_EXPORTER_NAMING=%q): refused %v, the chart: refused %v\n%s", args, tc.namingEnv, refused, tc.refusal != "", out)
			}
		})
	}
}
