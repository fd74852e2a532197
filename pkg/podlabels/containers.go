package podlabels

import (
	"strings"
)

// ContainerRef names a container of a pod on this node.
type ContainerRef struct {
	Namespace, Pod, Container string
}

// podByUID is what LookupContainer knows of one pod.
type podByUID struct {
	key podKey
	// containers maps container runtime ids (without the runtime's
	// "containerd://" prefix) to container names.
	containers map[string]string
}

// LookupContainer names the pod with UID podUID and its container with
// runtime id containerID, as the pod's status reports them
// (status.containerStatuses[].containerID and the same for init and
// ephemeral containers). ok is false when the informer does not know the
// pod; Container is empty when the pod is known but no status lists the
// id yet (a container just started). Process accounting calls it, on the
// collection path: one map read under a read lock.
func (s *Store) LookupContainer(podUID, containerID string) (ContainerRef, bool) {
	s.mu.RLock()
	p, ok := s.byUID[podUID]
	var name string
	if ok {
		name = p.containers[containerID]
	}
	s.mu.RUnlock()
	if !ok {
		return ContainerRef{}, false
	}
	return ContainerRef{Namespace: p.key.namespace, Pod: p.key.name, Container: name}, true
}

// containerIDs maps the runtime ids of pod's containers to their names.
func containerIDs(pod *apiPod) map[string]string {
	n := len(pod.Status.ContainerStatuses) + len(pod.Status.InitContainerStatuses) + len(pod.Status.EphemeralContainerStatuses)
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for _, list := range [][]apiContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, c := range list {
			if id := RuntimeID(c.ContainerID); id != "" {
				m[id] = validText(c.Name)
			}
		}
	}
	return m
}

// configMirror is the annotation the kubelet puts on the mirror pod of a
// static pod, with the static pod's UID (kubelet types
// ConfigMirrorAnnotationKey; the UID is the hash of the manifest, also in
// kubernetes.io/config.hash). The static pod runs, and its cgroup is
// named, under that UID; the API shows the mirror pod's own.
const configMirror = "kubernetes.io/config.mirror"

// staticPodUID returns the UID a mirror pod's static pod runs under, or "".
func staticPodUID(pod *apiPod) string {
	if uid := pod.Annotations[configMirror]; uid != string(pod.UID) {
		return uid
	}
	return ""
}

// keptAnnotations keeps, of a pod's annotations, those the Store reads:
// the one staticPodUID reads and KAI Scheduler's fraction container
// (kai.go).
func keptAnnotations(pod *apiPod) map[string]string {
	var kept map[string]string
	for _, k := range [...]string{configMirror, kaiFractionContainerAnnotation, hamiAllocated, volcanoAllocated} {
		if v, ok := pod.Annotations[k]; ok {
			if kept == nil {
				kept = map[string]string{}
			}
			kept[k] = v
		}
	}
	return kept
}

// RuntimeID strips the runtime's scheme from a status containerID:
// "containerd://<id>", "cri-o://<id>" and "docker://<id>" all give <id>
// (the API reference of ContainerStatus: "Container's ID in the format
// '<type>://<container_id>'").
func RuntimeID(statusID string) string {
	if _, id, ok := strings.Cut(statusID, "://"); ok {
		return id
	}
	return statusID
}

// slimStatuses keeps the name and id of each container status, all that
// LookupContainer reads.
func slimStatuses(in []apiContainerStatus) []apiContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]apiContainerStatus, len(in))
	for i, c := range in {
		out[i] = apiContainerStatus{Name: c.Name, ContainerID: c.ContainerID}
	}
	return out
}
