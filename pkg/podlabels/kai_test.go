package podlabels

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
)

// kaiGroup is a GPU group id as KAI's scheduler makes them: a UUID
// (uuid.NewUUID in NVIDIA/KAI-Scheduler pkg/scheduler/gpu_sharing/gpuSharing.go
// @72de64fc).
const kaiGroup = "0f4c6e3a-6b7d-11f0-9d2e-0242ac120002"

// kaiReservationPod is the pod KAI's binder creates to hold a GPU for a
// group: createResourceReservationPod in
// pkg/binder/binding/resourcereservation/resource_reservation.go
// @72de64fc (name gpu-reservation-<node>-<5 random>, the app and
// runai-gpu-group labels, karpenter's do-not-disrupt annotation, one
// container "resource-reservation" with one nvidia.com/gpu), once its
// resource-reservation binary has written the GPU's UUID
// (pkg/resourcereservation/patcher/pod_patcher.go).
func kaiReservationPod(group, node string) *corev1.Pod {
	p := newPod("kai-resource-reservation", "gpu-reservation-"+node+"-x7k2q", node,
		map[string]string{"app": "kai-resource-reservation", "runai-gpu-group": group})
	p.Annotations = map[string]string{
		"karpenter.sh/do-not-disrupt":  "true",
		"run.ai/reserve_for_gpu_index": "GPU-5e9b3f0c-1a2b-4c3d-8e9f-0a1b2c3d4e5f",
	}
	gpu := corev1.ResourceList{"nvidia.com/gpu": apiresource.MustParse("1")}
	p.Spec.Containers = []corev1.Container{{Name: "resource-reservation", Image: "ghcr.io/nvidia/kai-scheduler/resource-reservation",
		Resources: corev1.ResourceRequirements{Limits: gpu, Requests: gpu}}}
	return p
}

// kaiFractionPod is a pod as docs/gpu-sharing/gpu-sharing.yaml submits it
// (annotation gpu-fraction "0.5", container gpu-workload), once the binder
// labelled it with its group (updatePodGPUGroup). containers are its
// containers' names; annotations are added to gpu-fraction.
func kaiFractionPod(ns, name, node, group string, containers []string, annotations map[string]string) *corev1.Pod {
	p := newPod(ns, name, node, map[string]string{"kai.scheduler/queue": "default-queue", "runai-gpu-group": group})
	p.Annotations = map[string]string{"gpu-fraction": "0.5"}
	for k, v := range annotations {
		p.Annotations[k] = v
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "nvidia/cuda:13.0.2-base-ubi8"})
	}
	p.Status.Phase = corev1.PodRunning
	return p
}

func TestKAIRoleOf(t *testing.T) {
	t.Parallel()
	multi := kaiFractionPod("ml", "multi", thisNode, "", []string{"main"}, map[string]string{"gpu-fraction-num-devices": "2"})
	// A pod asking for fractions of several devices gets one
	// runai-gpu-group/<group> label per group and not the plain one
	// (updatePodGPUGroup, GetMultiFractionGpuGroupLabel).
	delete(multi.Labels, "runai-gpu-group")
	multi.Labels["runai-gpu-group/g2"] = "g2"
	multi.Labels["runai-gpu-group/g1"] = "g1"
	twoContainers := kaiReservationPod("g1", thisNode)
	twoContainers.Spec.Containers = append(twoContainers.Spec.Containers, corev1.Container{Name: "sidecar"})
	twoContainers.Status.Phase = corev1.PodRunning
	pending := kaiFractionPod("ml", "a", thisNode, kaiGroup, []string{"main"}, nil)
	pending.Status.Phase = corev1.PodPending
	// KAI counts a group's Running and Pending pods only (syncForPods in
	// resource_reservation.go); an ended pod keeps its label.
	succeeded := kaiFractionPod("ml", "a", thisNode, kaiGroup, []string{"main"}, nil)
	succeeded.Status.Phase = corev1.PodSucceeded
	failed := kaiFractionPod("ml", "a", thisNode, kaiGroup, []string{"main"}, nil)
	failed.Status.Phase = corev1.PodFailed
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want kaiRole
	}{
		{"reservation pod", kaiReservationPod(kaiGroup, thisNode), kaiRole{reserves: kaiGroup}},
		{"fractional pod: its first container", kaiFractionPod("ml", "a", thisNode, kaiGroup, []string{"gpu-workload", "sidecar"}, nil),
			kaiRole{groups: []string{kaiGroup}, container: "gpu-workload"}},
		{"fractional pod: the container the annotation names",
			kaiFractionPod("ml", "a", thisNode, kaiGroup, []string{"sidecar", "gpu-workload"}, map[string]string{"gpu-fraction-container-name": "gpu-workload"}),
			kaiRole{groups: []string{kaiGroup}, container: "gpu-workload"}},
		{"multi-fraction pod", multi, kaiRole{groups: []string{"g1", "g2"}, container: "main"}},
		{"a grouped pod with a second container is no reservation pod", twoContainers,
			kaiRole{groups: []string{"g1"}, container: "resource-reservation"}},
		{"pending fractional pod", pending, kaiRole{groups: []string{kaiGroup}, container: "main"}},
		{"succeeded fractional pod", succeeded, kaiRole{}},
		{"failed fractional pod", failed, kaiRole{}},
		{"no group", newPod("ml", "plain", thisNode, map[string]string{"app": "kai-resource-reservation"}), kaiRole{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Through the JSON decoding and the informer's slimming, as the Store sees it.
			slim, err := slimPod(toAPIPod(tc.pod))
			if err != nil {
				t.Fatal(err)
			}
			if got := kaiRoleOf(slim.(*apiPod)); !got.equal(tc.want) {
				t.Errorf("kaiRoleOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestStoreKAIWorkloads follows a GPU group on the informer: the
// reservation pod answers with the fraction containers of its group's
// pods on this node, and follows them as they come and go.
func TestStoreKAIWorkloads(t *testing.T) {
	t.Parallel()
	a := newAPIServer(t,
		kaiReservationPod(kaiGroup, thisNode),
		kaiFractionPod("ml", "frac-a", thisNode, kaiGroup, []string{"main"}, nil),
		kaiFractionPod("research", "frac-b", thisNode, kaiGroup, []string{"sidecar", "nb"}, map[string]string{"gpu-fraction-container-name": "nb"}),
		kaiFractionPod("ml", "other-group", thisNode, "another-group", []string{"main"}, nil),
		succeededFractionPod("ml", "done", kaiGroup),
		kaiFractionPod("ml", "elsewhere", otherNode, kaiGroup, []string{"main"}, nil),
		newPod("ml", "plain", thisNode, nil),
	)
	s, _ := startStore(t, a, Config{Node: thisNode, Containers: true})
	res := "gpu-reservation-" + thisNode + "-x7k2q"
	want := []ContainerRef{{"ml", "frac-a", "main"}, {"research", "frac-b", "nb"}}
	if got := s.KAIWorkloads("kai-resource-reservation", res); !slices.Equal(got, want) {
		t.Errorf("KAIWorkloads(reservation) = %v, want %v", got, want)
	}
	for _, p := range [][2]string{{"ml", "frac-a"}, {"ml", "plain"}, {"ml", "unknown"}} {
		if got := s.KAIWorkloads(p[0], p[1]); got != nil {
			t.Errorf("KAIWorkloads(%s/%s) = %v, want nil: not a reservation pod", p[0], p[1], got)
		}
	}

	v := s.Version()
	a.delete(t, "ml", "frac-a")
	a.delete(t, "research", "frac-b")
	poll.Until(t, "the fractional pods are gone", func() bool {
		return s.KAIWorkloads("kai-resource-reservation", res) == nil
	})
	if s.Version() == v {
		t.Error("Version did not move while the group's pods left")
	}
	a.create(t, kaiFractionPod("ml", "frac-c", thisNode, kaiGroup, []string{"main"}, nil))
	poll.Until(t, "a new fractional pod joins the group", func() bool {
		return slices.Equal(s.KAIWorkloads("kai-resource-reservation", res), []ContainerRef{{"ml", "frac-c", "main"}})
	})
	a.update(t, succeededFractionPod("ml", "frac-c", kaiGroup))
	poll.Until(t, "a fractional pod that ended leaves the group", func() bool {
		return s.KAIWorkloads("kai-resource-reservation", res) == nil
	})
}

// succeededFractionPod is a fractional pod of group that ended: it keeps
// its runai-gpu-group label and uses no GPU.
func succeededFractionPod(ns, name, group string) *corev1.Pod {
	p := kaiFractionPod(ns, name, thisNode, group, []string{"main"}, nil)
	p.Status.Phase = corev1.PodSucceeded
	return p
}

func TestStaticKAIWorkloads(t *testing.T) {
	t.Parallel()
	s := NewStatic([]StaticPod{
		{Namespace: "kai-resource-reservation", Name: "gpu-reservation-n-abcde", Labels: map[string]string{"runai-gpu-group": "g"},
			Containers: []string{"resource-reservation"}},
		{Namespace: "ml", Name: "b", Labels: map[string]string{"runai-gpu-group": "g"}, Containers: []string{"main"}},
		{Namespace: "ml", Name: "a", Labels: map[string]string{"runai-gpu-group": "g"}, Containers: []string{"side", "gpu"},
			Annotations: map[string]string{"gpu-fraction-container-name": "gpu"}},
	}, nil)
	want := []ContainerRef{{"ml", "a", "gpu"}, {"ml", "b", "main"}}
	if got := s.KAIWorkloads("kai-resource-reservation", "gpu-reservation-n-abcde"); !slices.Equal(got, want) {
		t.Errorf("KAIWorkloads = %v, want %v", got, want)
	}
	if got := s.KAIWorkloads("ml", "a"); got != nil {
		t.Errorf("KAIWorkloads(fractional pod) = %v, want nil", got)
	}
}
