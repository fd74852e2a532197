package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/gpu-exporter/gpu-exporter/rules"
)

// TestHelmMonitoringFollowsTheCluster: a plain install on a cluster that
// runs prometheus-operator is scraped, alerted on and graphed; elsewhere it
// renders none of the operator's kinds (which would fail the install); the
// values force either way; monitoring.release sets kube-prometheus-stack's
// selector label on every operator object.
func TestHelmMonitoringFollowsTheCluster(t *testing.T) {
	t.Parallel()
	kinds := []string{"ServiceMonitor", "PrometheusRule"}
	cases := []struct {
		name       string
		values     map[string]any
		operator   bool // the cluster serves monitoring.coreos.com/v1
		want       bool // ServiceMonitor, PrometheusRule and dashboards rendered
		wantRelase string
	}{
		{name: "defaults, no operator", want: false},
		{name: "defaults, operator", operator: true, want: true},
		{name: "forced off, operator", operator: true, values: map[string]any{
			"serviceMonitor": map[string]any{"enabled": false},
			"prometheusRule": map[string]any{"enabled": false},
			"dashboards":     map[string]any{"enabled": false},
		}},
		{name: "forced on, no operator", want: true, values: map[string]any{
			"serviceMonitor": map[string]any{"enabled": true},
			"prometheusRule": map[string]any{"enabled": true},
			"dashboards":     map[string]any{"enabled": true},
		}},
		{name: "release label", operator: true, want: true, wantRelase: "kube-prometheus-stack", values: map[string]any{
			"monitoring": map[string]any{"release": "kube-prometheus-stack"},
			"podMonitor": map[string]any{"enabled": true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var extra []string
			if tc.operator {
				extra = monitoringAPIs
			}
			out, err := helmTemplateArgs(t, chartDir, tc.values, extra)
			if err != nil {
				t.Fatal(err)
			}
			objs := parseObjects(t, out)
			kubevalidate(t, out)
			for _, k := range kinds {
				if got := len(find(objs, k)); got != b2i(tc.want) {
					t.Errorf("%d %s, want %d", got, k, b2i(tc.want))
				}
			}
			dash := dashboardConfigMaps(t, objs)
			for _, cm := range dash {
				if get(cm, "metadata", "labels", "grafana_dashboard") != "1" {
					t.Errorf("dashboard ConfigMap %s lacks the Grafana sidecar's label grafana_dashboard=1: %v", cm.name(), get(cm, "metadata", "labels"))
				}
			}
			if files := chartDashboards(t, ""); len(dash) != len(files)*b2i(tc.want) {
				t.Errorf("%d dashboard ConfigMaps, want %d", len(dash), len(files)*b2i(tc.want))
			}
			if tc.wantRelase == "" {
				return
			}
			for _, k := range append(kinds, "PodMonitor") {
				for _, o := range find(objs, k) {
					if got := get(o, "metadata", "labels", "release"); got != tc.wantRelase {
						t.Errorf("%s label release = %v, want %s", k, got, tc.wantRelase)
					}
				}
			}
		})
	}
}

// TestHelmAffinityMatchesGPUNodes evaluates the default node affinity, as
// the scheduler does, against node objects that carry only the label one
// provider or tool sets on GPU nodes, and against nodes without a GPU.
func TestHelmAffinityMatchesGPUNodes(t *testing.T) {
	t.Parallel()
	_, objs := render(t, chartDir, nil)
	terms := list(get(only(t, objs, "DaemonSet"), "spec", "template", "spec"), "affinity", "nodeAffinity",
		"requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
	if len(terms) == 0 {
		t.Fatal("no required node affinity")
	}
	cases := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"GPU Feature Discovery (GPU Operator)", map[string]string{"nvidia.com/gpu.present": "true"}, true},
		{"NFD with the GPU Operator's configuration", map[string]string{"feature.node.kubernetes.io/pci-10de.present": "true"}, true},
		{"stock NFD, 3D controller", map[string]string{"feature.node.kubernetes.io/pci-0302_10de.present": "true"}, true},
		{"stock NFD, VGA controller", map[string]string{"feature.node.kubernetes.io/pci-0300_10de.present": "true"}, true},
		{"GKE", map[string]string{"cloud.google.com/gke-accelerator": "nvidia-l4"}, true},
		{"AKS", map[string]string{"kubernetes.azure.com/accelerator": "nvidia"}, true},
		{"EKS node group (cluster-autoscaler label)", map[string]string{"k8s.amazonaws.com/accelerator": "nvidia-tesla-t4"}, true},
		{"EKS with Karpenter", map[string]string{"karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia"}, true},
		{"EKS Auto Mode", map[string]string{"eks.amazonaws.com/instance-gpu-manufacturer": "nvidia"}, true},
		{"CPU node", map[string]string{"kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "m7i.xlarge"}, false},
		{"stock NFD, AMD GPU", map[string]string{"feature.node.kubernetes.io/pci-0300_1002.present": "true"}, false},
		{"GKE TPU node", map[string]string{"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice"}, false},
		{"Karpenter, AWS Inferentia", map[string]string{"karpenter.k8s.aws/instance-gpu-manufacturer": "aws"}, false},
		{"GFD says no GPU", map[string]string{"nvidia.com/gpu.present": "false"}, false},
	}
	for _, tc := range cases {
		got, err := matchesNodeSelectorTerms(terms, tc.labels)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s (%v): scheduled = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}

// matchesNodeSelectorTerms is the scheduler's rule for required node
// affinity: the terms are ORed, a term's expressions ANDed, each
// expression a label requirement (apimachinery's labels package, which
// the scheduler's own nodeaffinity helper uses).
func matchesNodeSelectorTerms(terms []map[string]any, nodeLabels map[string]string) (bool, error) {
	for _, term := range terms {
		sel := labels.NewSelector()
		for _, e := range list(term, "matchExpressions") {
			op := map[string]selection.Operator{
				"In": selection.In, "NotIn": selection.NotIn, "Exists": selection.Exists,
				"DoesNotExist": selection.DoesNotExist, "Gt": selection.GreaterThan, "Lt": selection.LessThan,
			}[fmt.Sprint(e["operator"])]
			req, err := labels.NewRequirement(fmt.Sprint(e["key"]), op, stringList(e, "values"))
			if err != nil {
				return false, fmt.Errorf("node selector term %v: %w", term, err)
			}
			sel = sel.Add(*req)
		}
		if len(list(term, "matchExpressions")) > 0 && sel.Matches(labels.Set(nodeLabels)) {
			return true, nil
		}
	}
	return false, nil
}

// TestHelmProductionDefaults: defaults that install on any cluster and
// roll out fast on a large one.
func TestHelmProductionDefaults(t *testing.T) {
	t.Parallel()
	_, objs := render(t, chartDir, nil)
	ds := only(t, objs, "DaemonSet")
	if pc := get(ds, "spec", "template", "spec", "priorityClassName"); pc != nil {
		t.Errorf("priorityClassName = %v by default; GKE refuses system-node-critical outside kube-system", pc)
	}
	mu := fmt.Sprint(get(ds, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable"))
	if !strings.HasSuffix(mu, "%") {
		t.Errorf("maxUnavailable = %s, want a percentage: one pod at a time takes hours on a large fleet", mu)
	}
}

// TestHelmRulesFollowValues: the PrometheusRule holds the shipped rules
// with the defaults, and with tuned values the same rules that
// rules.Render makes of the source (the two implementations of one
// transform agree); the tuned rendering passes rules/tests/tuned.
func TestHelmRulesFollowValues(t *testing.T) {
	t.Parallel()
	ruleDir := filepath.Join(repoRoot, "rules")
	src, err := os.ReadFile(filepath.Join(ruleDir, rules.SourceFile))
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tunedPath := filepath.Join(ruleDir, "tests", "tuned", "values.yaml")
	tuned, err := os.ReadFile(tunedPath)
	if err != nil {
		t.Fatal(err)
	}
	var tunedValues map[string]any
	if err := yaml.Unmarshal(tuned, &tunedValues); err != nil {
		t.Fatal(err)
	}

	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		_, objs := render(t, chartDir, map[string]any{"prometheusRule": map[string]any{"enabled": true}})
		var want []any
		for _, f := range []string{rules.AlertsFile, rules.RecordingFile} {
			want = append(want, ruleGroups(t, filepath.Join(ruleDir, f))...)
		}
		if got := get(only(t, objs, "PrometheusRule"), "spec", "groups"); !equalYAML(got, want) {
			t.Errorf("the chart's default rules differ from rules/%s and rules/%s", rules.AlertsFile, rules.RecordingFile)
		}
	})

	t.Run("tuned", func(t *testing.T) {
		t.Parallel()
		values := tunedValues
		values["prometheusRule"].(map[string]any)["enabled"] = true
		_, objs := render(t, chartDir, values)
		got := list(only(t, objs, "PrometheusRule"), "spec", "groups")
		p, err := rules.ParamsFromValues(defaults, tuned)
		if err != nil {
			t.Fatal(err)
		}
		f, err := rules.Render(src, p)
		if err != nil {
			t.Fatal(err)
		}
		data, err := f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var want struct {
			Groups []any `yaml:"groups"`
		}
		if err := yaml.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		if len(got) < len(want.Groups) || !equalYAML(anySlice(got[:len(want.Groups)]), want.Groups) {
			t.Errorf("the chart renders other alerting rules than rules.Render for %s:\n got %v\nwant %v", tunedPath, got, want.Groups)
		}
		promtoolTestTuned(t, got)
	})

	t.Run("nameOverride sets the job", func(t *testing.T) {
		t.Parallel()
		_, objs := render(t, chartDir, map[string]any{"nameOverride": "gpu-metrics", "prometheusRule": map[string]any{"enabled": true}})
		groups, _ := yaml.Marshal(get(only(t, objs, "PrometheusRule"), "spec", "groups"))
		if !strings.Contains(string(groups), `up{job="gpu-metrics"}`) || strings.Contains(string(groups), `job="gpu-exporter"`) {
			t.Error(`with nameOverride gpu-metrics the ServiceMonitor's job is gpu-metrics, but the rules do not select up{job="gpu-metrics"}`)
		}
	})
}

// ruleGroups returns the groups of a rule file as decoded YAML.
func ruleGroups(t *testing.T, path string) []any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []any `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc.Groups
}

func anySlice(ms []map[string]any) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

// promtoolTestTuned runs rules/tests/tuned/*_test.yaml on the chart's
// rule groups, without annotations (the tests check behaviour).
func promtoolTestTuned(t *testing.T, groups []map[string]any) {
	t.Helper()
	promtool := tool(t, "promtool")
	dir := t.TempDir()
	var alerts, recording []any
	for _, g := range groups {
		isAlerts := false
		for _, r := range list(g, "rules") {
			delete(r, "annotations")
			if r["alert"] != nil {
				isAlerts = true
			}
		}
		if isAlerts {
			alerts = append(alerts, g)
		} else {
			recording = append(recording, g)
		}
	}
	for name, gs := range map[string][]any{rules.AlertsFile: alerts, rules.RecordingFile: recording} {
		data, err := yaml.Marshal(map[string]any{"groups": gs})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests, _ := filepath.Glob(filepath.Join(repoRoot, "rules", "tests", "tuned", "*_test.yaml"))
	if len(tests) == 0 {
		t.Fatal("no rules/tests/tuned/*_test.yaml")
	}
	if err := os.Mkdir(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"test", "rules"}
	for _, src := range tests {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, "tests", filepath.Base(src))
		if err := os.WriteFile(dst, data, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, dst)
	}
	if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules on the chart's tuned rules: %v\n%s", err, out)
	}
}
