package main

import (
	"maps"
	"net/http"
	"slices"
	"testing"
)

// TestKAIDemoShowsWorkloadPods: `make demo SCENARIO=kai` attributes the
// GPU KAI Scheduler's reservation pod holds to its group's fractional
// containers, shared, and leaves a lone reservation pod the holder of its
// GPU (issue 36's acceptance, through the simulated kubelet and API), and
// exports the memory share KAI gave each fractional container.
func TestKAIDemoShowsWorkloadPods(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	stderr, stop := startExporter(t, "--source=sim", "--sim.scenario=kai", "--web.listen-address="+addr, "--collect.interval=5s")
	waitFor(t, "http://"+addr+"/readyz", http.StatusOK)
	fams, _ := scrape(t, "http://"+addr+"/metrics")
	holders := map[string][]string{}
	for _, m := range fams["gpu_pod_allocation_info"].GetMetric() {
		l := labels(m)
		holders[l["gpu"]] = append(holders[l["gpu"]], l["namespace"]+"/"+l["pod"]+"/"+l["container"]+" shared="+l["shared"])
	}
	for gpu, want := range map[string][]string{
		"0": {"ml/frac-train/train shared=true", "research/frac-notebook/notebook shared=true"},
		"1": {"kai-resource-reservation/gpu-reservation-sim-node-p4m9z/resource-reservation shared=false"},
	} {
		got := holders[gpu]
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("GPU %s held by %v, want %v; log:\n%s", gpu, got, want, stderr.String())
		}
	}
	// What KAI gave each fractional container of GPU 0's 81920 MiB
	// (GPU_PORTION in their processes' environment), beside what they use.
	limits := map[string]float64{}
	for _, m := range fams["gpu_container_memory_limit_bytes"].GetMetric() {
		if l := labels(m); l["mechanism"] == "kai" && l["gpu"] == "0" {
			limits[l["pod"]] = m.GetGauge().GetValue()
		}
	}
	if want := map[string]float64{"frac-train": 0.5 * 81920 << 20, "frac-notebook": 0.25 * 81920 << 20}; !maps.Equal(limits, want) {
		t.Errorf("kai memory limits %v, want %v", limits, want)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
