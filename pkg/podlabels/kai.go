package podlabels

import (
	"cmp"
	"slices"
	"strings"
)

// KAI Scheduler (formerly Run:ai) GPU fractions. For a pod that asks for
// a fraction of a GPU (annotation gpu-fraction or gpu-memory), KAI's
// binder runs a reservation pod that requests one whole nvidia.com/gpu and
// labels it and the fractional pods with the same GPU group; the
// fractional pods request no device, so the kubelet's pod-resources API
// names only the reservation pod as the GPU's holder. The names below are
// those of NVIDIA/KAI-Scheduler at 72de64fc8eca10fa8cca26a20156178f3edbe092:
//
//   - kaiGPUGroupLabel: constants.GPUGroup ("runai-gpu-group") in
//     pkg/common/constants/constants.go; createResourceReservationPod
//     (pkg/binder/binding/resourcereservation/resource_reservation.go) puts
//     it on the reservation pod, updatePodGPUGroup (same file) on a
//     fractional pod asking for one device.
//   - kaiMultiGroupPrefix: constants.MultiGpuGroupLabelPrefix
//     ("runai-gpu-group/"): a pod asking for fractions of several devices
//     (gpu-fraction-num-devices > 1) gets one label
//     "runai-gpu-group/<group>" = "<group>" per device instead
//     (resources.GetMultiFractionGpuGroupLabel, pkg/common/resources/gpu_sharing.go).
//   - kaiReservationContainer: the reservation pod's only container,
//     resourceReservation ("resource-reservation") in
//     resource_reservation.go. The pod's namespace is a binder flag
//     (--resource-reservation-namespace, default kai-resource-reservation,
//     runai-reservation before KAI v0.6.0: CHANGELOG.md), so it is not
//     what tells a reservation pod.
//   - kaiFractionContainerAnnotation: constants.GpuFractionContainerName
//     ("gpu-fraction-container-name"); without it the fraction goes to the
//     pod's first container (GetFractionContainerRef,
//     pkg/binder/common/gpu_access.go), the only container given the GPU
//     (NVIDIA_VISIBLE_DEVICES, GPU_PORTION: the gpusharing binder plugin,
//     pkg/binder/plugins/gpusharing/gpu_sharing.go).
const (
	kaiGPUGroupLabel               = "runai-gpu-group"
	kaiMultiGroupPrefix            = kaiGPUGroupLabel + "/"
	kaiReservationContainer        = "resource-reservation"
	kaiFractionContainerAnnotation = "gpu-fraction-container-name"
)

// kaiRole is what a pod is to KAI Scheduler's GPU sharing.
type kaiRole struct {
	// reserves is the GPU group of a reservation pod, "" for other pods.
	reserves string
	// groups are the GPU groups of a fractional pod, sorted.
	groups []string
	// container is a fractional pod's fraction container.
	container string
}

func (a kaiRole) equal(b kaiRole) bool {
	return a.reserves == b.reserves && a.container == b.container && slices.Equal(a.groups, b.groups)
}

// kaiRoleOf reads a pod's KAI role from its labels, annotations and
// container names.
func kaiRoleOf(pod *apiPod) kaiRole {
	group, grouped := pod.Labels[kaiGPUGroupLabel]
	if grouped && len(pod.Spec.Containers) == 1 && pod.Spec.Containers[0].Name == kaiReservationContainer {
		return kaiRole{reserves: validText(group)}
	}
	var r kaiRole
	if grouped && group != "" {
		r.groups = append(r.groups, validText(group))
	}
	for k, v := range pod.Labels {
		if strings.HasPrefix(k, kaiMultiGroupPrefix) && v != "" {
			r.groups = append(r.groups, validText(v))
		}
	}
	if len(r.groups) == 0 || !kaiActive(pod.Status.Phase) {
		return kaiRole{}
	}
	slices.Sort(r.groups)
	r.groups = slices.Compact(r.groups)
	r.container = pod.Annotations[kaiFractionContainerAnnotation]
	if r.container == "" && len(pod.Spec.Containers) > 0 {
		r.container = pod.Spec.Containers[0].Name
	}
	r.container = validText(r.container)
	return r
}

// kaiActive reports whether a fractional pod in phase uses its group's
// GPU: KAI's binder counts the pods of a group that are Running or Pending
// and deletes the reservation pod when none is (syncForPods in
// resource_reservation.go); a pod that ended keeps its runai-gpu-group
// label (the binder removes it only when a bind is rolled back:
// Binder.Rollback, pkg/binder/binding/binder.go).
func kaiActive(phase string) bool { return phase == "Running" || phase == "Pending" }

// kaiPhase keeps a pod's phase for kaiRoleOf: only of pods in KAI's GPU
// groups.
func kaiPhase(pod *apiPod) string {
	if !hasKAIGroup(pod.Labels) {
		return ""
	}
	return pod.Status.Phase
}

// kaiContainers keeps of a pod's containers the names kaiRoleOf reads:
// the first container's, and the only one's of a reservation pod; none
// for a pod outside KAI's GPU groups.
func kaiContainers(pod *apiPod) []apiContainer {
	if len(pod.Spec.Containers) == 0 || !hasKAIGroup(pod.Labels) {
		return nil
	}
	if len(pod.Spec.Containers) == 1 {
		return []apiContainer{{Name: pod.Spec.Containers[0].Name}}
	}
	// Two kept, so a multi-container pod never reads as a reservation pod.
	return []apiContainer{{Name: pod.Spec.Containers[0].Name}, {Name: pod.Spec.Containers[1].Name}}
}

func hasKAIGroup(labels map[string]string) bool {
	if _, ok := labels[kaiGPUGroupLabel]; ok {
		return true
	}
	for k := range labels {
		if strings.HasPrefix(k, kaiMultiGroupPrefix) {
			return true
		}
	}
	return false
}

// kaiWorkloads returns the fraction containers of the pods of GPU group
// group among pods, sorted by namespace, pod and container.
func kaiWorkloads(group string, pods func(yield func(podKey, kaiRole) bool)) []ContainerRef {
	var out []ContainerRef
	for key, r := range pods {
		if r.container != "" && slices.Contains(r.groups, group) {
			out = append(out, ContainerRef{Namespace: key.namespace, Pod: key.name, Container: r.container})
		}
	}
	slices.SortFunc(out, func(a, b ContainerRef) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.Container, b.Container))
	})
	return out
}

// KAIWorkloads returns, when namespace/pod is a KAI Scheduler reservation
// pod on this node, the fraction container of each pod of its GPU group
// on this node (sorted): the containers that use the GPU the kubelet
// reports the reservation pod holding. It returns nil for any other pod,
// and for a reservation pod whose group has no pod here (the fractional
// pods are gone, or not yet listed). The answer may change whenever
// Version does. One scan of this node's pods for a reservation pod; the
// join calls it only when the kubelet's table or Version moved.
func (s *Store) KAIWorkloads(namespace, pod string) []ContainerRef {
	s.mu.RLock()
	defer s.mu.RUnlock()
	group := s.pods[podKey{namespace, pod}].info.kai.reserves
	if group == "" {
		return nil
	}
	return kaiWorkloads(group, func(yield func(podKey, kaiRole) bool) {
		for k, e := range s.pods {
			if !yield(k, e.info.kai) {
				return
			}
		}
	})
}
