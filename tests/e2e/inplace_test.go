package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
)

// inPlaceExporterPod are the target labels prometheus-operator's
// Kubernetes service discovery gives the exporter's pod.
var inPlaceExporterPod = map[string]string{"namespace": "gpu-operator", "container": "exporter"}

// startInPlace renders the chart with gpuOperator.inPlace, checks that its
// ServiceMonitor scrapes as the GPU Operator's does for its dcgm-exporter
// (jobLabel app, honorLabels false), and starts an exporter per simulator
// scenario with --naming=dcgm and a real Prometheus configured from the
// ServiceMonitor, one target per exporter pod (gpu-exporter-<scenario>).
func startInPlace(t *testing.T, scenarios ...string) *stack {
	t.Helper()
	exporter := requireExporter(t)
	promBin := tool(t, "prometheus")
	dir := t.TempDir()
	s := &stack{started: time.Now()}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range s.procs {
				t.Logf("===== %s output =====\n%s", p.name, p.out.String())
			}
		}
	})
	values, err := yaml.Marshal(map[string]any{"gpuOperator": map[string]any{"inPlace": true}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "values.yaml"), values)
	cs := renderChartScrape(t, filepath.Join(dir, "values.yaml"))
	if cs.job != "nvidia-dcgm-exporter" || cs.honorLabels {
		t.Fatalf("rendered ServiceMonitor: job %q, honorLabels %v; want the Operator's nvidia-dcgm-exporter, false", cs.job, cs.honorLabels)
	}

	var statics []any
	for _, scenario := range scenarios {
		addr := freeAddr(t)
		p := startProcess(t, s, "exporter "+scenario, dir, exporter, "--source=sim", "--sim.scenario="+scenario, "--naming=dcgm",
			"--web.listen-address="+addr, "--collect.interval=1s")
		waitHTTP(t, p, "http://"+addr+"/readyz", 30*time.Second)
		labels := map[string]string{"pod": "gpu-exporter-" + scenario}
		for k, v := range inPlaceExporterPod {
			labels[k] = v
		}
		statics = append(statics, map[string]any{"targets": []string{addr}, "labels": labels})
	}
	job := map[string]any{
		"job_name":       cs.job,
		"honor_labels":   cs.honorLabels,
		"static_configs": statics,
	}
	if len(cs.relabelConfigs) > 0 {
		job["relabel_configs"] = cs.relabelConfigs
	}
	startPrometheus(t, s, dir, promBin, map[string]any{
		"global":         map[string]any{"scrape_interval": "1s", "scrape_timeout": "1s"},
		"scrape_configs": []any{job},
	})
	return s
}

// TestInPlaceOfOperatorDCGMExporter: with gpuOperator.inPlace a real
// Prometheus configured from the chart's ServiceMonitor stores what
// queries written against dcgm-exporter read: DCGM_FI_* series under
// job="nvidia-dcgm-exporter", the GPU's holder in
// exported_namespace/exported_pod, the target's pod in pod.
func TestInPlaceOfOperatorDCGMExporter(t *testing.T) {
	s := startInPlace(t, "demo")
	// GPU 5 of the demo node is held by notebook-0.
	want := map[string]int{
		`DCGM_FI_DEV_GPU_UTIL{job="nvidia-dcgm-exporter", gpu="5", exported_pod="notebook-0", exported_namespace!="", pod="gpu-exporter-demo", namespace="gpu-operator"}`: 1,
		`DCGM_FI_DEV_GPU_UTIL{job="nvidia-dcgm-exporter", pod="notebook-0"}`:                                                                                              0,
		`DCGM_FI_DEV_GPU_TEMP{job="nvidia-dcgm-exporter"}`:                                                                                                                8,
	}
	poll.Problems(t, 30*time.Second, time.Second, func() []string {
		var problems []string
		for q, n := range want {
			r, err := s.query(q)
			switch {
			case err != nil:
				problems = append(problems, err.Error())
			case len(r) != n:
				problems = append(problems, fmt.Sprintf("%s: %d series, want %d: %v", q, len(r), n, r))
			}
		}
		return problems
	})
}
