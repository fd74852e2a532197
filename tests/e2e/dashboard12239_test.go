package e2e

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
)

// dashboard12239 are the panel queries of NVIDIA's "NVIDIA DCGM Exporter
// Dashboard" (grafana.com 12239): NVIDIA/dcgm-exporter
// grafana/dcgm-exporter-dashboard.json, unchanged since cffaeb81
// (2023-08-11) up to d5e5f510 (2026-05-12), by panel title. Its template
// variables are instance and gpu, both label_values(DCGM_FI_DEV_GPU_TEMP,
// <label>), multi-value with All.
var dashboard12239 = []struct{ panel, expr string }{
	{"GPU Temperature", `DCGM_FI_DEV_GPU_TEMP{instance=~"$instance", gpu=~"$gpu"}`},
	{"GPU Avg. Temp", `avg(DCGM_FI_DEV_GPU_TEMP{instance=~"$instance", gpu=~"$gpu"})`},
	{"GPU Power Usage", `DCGM_FI_DEV_POWER_USAGE{instance=~"$instance", gpu=~"$gpu"}`},
	{"GPU Power Total", `sum(DCGM_FI_DEV_POWER_USAGE{instance=~"$instance", gpu=~"$gpu"})`},
	{"GPU SM Clocks", `DCGM_FI_DEV_SM_CLOCK{instance=~"$instance", gpu=~"$gpu"} * 1000000`},
	{"GPU Utilization", `DCGM_FI_DEV_GPU_UTIL{instance=~"$instance", gpu=~"$gpu"}`},
	{"GPU Framebuffer Mem Used", `DCGM_FI_DEV_FB_USED{instance=~"$instance", gpu=~"$gpu"}`},
	{"Tensor Core Utilization", `DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{instance=~"$instance", gpu=~"$gpu"}`},
}

// grafanaRegex is how Grafana's Prometheus data source writes the values
// of a multi-value variable into a regex matcher: each value's regex
// metacharacters escaped, several values as (a|b), inside a PromQL string
// (so each backslash doubled).
func grafanaRegex(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`)
	}
	if len(quoted) == 1 {
		return quoted[0]
	}
	return "(" + strings.Join(quoted, "|") + ")"
}

// labelValues is Grafana's label_values(metric, label).
func (s *stack) labelValues(metric, label string) ([]string, error) {
	var r struct {
		Status string   `json:"status"`
		Data   []string `json:"data"`
	}
	if err := s.getJSON("/api/v1/label/"+label+"/values?"+url.Values{"match[]": {metric}}.Encode(), &r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("label values of %s on %s: %s", label, metric, r.Status)
	}
	sort.Strings(r.Data)
	return r.Data, nil
}

// TestDashboard12239InPlace: in place of the GPU Operator's dcgm-exporter
// (--naming=dcgm, the chart's ServiceMonitor), every panel of NVIDIA's
// dashboard 12239 shows data for a whole-GPU node (demo) and a MIG node
// (mig: MIG instances and a whole GPU), with the variables at All and at
// each node's instance.
func TestDashboard12239InPlace(t *testing.T) {
	s := startInPlace(t, "demo", "mig")
	poll.Problems(t, 60*time.Second, time.Second, func() []string {
		instances, err := s.labelValues("DCGM_FI_DEV_GPU_TEMP", "instance")
		if err != nil {
			return []string{err.Error()}
		}
		gpus, err := s.labelValues("DCGM_FI_DEV_GPU_TEMP", "gpu")
		if err != nil {
			return []string{err.Error()}
		}
		if len(instances) != 2 {
			return []string{fmt.Sprintf("instance variable: %v, want the two exporters", instances)}
		}
		selections := [][]string{instances}
		for _, i := range instances {
			selections = append(selections, []string{i})
		}
		var problems []string
		for _, sel := range selections {
			for _, p := range dashboard12239 {
				q := strings.NewReplacer("$instance", grafanaRegex(sel), "$gpu", grafanaRegex(gpus)).Replace(p.expr)
				r, err := s.query(q)
				switch {
				case err != nil:
					problems = append(problems, fmt.Sprintf("panel %q: %v", p.panel, err))
				case len(r) == 0:
					problems = append(problems, fmt.Sprintf("panel %q, instance %v: no data: %s", p.panel, sel, q))
				}
			}
		}
		// The MIG node's panels show its MIG instances (GPU_I_ID), as
		// dcgm-exporter's do.
		if r, err := s.query(`DCGM_FI_DEV_FB_USED{pod="gpu-exporter-mig", GPU_I_ID!=""}`); err != nil || len(r) == 0 {
			problems = append(problems, fmt.Sprintf("no MIG instance series from the mig node: %v", err))
		}
		return problems
	})
}
