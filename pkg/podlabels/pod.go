package podlabels

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpu-exporter/gpu-exporter/pkg/kubejson"
)

// apiPod is the part of a core/v1 Pod the Store reads, decoded from the
// API server's JSON; every other field of the object is skipped while
// decoding. It replaces k8s.io/api/core/v1's Pod, whose package (the
// types, conversions and generated protobuf code of every core resource)
// was the largest left in the binary, and the binary's mapped pages are
// most of the exporter's resident memory (docs/PERFORMANCE.md).
//
// The JSON names are those of the v1 Pod (k8s.io/api/core/v1/types.go:
// Pod.spec, PodSpec.nodeName, Pod.status, PodStatus.containerStatuses,
// initContainerStatuses, ephemeralContainerStatuses; ContainerStatus.name
// and containerID). The whole ObjectMeta is kept while decoding: the
// informer keys objects by namespace/name through it, and the reflector
// reads resourceVersion and, on a watch-list stream, the bookmark's
// k8s.io/initial-events-end annotation from it; slimPod then drops what
// nothing reads.
type apiPod struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   apiPodSpec   `json:"spec"`
	Status apiPodStatus `json:"status"`
}

// apiPodSpec is the part of a PodSpec the Store reads.
type apiPodSpec struct {
	NodeName string `json:"nodeName,omitempty"`
	// Containers are read for their names only: KAI Scheduler's fraction
	// container is the first unless an annotation names another (kai.go);
	// HAMi's and Volcano's allocation annotations list containers by
	// position (vgpu.go), init containers first.
	Containers     []apiContainer `json:"containers,omitempty"`
	InitContainers []apiContainer `json:"initContainers,omitempty"`
}

// apiContainer is the part of a Container the Store reads.
type apiContainer struct {
	Name string `json:"name"`
}

// apiPodStatus is the part of a PodStatus LookupContainer and kaiRoleOf
// read.
type apiPodStatus struct {
	// Phase is read for KAI Scheduler's fractional pods only (kai.go).
	Phase                      string               `json:"phase,omitempty"`
	ContainerStatuses          []apiContainerStatus `json:"containerStatuses,omitempty"`
	InitContainerStatuses      []apiContainerStatus `json:"initContainerStatuses,omitempty"`
	EphemeralContainerStatuses []apiContainerStatus `json:"ephemeralContainerStatuses,omitempty"`
}

// apiContainerStatus is the part of a ContainerStatus LookupContainer
// reads.
type apiContainerStatus struct {
	Name        string `json:"name"`
	ContainerID string `json:"containerID,omitempty"`
}

// apiPodList is a v1 PodList of apiPods.
type apiPodList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []apiPod `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (p *apiPod) DeepCopyObject() runtime.Object {
	if p == nil {
		return nil
	}
	return p.deepCopy()
}

func (p *apiPod) deepCopy() *apiPod {
	out := &apiPod{TypeMeta: p.TypeMeta, Spec: p.Spec}
	if p.Spec.Containers != nil {
		out.Spec.Containers = append(make([]apiContainer, 0, len(p.Spec.Containers)), p.Spec.Containers...)
	}
	if p.Spec.InitContainers != nil {
		out.Spec.InitContainers = append(make([]apiContainer, 0, len(p.Spec.InitContainers)), p.Spec.InitContainers...)
	}
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status = apiPodStatus{
		ContainerStatuses:          copyStatuses(p.Status.ContainerStatuses),
		InitContainerStatuses:      copyStatuses(p.Status.InitContainerStatuses),
		EphemeralContainerStatuses: copyStatuses(p.Status.EphemeralContainerStatuses),
	}
	return out
}

// copyStatuses copies a status list; nil stays nil.
func copyStatuses(in []apiContainerStatus) []apiContainerStatus {
	if in == nil {
		return nil
	}
	return append(make([]apiContainerStatus, 0, len(in)), in...)
}

// DeepCopyObject implements runtime.Object.
func (l *apiPodList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &apiPodList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]apiPod, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].deepCopy()
		}
	}
	return out
}

// newPodScheme returns a scheme that decodes v1 Pod and PodList into
// apiPod and apiPodList, with the meta/v1 types a client of the core
// group needs (list options as query parameters, watch events, Status
// errors), as core/v1's AddToScheme registers them.
func newPodScheme() *runtime.Scheme {
	return kubejson.Scheme(schema.GroupVersion{Version: "v1"}, "Pod", &apiPod{}, &apiPodList{})
}
