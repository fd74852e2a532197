package main

import (
	"net/http"
	"slices"
	"testing"
)

// TestHAMiDemoPlacesByAnnotation: `make demo SCENARIO=hami` labels the GPUs
// HAMi's scheduler gave each container (the pod's
// hami.io/vgpu-devices-allocated annotation), not those the kubelet's
// "GPU-<uuid>-<n>" slots name (all GPU 0's), and the process accounting of
// the same containers lands on the same GPUs.
func TestHAMiDemoPlacesByAnnotation(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	stderr, stop := startExporter(t, "--source=sim", "--sim.scenario=hami", "--web.listen-address="+addr,
		"--collect.interval=5s", "--collect.processes=container")
	waitFor(t, "http://"+addr+"/readyz", http.StatusOK)
	fams, _ := scrape(t, "http://"+addr+"/metrics")
	for _, family := range []string{"gpu_pod_allocation_info", "gpu_container_processes"} {
		holders := map[string][]string{}
		for _, m := range fams[family].GetMetric() {
			l := labels(m)
			holders[l["gpu"]] = append(holders[l["gpu"]], l["namespace"]+"/"+l["pod"]+"/"+l["container"])
		}
		for gpu, want := range map[string][]string{
			"0": {"ml/infer/server"},
			"1": {"ml/train-0/main"},
			"2": {"ml/train-0/main", "research/lab-0/notebook"},
		} {
			got := holders[gpu]
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: GPU %s names %v, want %v; log:\n%s", family, gpu, got, want, stderr.String())
			}
		}
	}
	if code := stop(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
