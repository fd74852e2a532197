package exposition

import (
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// gpu_workload_info has one series per pod holding a GPU whose workload is
// known, however many GPUs and containers the pod holds them with, in
// namespace and pod order; queue and cluster_queue only when known; none
// in dcgm naming, and no workload label on any GPU series.
func TestWorkloadInfo(t *testing.T) {
	t.Parallel()
	s := testSample(t, 3, []fields.Field{mustField(t, "DCGM_FI_DEV_GPU_UTIL")})
	deploy := Workload{Kind: "Deployment", Name: "llm"}
	cron := Workload{Kind: "CronJob", Name: "nightly", Queue: "team-a", ClusterQueue: "gpu-pool"}
	holdings := []Holding{
		{Entity: 0, Holder: &Holder{Namespace: "ml", Pod: "serve", Container: "main", PodUID: "uid-s", Workload: deploy}},
		{Entity: 0, Holder: &Holder{Namespace: "ml", Pod: "serve", Container: "sidecar", PodUID: "uid-s", Workload: deploy}, Shared: true},
		{Entity: 1, Holder: &Holder{Namespace: "batch", Pod: "nightly-1", Container: "main", Workload: cron}},
		{Entity: 2, Holder: &Holder{Namespace: "ml", Pod: "serve", Container: "main", PodUID: "uid-s", Workload: deploy}},
		{Entity: 2, Holder: &Holder{Namespace: "ml", Pod: "unknown", Container: "main"}, Shared: true},
		{Entity: 2, Holder: &Holder{HPCJob: "4711", Workload: deploy}, Shared: true},
	}
	prom := NewRenderer(Options{Naming: NamingPrometheus}).Render(Input{Sample: s, Holdings: holdings})
	got := series(t, prom, "gpu_workload_info{")
	want := []string{
		`gpu_workload_info{namespace="batch",pod="nightly-1",workload_kind="CronJob",workload_name="nightly",queue="team-a",cluster_queue="gpu-pool"} 1`,
		`gpu_workload_info{namespace="ml",pod="serve",pod_uid="uid-s",workload_kind="Deployment",workload_name="llm"} 1`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("gpu_workload_info:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range strings.Split(string(prom.Text), "\n") {
		if strings.Contains(l, "workload_kind=") && !strings.HasPrefix(l, "gpu_workload_info{") {
			t.Errorf("a series besides gpu_workload_info carries the workload: %s", l)
		}
	}
	dcgm := NewRenderer(Options{Naming: NamingDCGM}).Render(Input{Sample: s, Holdings: holdings})
	if strings.Contains(string(dcgm.Text), "workload") {
		t.Errorf("dcgm naming wrote a workload:\n%s", dcgm.Text)
	}
	none := NewRenderer(Options{Naming: NamingPrometheus}).Render(Input{Sample: s, Holdings: []Holding{
		{Entity: 0, Holder: &Holder{Namespace: "ml", Pod: "serve", Container: "main"}}}})
	if strings.Contains(string(none.Text), "gpu_workload_info") {
		t.Errorf("gpu_workload_info without any known workload (not even its header expected):\n%s", none.Text)
	}
}
