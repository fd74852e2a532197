package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/tests/autoscaling"
)

// autoscalingNode runs testdata/autoscaling.yaml: constant utilizations
// and memory, so that the autoscaling queries have exact answers.
var autoscalingNode = node{name: "gpu-node-autoscaling", scenario: filepath.Join(repoRoot(), "tests", "e2e", "testdata", "autoscaling.yaml")}

const (
	mib = 1 << 20
	// The Deployment of the autoscaling scenario, as the shipped HPA and
	// ScaledObject name it.
	llmNamespace = "inference"
	llmPrefix    = "llm-server-7c9d5b8f6d-"
)

// podWant is what each custom metric of prometheus-adapter-rules.yaml must
// read for one pod of the autoscaling scenario.
type podWant struct {
	namespace, pod string
	values         map[string]float64 // by custom metrics API name
}

// autoscalingWants follows testdata/autoscaling.yaml. The time-sliced GPU 2
// (60 %, 30 GiB) is held by llm-server-…-g5h6i and batch/embed-0: each
// reads the GPU's utilization and fill, and half of its memory. The node
// runs no process on its GPUs, so gpu_own_utilization (each pod's own
// processes, from process accounting) falls back to gpu_utilization.
var autoscalingWants = []podWant{
	{llmNamespace, llmPrefix + "a1b2c", map[string]float64{"gpu_utilization": 0.8, "gpu_memory_used": 40960 * mib, "gpu_own_utilization": 0.8, "gpu_memory_utilization": 0.5}},
	{llmNamespace, llmPrefix + "d3e4f", map[string]float64{"gpu_utilization": 0.4, "gpu_memory_used": 20480 * mib, "gpu_own_utilization": 0.4, "gpu_memory_utilization": 0.25}},
	{llmNamespace, llmPrefix + "g5h6i", map[string]float64{"gpu_utilization": 0.6, "gpu_memory_used": 15360 * mib, "gpu_own_utilization": 0.6, "gpu_memory_utilization": 0.375}},
	{llmNamespace, llmPrefix + "j7k8l", map[string]float64{"gpu_utilization": 0.5, "gpu_memory_used": 10048 * mib, "gpu_own_utilization": 0.5, "gpu_memory_utilization": 0.25}},
	{llmNamespace, llmPrefix + "m9n0p", map[string]float64{"gpu_utilization": 0.7, "gpu_memory_used": 16384 * mib, "gpu_own_utilization": 0.7, "gpu_memory_utilization": 0.1}},
	{"batch", "embed-0", map[string]float64{"gpu_utilization": 0.6, "gpu_memory_used": 15360 * mib, "gpu_own_utilization": 0.6, "gpu_memory_utilization": 0.375}},
}

// testAutoscaling runs every query of deployment/autoscaling the way its
// consumer would: each prometheus-adapter seriesQuery as the adapter's
// discovery does (the series API), each metricsQuery templated for one pod
// and for all the Deployment's pods at once, and the KEDA trigger's query;
// the answers must be the scenario's exact values.
func testAutoscaling(t *testing.T, s *stack) {
	cfg, err := autoscaling.LoadAdapterConfig()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, rule := range cfg.Rules {
		series := rule.SeriesName()
		name, ok, err := rule.APIName(series)
		if err != nil || !ok {
			t.Fatalf("rule for %s: name.matches does not give an API name (%v)", series, err)
		}
		served[name] = true
		t.Run(name, func(t *testing.T) {
			poll.Problems(t, 45*time.Second, time.Second, func() []string {
				return checkAdapterRule(s, rule, series, name)
			})
		})
	}
	for _, w := range autoscalingWants {
		for name := range w.values {
			if !served[name] {
				t.Errorf("test expects metric %s, which no adapter rule serves", name)
			}
		}
	}

	t.Run("keda", func(t *testing.T) {
		so, err := autoscaling.LoadScaledObject()
		if err != nil {
			t.Fatal(err)
		}
		meta, err := so.Spec.Triggers[0].StringMetadata()
		if err != nil {
			t.Fatal(err)
		}
		// Σ per-pod utilization of the Deployment's five pods.
		want := 0.8 + 0.4 + 0.6 + 0.5 + 0.7
		poll.Problems(t, 45*time.Second, time.Second, func() []string {
			return checkSingleValue(s, meta["query"], want)
		})
		var threshold float64
		if _, err := fmt.Sscan(meta["threshold"], &threshold); err != nil {
			t.Fatalf("threshold %q: %v", meta["threshold"], err)
		}
		// AverageValue: replicas = ceil(value / threshold). The scenario
		// sits on the target: five pods at 60 % on average stay five.
		if got := int(math.Ceil(want/threshold - 1e-9)); got != 5 {
			t.Errorf("KEDA would scale the 5 pods to %d replicas, want 5", got)
		}
		// The HPA example aims at the same average per pod.
		if hpaTarget := hpaAverageValue(t); math.Abs(hpaTarget-threshold) > 1e-9 {
			t.Errorf("hpa.yaml targets %g per pod, the ScaledObject %g", hpaTarget, threshold)
		}
	})

	t.Run("workload and node pool rules", func(t *testing.T) {
		sel := `{namespace="inference", workload="llm-server", workload_type="Deployment"}`
		wants := map[string]float64{
			"namespace_workload:gpu_utilization_ratio:avg" + sel:                                                     0.6,
			"namespace_workload:gpu_memory_used_bytes:sum" + sel:                                                     (40960 + 20480 + 15360 + 10048 + 16384) * mib,
			"count(namespace_workload_pod:gpu_pod_owner:relabel" + sel + ")":                                         5,
			`namespace_workload:gpu_allocated:sum{namespace="batch", workload="embed", workload_type="StatefulSet"}`: 0.5,
			// research/sweep-7 (kube-state-metrics.prom) waits for two GPUs in pool a100-pool.
			`node_pool:gpu_requests_unschedulable:sum{node_pool="a100-pool", resource="nvidia_com_gpu"}`: 2,
		}
		poll.Problems(t, 45*time.Second, time.Second, func() []string {
			var wrong []string
			for q, want := range wants {
				wrong = append(wrong, checkSingleValue(s, q, want)...)
			}
			return wrong
		})
	})
}

// checkAdapterRule checks one rule's discovery and its queries.
func checkAdapterRule(s *stack, rule autoscaling.AdapterRule, series, name string) []string {
	var wrong []string
	// Discovery: the series must carry the labels the rule maps to pods
	// and namespaces, for every pod of the scenario.
	found, err := s.seriesLabels(rule.SeriesQuery)
	if err != nil {
		return []string{err.Error()}
	}
	have := map[string]bool{}
	for _, l := range found {
		for label := range rule.Resources.Overrides {
			if l[label] == "" {
				wrong = append(wrong, fmt.Sprintf("%s: series %v lacks label %s", rule.SeriesQuery, l, label))
			}
		}
		have[l["namespace"]+"/"+l["pod"]] = true
	}
	for _, w := range autoscalingWants {
		if !have[w.namespace+"/"+w.pod] {
			wrong = append(wrong, fmt.Sprintf("%s: no series for pod %s/%s", rule.SeriesQuery, w.namespace, w.pod))
		}
	}

	// One pod per request, as an HPA's describe or a single-pod read.
	for _, w := range autoscalingWants {
		q, err := rule.Query(autoscaling.PodQuery(series, w.namespace, w.pod))
		if err != nil {
			return append(wrong, err.Error())
		}
		wrong = append(wrong, checkPodValues(s, q, map[string]float64{w.pod: w.values[name]})...)
	}

	// All the Deployment's pods in one request, as the HPA controller asks.
	var pods []string
	want := map[string]float64{}
	for _, w := range autoscalingWants {
		if w.namespace == llmNamespace {
			pods = append(pods, w.pod)
			want[w.pod] = w.values[name]
		}
	}
	q, err := rule.Query(autoscaling.PodQuery(series, llmNamespace, pods...))
	if err != nil {
		return append(wrong, err.Error())
	}
	return append(wrong, checkPodValues(s, q, want)...)
}

// checkPodValues runs q and wants one sample per pod, labelled with the
// pod only (the adapter maps results back to objects by that label).
func checkPodValues(s *stack, q string, want map[string]float64) []string {
	r, err := s.query(q)
	if err != nil {
		return []string{err.Error()}
	}
	var wrong []string
	got := map[string]float64{}
	for _, smp := range r {
		if len(smp.labels) != 1 || smp.labels["pod"] == "" {
			wrong = append(wrong, fmt.Sprintf("%s: result labels %v, want only pod", q, smp.labels))
		}
		got[smp.labels["pod"]] = smp.value
	}
	if len(got) != len(want) {
		wrong = append(wrong, fmt.Sprintf("%s: %d pods in the result, want %d (%v)", q, len(got), len(want), r))
	}
	for pod, v := range want {
		g, ok := got[pod]
		if !ok {
			wrong = append(wrong, fmt.Sprintf("%s: no value for pod %s", q, pod))
		} else if !near(g, v) {
			wrong = append(wrong, fmt.Sprintf("%s: pod %s = %g, want %g", q, pod, g, v))
		}
	}
	return wrong
}

// checkSingleValue runs q and wants exactly one sample, as KEDA requires.
func checkSingleValue(s *stack, q string, want float64) []string {
	r, err := s.query(q)
	switch {
	case err != nil:
		return []string{err.Error()}
	case len(r) != 1:
		return []string{fmt.Sprintf("%s: %d series, want 1: %v", q, len(r), r)}
	case !near(r[0].value, want):
		return []string{fmt.Sprintf("%s = %g, want %g", q, r[0].value, want)}
	}
	return nil
}

func near(got, want float64) bool {
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

// hpaAverageValue reads the averageValue of hpa.yaml's first Pods metric.
func hpaAverageValue(t *testing.T) float64 {
	t.Helper()
	data, err := autoscaling.Raw(autoscaling.HPAFile)
	if err != nil {
		t.Fatal(err)
	}
	var hpa struct {
		Spec struct {
			Metrics []struct {
				Pods struct {
					Target struct {
						AverageValue string `yaml:"averageValue"`
					} `yaml:"target"`
				} `yaml:"pods"`
			} `yaml:"metrics"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal(data, &hpa); err != nil || len(hpa.Spec.Metrics) == 0 {
		t.Fatalf("hpa.yaml: %v", err)
	}
	q := hpa.Spec.Metrics[0].Pods.Target.AverageValue
	var v float64
	if milli, ok := strings.CutSuffix(q, "m"); ok {
		if _, err := fmt.Sscan(milli, &v); err != nil {
			t.Fatalf("hpa.yaml averageValue %q: %v", q, err)
		}
		return v / 1000
	}
	if _, err := fmt.Sscan(q, &v); err != nil {
		t.Fatalf("hpa.yaml averageValue %q: %v", q, err)
	}
	return v
}

// seriesLabels asks Prometheus' series API, as prometheus-adapter's
// discovery does, for the label sets a series selector matches.
func (s *stack) seriesLabels(match string) ([]map[string]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	params := url.Values{
		"match[]": {match},
		"start":   {fmt.Sprint(time.Now().Add(-5 * time.Minute).Unix())},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.prom+"/api/v1/series", strings.NewReader(params.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string              `json:"status"`
		Error  string              `json:"error"`
		Data   []map[string]string `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding series response: %w", err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("series %q: %s", match, r.Error)
	}
	sort.Slice(r.Data, func(i, j int) bool { return r.Data[i]["pod"] < r.Data[j]["pod"] })
	return r.Data, nil
}
