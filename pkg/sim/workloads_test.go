package sim

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
)

const workloadScenario = `
gpus:
  - {model: a, memory_mib: 100}
  - {model: a, memory_mib: 100}
pods:
  - namespace: ml
    name: serve-0
    owner: {kind: ReplicaSet, name: serve-abc}
    containers: [{name: main, devices: [{resource: nvidia.com/gpu, gpus: [0]}]}]
  - namespace: ml
    name: batch-0
    owner: {kind: Job, name: batch-1}
    containers: [{name: main, devices: [{resource: nvidia.com/gpu, gpus: [1]}]}]
  - namespace: ml
    name: lws-0
    owner: {kind: StatefulSet, name: vllm}
    labels: {leaderworkerset.sigs.k8s.io/name: vllm, kueue.x-k8s.io/queue-name: gone-queue}
    containers: [{name: main}]
  - namespace: ml
    name: trainer-0
    owner: {kind: Job, name: pretrain-workers-0}
    labels: {jobset.sigs.k8s.io/jobset-name: pretrain}
    containers: [{name: main}]
  - namespace: ml
    name: custom-0
    owner: {apiVersion: ray.io/v1, kind: RayCluster, name: ray}
    containers: [{name: main}]
objects:
  - {kind: ReplicaSet, namespace: ml, name: serve-abc, owner: {kind: Deployment, name: serve}}
  - {kind: Job, namespace: ml, name: batch-1, owner: {kind: CronJob, name: batch}, labels: {kueue.x-k8s.io/queue-name: q}}
  - {kind: LocalQueue, namespace: ml, name: q, clusterQueue: cq}
  - {kind: JobSet, namespace: ml, name: pretrain, labels: {kueue.x-k8s.io/queue-name: q}}
`

// A scenario's owners and LocalQueues resolve its pods' workloads as the
// exporter resolves them from the API server; an object missing from the
// scenario is one the API server no longer has.
func TestSimulatedPods(t *testing.T) {
	t.Parallel()
	scn, err := Parse("workloads.yaml", []byte(workloadScenario))
	if err != nil {
		t.Fatal(err)
	}
	pods := New(scn).SimulatedPods()
	if pods == nil {
		t.Fatal("no simulated pods for a scenario with owners")
	}
	want := map[string]podlabels.Workload{
		"serve-0":  {Kind: "Deployment", Name: "serve"},
		"batch-0":  {Kind: "CronJob", Name: "batch", Queue: "q", ClusterQueue: "cq"},
		"lws-0":    {Kind: "LeaderWorkerSet", Name: "vllm", Queue: "gone-queue"},
		"custom-0": {Kind: "RayCluster", Name: "ray"},
		// The queue only the JobSet carries, as Kueue's JobSet integration has it.
		"trainer-0": {Kind: "JobSet", Name: "pretrain", Queue: "q", ClusterQueue: "cq"},
	}
	for pod, w := range want {
		info, ok := pods.Lookup("ml", pod)
		if !ok || info.Workload != w {
			t.Errorf("%s: workload %+v (known %v), want %+v", pod, info.Workload, ok, w)
		}
		if info.UID != "" || len(info.Labels) != 0 {
			t.Errorf("%s: the simulated API adds pod_uid or pod labels: %+v", pod, info)
		}
	}
	plain, err := Parse("plain.yaml", []byte("gpus:\n  - {model: a, memory_mib: 100}\npods:\n  - {namespace: a, name: b, containers: [{name: c}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if New(plain).SimulatedPods() != nil {
		t.Error("a scenario without owners states workloads")
	}
}

func TestWorkloadScenarioErrors(t *testing.T) {
	t.Parallel()
	head := "gpus:\n  - {model: a, memory_mib: 100}\n"
	for _, tc := range []struct{ name, in, want string }{
		{"unknown kind without apiVersion", head + "pods:\n  - {namespace: a, name: b, owner: {kind: RayCluster, name: r}, containers: [{name: c}]}\n", `owner kind "RayCluster" needs an apiVersion`},
		{"owner without name", head + "pods:\n  - {namespace: a, name: b, owner: {kind: Job}, containers: [{name: c}]}\n", "name"},
		{"object of a kind not read", head + "objects:\n  - {kind: Deployment, namespace: a, name: d}\n", `kind "Deployment": want ReplicaSet, Job, JobSet or LocalQueue`},
		{"label not a string", head + "pods:\n  - {namespace: a, name: b, labels: {x: [1]}, containers: [{name: c}]}\n", "labels.x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("bad.yaml", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// The kai scenario's pods tell KAI Scheduler's GPU groups as the API
// server would: its reservation pod on GPU 0 gives way to its group's
// fraction containers (the second pod's through its annotation), and the
// one on GPU 1, whose group has no pod left, to nobody.
func TestSimulatedPodsKAI(t *testing.T) {
	t.Parallel()
	pods := New(builtin(t, "kai")).SimulatedPods()
	want := []podlabels.ContainerRef{{Namespace: "ml", Pod: "frac-train", Container: "train"},
		{Namespace: "research", Pod: "frac-notebook", Container: "notebook"}}
	if got := pods.KAIWorkloads("kai-resource-reservation", "gpu-reservation-sim-node-x7k2q"); !slices.Equal(got, want) {
		t.Errorf("KAIWorkloads(GPU 0's reservation pod) = %v, want %v", got, want)
	}
	if got := pods.KAIWorkloads("kai-resource-reservation", "gpu-reservation-sim-node-p4m9z"); got != nil {
		t.Errorf("KAIWorkloads(GPU 1's reservation pod) = %v, want nil", got)
	}
}
