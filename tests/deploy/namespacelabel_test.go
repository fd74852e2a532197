package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/dashboards"
	"github.com/gpu-exporter/gpu-exporter/rules"
)

// TestHelmNamespaceLabel: with monitoring.namespaceLabel: exported_namespace
// (for prometheus-operator's enforcedNamespaceLabel) the monitors copy the
// holder's namespace to exported_namespace and drop `namespace` before the
// user's metric relabelings, the PrometheusRule holds both rule sources
// rendered for that label (as rules.RenderFile renders them) and passes
// promtool, and the dashboards ConfigMap holds the dashboards rendered for
// it. With the default none of this appears.
func TestHelmNamespaceLabel(t *testing.T) {
	t.Parallel()
	const label = "exported_namespace"
	userRelabel := map[string]any{"action": "labeldrop", "regex": "label_team"}
	values := func(nsLabel string) map[string]any {
		return map[string]any{
			"monitoring":     map[string]any{"namespaceLabel": nsLabel},
			"serviceMonitor": map[string]any{"enabled": true, "metricRelabelings": []any{userRelabel}},
			"podMonitor":     map[string]any{"enabled": true, "metricRelabelings": []any{userRelabel}},
			"prometheusRule": map[string]any{"enabled": true},
			"dashboards":     map[string]any{"enabled": true},
		}
	}
	wantRelabelings := mustYAML(t, `
- sourceLabels: [namespace]
  regex: (.+)
  targetLabel: exported_namespace
  replacement: $1
  action: replace
- regex: namespace
  action: labeldrop
- action: labeldrop
  regex: label_team
`)

	rendered, objs := render(t, chartDir, values(label))
	kubevalidate(t, rendered)
	for _, kind := range []string{"ServiceMonitor", "PodMonitor"} {
		endpoints := "endpoints"
		if kind == "PodMonitor" {
			endpoints = "podMetricsEndpoints"
		}
		got := get(only(t, objs, kind), "spec", endpoints, 0, "metricRelabelings")
		if !equalYAML(got, wantRelabelings) {
			t.Errorf("%s metricRelabelings = %v, want %v", kind, got, wantRelabelings)
		}
	}

	// The chart's rule template and rules.RenderFile agree.
	p, err := rules.ParamsFromValues(readChartFile(t, "values.yaml"), []byte("monitoring:\n  namespaceLabel: "+label+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var want []any
	for _, s := range rules.Sources {
		src, err := os.ReadFile(filepath.Join(repoRoot, "rules", s.Source))
		if err != nil {
			t.Fatal(err)
		}
		f, err := rules.RenderFile(s.Source, src, p)
		if err != nil {
			t.Fatal(err)
		}
		data, err := f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Groups []any `yaml:"groups"`
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		want = append(want, doc.Groups...)
	}
	groups := get(only(t, objs, "PrometheusRule"), "spec", "groups")
	if !equalYAML(groups, want) {
		t.Errorf("the chart's rules for %s differ from rules.RenderFile's", label)
	}
	text, _ := yaml.Marshal(groups)
	if strings.Count(string(text), label) < 20 || strings.Contains(string(text), "max without (namespace, pod, container)") {
		t.Errorf("the chart's rules do not follow monitoring.namespaceLabel=%s", label)
	}
	promtoolCheckRules(t, groups)

	// The dashboards are those rendered for the label.
	shipped := dashboardData(t, objs)
	for _, b := range dashboards.All() {
		data, err := dashboards.Render(b, dashboards.Options{NamespaceLabel: label})
		if err != nil {
			t.Fatal(err)
		}
		if got := shipped[b.File]; got != strings.TrimRight(string(data), "\n") {
			t.Errorf("dashboards ConfigMap: %s is not the dashboard rendered for %s", b.File, label)
		}
	}

	// Defaults: no relabeling of the chart's own, rules and dashboards on
	// `namespace`.
	rendered, objs = render(t, chartDir, values("namespace"))
	if got := get(only(t, objs, "ServiceMonitor"), "spec", "endpoints", 0, "metricRelabelings"); !equalYAML(got, []any{userRelabel}) {
		t.Errorf("default ServiceMonitor metricRelabelings = %v, want only the user's", got)
	}
	if strings.Contains(string(rendered), label) {
		t.Errorf("the default rendering names %s", label)
	}
}

func readChartFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
