package deploy

import (
	"slices"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/rules"
)

// openCostGroup is the rule group of rules/opencost.yaml.
const openCostGroup = "gpu-exporter.opencost.rules"

// TestHelmOpenCostRules: prometheusRule.opencost adds the group of
// rules/opencost.yaml to the PrometheusRule, as the file holds it, and only
// under Prometheus naming; it is off by default, and under dcgm naming (in
// place of the GPU Operator's dcgm-exporter, or from the naming value) the
// chart installs no rules at all, so no alert reading gpu_* series can
// fire on a healthy node.
func TestHelmOpenCostRules(t *testing.T) {
	t.Parallel()
	f, err := rules.Load(rules.OpenCostFile)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range f.Rules() {
		want = append(want, r.Record)
	}
	opencost := func(on bool) map[string]any {
		return map[string]any{"enabled": "auto", "opencost": on}
	}
	cases := []struct {
		name      string
		values    map[string]any
		wantRules bool // a PrometheusRule at all
		wantGroup bool
	}{
		{"default", map[string]any{"prometheusRule": map[string]any{"enabled": "auto"}}, true, false},
		{"opencost off", map[string]any{"prometheusRule": opencost(false)}, true, false},
		{"opencost on", map[string]any{"prometheusRule": opencost(true)}, true, true},
		{"opencost on, dcgm naming", map[string]any{"naming": "dcgm", "prometheusRule": opencost(true)}, false, false},
		{"opencost on, in place of dcgm-exporter", map[string]any{"gpuOperator": map[string]any{"inPlace": true}, "prometheusRule": opencost(true)}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := helmTemplateArgs(t, chartDir, tc.values, monitoringAPIs)
			if err != nil {
				t.Fatal(err)
			}
			prs := find(parseObjects(t, out), "PrometheusRule")
			if (len(prs) > 0) != tc.wantRules {
				t.Fatalf("%d PrometheusRules, want them rendered: %v", len(prs), tc.wantRules)
			}
			var got []string
			groups := 0
			for _, pr := range prs {
				gs, _ := get(pr, "spec", "groups").([]any)
				groups += len(gs)
				for _, g := range gs {
					if get(g, "name") != openCostGroup {
						continue
					}
					rs, _ := get(g, "rules").([]any)
					for _, r := range rs {
						got = append(got, get(r, "record").(string))
					}
				}
			}
			switch {
			case tc.wantGroup && !slices.Equal(got, want):
				t.Errorf("group %s records %v, want rules/%s's %v", openCostGroup, got, rules.OpenCostFile, want)
			case !tc.wantGroup && got != nil:
				t.Errorf("group %s rendered (%d records), want it left out", openCostGroup, len(got))
			case tc.wantRules && groups < 2:
				t.Errorf("%d rule groups; want the alerting and recording groups", groups)
			}
		})
	}
}
