package main

import (
	"net/http"
	"testing"
)

// TestSplitGPUInstanceHoldersThroughTheBinary: on a node whose GPU instance
// is split into two compute instances (the simulator's
// mig-compute-instances scenario, built from a real A100 capture), a pod
// on each compute instance gets the instance's series and nothing is
// counted unmatched (issue 30's acceptance, through the kubelet API).
func TestSplitGPUInstanceHoldersThroughTheBinary(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	stderr, stop := startExporter(t, "--source=sim", "--sim.scenario=mig-compute-instances", "--web.listen-address="+addr, "--collect.interval=5s")
	waitFor(t, "http://"+addr+"/readyz", http.StatusOK)
	fams, _ := scrape(t, "http://"+addr+"/metrics")
	pods := map[string]bool{}
	for _, m := range fams["gpu_memory_used_bytes"].GetMetric() {
		if l := labels(m); l["gpu_instance"] == "2" {
			pods[l["pod"]] = true
		}
	}
	if !pods["small-ci-0"] || !pods["large-ci-1"] {
		t.Errorf("GPU instance 2's memory series name pods %v, want both compute instances' pods; log:\n%s", pods, stderr.String())
	}
	for _, m := range fams["gpu_exporter_podresources_unmatched_devices"].GetMetric() {
		if v := m.GetGauge().GetValue(); v != 0 {
			t.Errorf("unmatched devices %v = %v, want none", labels(m), v)
		}
	}
	if n := len(fams["gpu_mig_device_info"].GetMetric()); n != 3 {
		t.Errorf("%d gpu_mig_device_info series, want 3 (one per compute instance)", n)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}
