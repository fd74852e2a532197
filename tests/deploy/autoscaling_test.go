package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/gpu-exporter/gpu-exporter/rules"
	"github.com/gpu-exporter/gpu-exporter/tests/autoscaling"
)

const adapterRulesCopy = "files/autoscaling/" + autoscaling.AdapterRulesFile

// TestAutoscalingChartCopyMatchesSource fails while the chart's copy of
// the prometheus-adapter rules differs from deployment/autoscaling/.
func TestAutoscalingChartCopyMatchesSource(t *testing.T) {
	t.Parallel()
	src, err := autoscaling.Raw(autoscaling.AdapterRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.ReadFile(filepath.Join(chartDir, adapterRulesCopy))
	if err != nil {
		t.Fatalf("%v: copy deployment/autoscaling/%s into the chart's files/autoscaling/", err, autoscaling.AdapterRulesFile)
	}
	if !bytes.Equal(src, dst) {
		t.Errorf("the chart's %s differs from deployment/autoscaling/%s: copy it again", adapterRulesCopy, autoscaling.AdapterRulesFile)
	}
}

// TestHelmPrometheusAdapterRules: off by default; on, one ConfigMap whose
// config.yaml is the adapter rules file, byte for byte, in the namespace
// and under the name asked for.
func TestHelmPrometheusAdapterRules(t *testing.T) {
	t.Parallel()
	tool(t, "kubevalidate")
	want, err := os.ReadFile(filepath.Join(chartDir, adapterRulesCopy))
	if err != nil {
		t.Fatal(err)
	}
	adapterConfigMaps := func(objs []object) []object {
		var out []object
		for _, cm := range find(objs, "ConfigMap") {
			if get(cm, "data", "config.yaml") != nil {
				out = append(out, cm)
			}
		}
		return out
	}

	t.Run("off by default", func(t *testing.T) {
		t.Parallel()
		_, objs := render(t, chartDir, nil)
		if n := len(adapterConfigMaps(objs)); n != 0 {
			t.Errorf("%d adapter rule ConfigMaps by default, want none", n)
		}
	})

	// Under dcgm naming the recording rules the adapter rules serve are not
	// installed: no ConfigMap, and the install notes say why. NOTES.txt is
	// rendered by a client-side dry-run install (helm template omits it).
	for name, values := range map[string]map[string]any{
		"naming=dcgm":                {"naming": "dcgm"},
		"gpuOperator.inPlace":        {"gpuOperator": map[string]any{"inPlace": true}},
		"--naming=dcgm in extraArgs": {"extraArgs": []any{"--naming=dcgm"}},
	} {
		t.Run("skipped under "+name, func(t *testing.T) {
			t.Parallel()
			values["autoscaling"] = map[string]any{"prometheusAdapterRules": map[string]any{"enabled": true}}
			out, objs := render(t, chartDir, values)
			kubevalidate(t, out)
			if n := len(adapterConfigMaps(objs)); n != 0 {
				t.Errorf("%d adapter rule ConfigMaps under dcgm naming, want none", n)
			}
			notes, err := helmInstallDryRunNotes(t, values)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(notes, "No prometheus-adapter rules ConfigMap was installed") {
				t.Errorf("NOTES do not say the adapter rules were left out:\n%s", notes)
			}
		})
	}

	cases := []struct {
		name                    string
		values                  map[string]any
		wantName, wantNamespace string
	}{
		{"defaults", map[string]any{"enabled": true}, "gpu-gpu-exporter-prometheus-adapter", "monitoring"},
		{"adapter's namespace and name", map[string]any{
			"enabled": true, "name": "adapter-config", "namespace": "custom-metrics",
			"labels": map[string]any{"team": "platform"}, "annotations": map[string]any{"note": "gpu rules"},
		}, "adapter-config", "custom-metrics"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, objs := render(t, chartDir, map[string]any{"autoscaling": map[string]any{"prometheusAdapterRules": tc.values}})
			kubevalidate(t, out)
			cms := adapterConfigMaps(objs)
			if len(cms) != 1 {
				t.Fatalf("%d adapter rule ConfigMaps, want 1", len(cms))
			}
			cm := cms[0]
			if cm.name() != tc.wantName || get(cm, "metadata", "namespace") != tc.wantNamespace {
				t.Errorf("ConfigMap %s/%s, want %s/%s", get(cm, "metadata", "namespace"), cm.name(), tc.wantNamespace, tc.wantName)
			}
			for _, k := range []string{"labels", "annotations"} {
				extra, _ := tc.values[k].(map[string]any)
				for key, v := range extra {
					if get(cm, "metadata", k, key) != v {
						t.Errorf("metadata.%s.%s = %v, want %v", k, key, get(cm, "metadata", k, key), v)
					}
				}
			}
			got := fmt.Sprint(get(cm, "data", "config.yaml"))
			if got != strings.TrimRight(string(want), "\n") {
				t.Errorf("config.yaml changed on the way through the chart:\n%s", got)
			}
			if _, err := autoscaling.ParseAdapterConfig([]byte(got)); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestHelmSchemaRejectsBadAutoscalingValues(t *testing.T) {
	t.Parallel()
	cases := []struct{ set, want string }{
		{"autoscaling.prometheusAdapterRules.enabled=yes", "/autoscaling/prometheusAdapterRules/enabled"},
		{"autoscaling.prometheusAdapterRules.namespace=Custom_Metrics", "/autoscaling/prometheusAdapterRules/namespace"},
		{"autoscaling.prometheusAdapterRules.name=Adapter", "/autoscaling/prometheusAdapterRules/name"},
		{"autoscaling.hpa.enabled=true", "additional properties 'hpa'"},
		{"autoscaling.prometheusAdapterRules.enable=true", "additional properties 'enable'"},
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
}

// recordingRuleNames are the series the shipped recording rules record.
func recordingRuleNames(t *testing.T) map[string]bool {
	t.Helper()
	f, err := rules.Load(rules.RecordingFile)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range f.Rules() {
		names[r.Record] = true
	}
	return names
}

// TestAdapterRules checks prometheus-adapter-rules.yaml as the adapter
// would read it: every rule finds one recording rule's series by namespace
// and pod, names it uniquely, and renders a query that promtool accepts.
// tests/e2e runs the queries against a real Prometheus.
func TestAdapterRules(t *testing.T) {
	t.Parallel()
	cfg, err := autoscaling.LoadAdapterConfig()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Rules) == 0 {
		t.Fatal("no rules")
	}
	recorded := recordingRuleNames(t)
	apiNames := map[string]string{}
	var queries []string
	for i, r := range cfg.Rules {
		series := r.SeriesName()
		if !recorded[series] {
			t.Errorf("rule %d: seriesQuery %q does not select one of rules/recording.yaml's series", i, r.SeriesQuery)
			continue
		}
		if !strings.Contains(r.SeriesQuery, `namespace!=""`) || !strings.Contains(r.SeriesQuery, `pod!=""`) {
			t.Errorf("rule %d: seriesQuery %q must require namespace and pod", i, r.SeriesQuery)
		}
		if got := r.Resources.Overrides["namespace"]; got != (autoscaling.GroupResource{Resource: "namespace"}) {
			t.Errorf("rule %d: label namespace maps to %+v, want resource namespace", i, got)
		}
		if got := r.Resources.Overrides["pod"]; got != (autoscaling.GroupResource{Resource: "pod"}) {
			t.Errorf("rule %d: label pod maps to %+v, want resource pod", i, got)
		}
		name, ok, err := r.APIName(series)
		switch {
		case err != nil:
			t.Errorf("rule %d: %v", i, err)
			continue
		case !ok:
			t.Errorf("rule %d: name.matches %q does not match its own series %s", i, r.Name.Matches, series)
			continue
		case strings.Contains(name, ":") || !regexp.MustCompile(`^[a-z][a-z0-9_]*$`).MatchString(name):
			t.Errorf("rule %d: API name %q is not a plain metric name", i, name)
		case strings.HasPrefix(name, "gpu_") && rawExporterName(name):
			t.Errorf("rule %d: API name %q is also a raw exporter series name: a catch-all adapter rule would serve it too", i, name)
		}
		if prev, dup := apiNames[name]; dup {
			t.Errorf("API name %s served by %s and %s", name, prev, series)
		}
		apiNames[name] = series
		for _, in := range []autoscaling.QueryInput{
			autoscaling.PodQuery(series, "inference", "llm-server-0"),
			autoscaling.PodQuery(series, "inference", "llm-server-0", "llm-server-1"),
		} {
			q, err := r.Query(in)
			if err != nil {
				t.Errorf("rule %d: %v", i, err)
				continue
			}
			if !strings.Contains(q, "by (pod)") {
				t.Errorf("rule %d: query %q does not group by the requested resource label", i, q)
			}
			queries = append(queries, q)
		}
		queries = append(queries, r.SeriesQuery)
	}
	promtoolCheckQueries(t, queries)
}

// rawExporterName reports whether name is a series family the exporter
// itself serves (docs/metrics.md lists them).
func rawExporterName(name string) bool {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "metrics.md"))
	if err != nil {
		return false
	}
	return bytes.Contains(doc, []byte("`"+name+"`"))
}

// promtoolCheckQueries has promtool parse each query, as the expression of
// a recording rule.
func promtoolCheckQueries(t *testing.T, queries []string) {
	t.Helper()
	var rs []map[string]any
	for i, q := range queries {
		rs = append(rs, map[string]any{"record": fmt.Sprintf("autoscaling:query_%d:check", i), "expr": q})
	}
	promtoolCheckRules(t, []any{map[string]any{"name": "autoscaling-queries", "rules": rs}})
}

// decodeStrict decodes one Kubernetes object into its Go type, refusing
// unknown and duplicate fields, as kubevalidate does for the kinds it knows.
func decodeStrict(t *testing.T, data []byte) runtime.Object {
	t.Helper()
	scheme := runtime.NewScheme()
	utilruntime.Must(autoscalingv2.AddToScheme(scheme))
	codec := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})
	obj, _, err := codec.Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestHPAExample decodes hpa.yaml into autoscaling/v2 strictly and checks
// that it scales a Deployment on metrics the adapter rules serve.
func TestHPAExample(t *testing.T) {
	t.Parallel()
	data, err := autoscaling.Raw(autoscaling.HPAFile)
	if err != nil {
		t.Fatal(err)
	}
	hpa, ok := decodeStrict(t, data).(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		t.Fatal("hpa.yaml is not an autoscaling/v2 HorizontalPodAutoscaler")
	}
	served := adapterAPINames(t)
	if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || ref.Name == "" {
		t.Errorf("scaleTargetRef = %+v, want an apps/v1 Deployment", ref)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 1 || hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
		t.Errorf("replicas %v..%d", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	if len(hpa.Spec.Metrics) == 0 {
		t.Fatal("no metrics")
	}
	for _, m := range hpa.Spec.Metrics {
		if m.Type != autoscalingv2.PodsMetricSourceType || m.Pods == nil {
			t.Errorf("metric %+v: want a Pods metric", m)
			continue
		}
		if !served[m.Pods.Metric.Name] {
			t.Errorf("metric %s is not served by prometheus-adapter-rules.yaml (serves %v)", m.Pods.Metric.Name, served)
		}
		target := m.Pods.Target
		if target.Type != autoscalingv2.AverageValueMetricType || target.AverageValue == nil || target.AverageValue.Sign() <= 0 {
			t.Errorf("metric %s: target %+v, want a positive AverageValue", m.Pods.Metric.Name, target)
		}
	}
	if b := hpa.Spec.Behavior; b == nil || b.ScaleDown == nil || b.ScaleDown.StabilizationWindowSeconds == nil {
		t.Error("no scale-down stabilization: GPU pods would be removed on the first dip")
	}
}

func adapterAPINames(t *testing.T) map[string]bool {
	t.Helper()
	cfg, err := autoscaling.LoadAdapterConfig()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range cfg.Rules {
		if n, ok, err := r.APIName(r.SeriesName()); err == nil && ok {
			names[n] = true
		}
	}
	return names
}

// TestKEDAExample validates keda-scaledobject.yaml structurally (KEDA's
// CRD types are not a dependency): known fields only, string trigger
// metadata, a Prometheus trigger whose query promtool parses and which
// reads only recorded series, and the same target as hpa.yaml.
func TestKEDAExample(t *testing.T) {
	t.Parallel()
	so, err := autoscaling.LoadScaledObject()
	if err != nil {
		t.Fatal(err)
	}
	if so.APIVersion != "keda.sh/v1alpha1" || so.Kind != "ScaledObject" {
		t.Errorf("%s %s, want keda.sh/v1alpha1 ScaledObject", so.APIVersion, so.Kind)
	}
	if so.Metadata.Name == "" || so.Metadata.Namespace == "" {
		t.Error("metadata.name and metadata.namespace are required")
	}
	spec := so.Spec
	if spec.ScaleTargetRef.Name == "" {
		t.Error("scaleTargetRef.name is required")
	}
	if k := spec.ScaleTargetRef.Kind; k != "" && k != "Deployment" {
		t.Errorf("scaleTargetRef.kind %s, want Deployment", k)
	}
	if spec.MinReplicaCount == nil || *spec.MinReplicaCount < 1 {
		t.Error("minReplicaCount must be at least 1: GPU utilization exists only while a pod runs")
	}
	if spec.MaxReplicaCount != nil && spec.MinReplicaCount != nil && *spec.MaxReplicaCount < *spec.MinReplicaCount {
		t.Error("maxReplicaCount < minReplicaCount")
	}
	if a := spec.Advanced; a != nil && a.HorizontalPodAutoscalerConfig != nil && !a.HorizontalPodAutoscalerConfig.Behavior.IsZero() {
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		if err := enc.Encode(&a.HorizontalPodAutoscalerConfig.Behavior); err != nil {
			t.Fatal(err)
		}
		hpa := "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: x}\nspec:\n  maxReplicas: 1\n  scaleTargetRef: {kind: Deployment, name: x}\n  behavior:\n" + indent(b.String(), "    ")
		decodeStrict(t, []byte(hpa))
	}
	if len(spec.Triggers) != 1 {
		t.Fatalf("%d triggers, want 1", len(spec.Triggers))
	}
	tr := spec.Triggers[0]
	if tr.Type != "prometheus" {
		t.Errorf("trigger type %s, want prometheus", tr.Type)
	}
	if !slices.Contains([]string{"", "AverageValue", "Value"}, tr.MetricType) {
		t.Errorf("metricType %s, want AverageValue or Value", tr.MetricType)
	}
	if spec.Fallback != nil && tr.MetricType == "Value" {
		t.Error("KEDA's fallback works with AverageValue metrics only")
	}
	meta, err := tr.StringMetadata()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"serverAddress", "query", "threshold"} {
		if meta[k] == "" {
			t.Errorf("trigger metadata.%s is required", k)
		}
	}
	threshold, err := strconv.ParseFloat(meta["threshold"], 64)
	if err != nil || threshold <= 0 {
		t.Errorf("threshold %q: want a positive number", meta["threshold"])
	}
	recorded := recordingRuleNames(t)
	for _, name := range regexp.MustCompile(`[a-z_]+:[a-z0-9_]+:[a-z0-9_]+`).FindAllString(meta["query"], -1) {
		if !recorded[name] {
			t.Errorf("query reads %s, which rules/recording.yaml does not record", name)
		}
	}
	promtoolCheckQueries(t, []string{meta["query"]})

	// The same Deployment and target as the HPA example.
	data, err := autoscaling.Raw(autoscaling.HPAFile)
	if err != nil {
		t.Fatal(err)
	}
	hpa := decodeStrict(t, data).(*autoscalingv2.HorizontalPodAutoscaler)
	if hpa.Spec.ScaleTargetRef.Name != spec.ScaleTargetRef.Name || hpa.Namespace != so.Metadata.Namespace {
		t.Errorf("the ScaledObject scales %s/%s, the HPA %s/%s", so.Metadata.Namespace, spec.ScaleTargetRef.Name, hpa.Namespace, hpa.Spec.ScaleTargetRef.Name)
	}
	if !strings.Contains(meta["query"], fmt.Sprintf("workload=%q", spec.ScaleTargetRef.Name)) ||
		!strings.Contains(meta["query"], fmt.Sprintf("namespace=%q", so.Metadata.Namespace)) {
		t.Errorf("the query does not select the scaled Deployment %s/%s", so.Metadata.Namespace, spec.ScaleTargetRef.Name)
	}
	if av := hpa.Spec.Metrics[0].Pods.Target.AverageValue; av != nil && av.AsApproximateFloat64() != threshold {
		t.Errorf("hpa.yaml targets %v per pod, the ScaledObject %g", av, threshold)
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func TestHelmLintWithAutoscaling(t *testing.T) {
	t.Parallel()
	out, err := run(nil, tool(t, "helm"), "lint", "--strict", chartDir,
		"--set", "autoscaling.prometheusAdapterRules.enabled=true",
		"--set", "autoscaling.prometheusAdapterRules.namespace=custom-metrics")
	if err != nil {
		t.Errorf("%v\n%s", err, out)
	}
}

// helmInstallDryRunNotes renders the chart as `helm install --dry-run=client`
// does, without a cluster, and returns its NOTES.
func helmInstallDryRunNotes(t *testing.T, values map[string]any) (string, error) {
	t.Helper()
	data, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	out, err := run(bytes.NewReader(data), tool(t, "helm"), "install", "gpu", chartDir, "--namespace", "monitoring",
		"--dry-run=client", "--values", "-")
	if err != nil {
		return "", err
	}
	_, notes, _ := strings.Cut(string(out), "NOTES:")
	return notes, nil
}
