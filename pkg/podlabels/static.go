package podlabels

import "k8s.io/apimachinery/pkg/runtime/schema"

// StaticPod is a pod given as data rather than watched: the simulator's
// scenario pods.
type StaticPod struct {
	Namespace, Name string
	// Owner is its controlling owner reference (APIVersion "apps/v1",
	// Kind "ReplicaSet", ...); nil for a pod of its own.
	Owner *OwnerRef
	// Labels are its labels; the workload resolution reads the Kueue,
	// JobSet and LeaderWorkerSet ones (workload.go), KAIWorkloads KAI
	// Scheduler's GPU groups (kai.go).
	Labels map[string]string
	// Annotations and Containers (names, in spec order) are read for KAI
	// Scheduler's fraction container, and with InitContainers for HAMi's
	// and Volcano's allocation annotations (vgpu.go).
	Annotations    map[string]string
	Containers     []string
	InitContainers []string
}

// OwnerRef is an owner reference as the API writes it.
type OwnerRef struct {
	APIVersion, Kind, Name string
}

// StaticObject is a ReplicaSet, Job, JobSet or Kueue LocalQueue given as
// data: the owners a StaticPod's workload is resolved through.
type StaticObject struct {
	// Kind is ReplicaSet, Job, JobSet or LocalQueue.
	Kind            string
	Namespace, Name string
	Owner           *OwnerRef
	Labels          map[string]string
	// ClusterQueue is a LocalQueue's spec.clusterQueue.
	ClusterQueue string
}

// Static answers Lookup for fixed pods, their workloads resolved once
// through fixed owners by the Store's own resolution (resolveWorkload), an
// owner missing from the objects taken as gone (404). It serves the
// simulator, whose cluster has no API server. Version never moves.
type Static struct {
	pods map[podKey]Info
}

// NewStatic resolves the workloads of pods through objs.
func NewStatic(pods []StaticPod, objs []StaticObject) *Static {
	resources := map[string]*resource{"ReplicaSet": &replicaSets, "Job": &jobs, "JobSet": &jobSets, "LocalQueue": &localQueues}
	byKey := map[ownerKey]ownerObject{}
	for _, o := range objs {
		r := resources[o.Kind]
		if r == nil {
			continue
		}
		obj := ownerObject{queue: o.Labels[queueLabel], jobSet: o.Labels[jobSetLabel], clusterQueue: o.ClusterQueue}
		obj.owner, obj.controlled = o.Owner.owner()
		byKey[ownerKey{r, o.Namespace, o.Name}] = obj
	}
	lookup := func(r *resource, namespace, name string) (ownerObject, lookupState) {
		if obj, ok := byKey[ownerKey{r, namespace, name}]; ok {
			return obj, stateFound
		}
		return ownerObject{}, stateNotFound
	}
	s := &Static{pods: make(map[podKey]Info, len(pods))}
	for _, p := range pods {
		seed := seedLabels(p.Labels)
		seed.owner, seed.controlled = p.Owner.owner()
		pod := p.apiPod()
		info := Info{seed: seed, kai: kaiRoleOf(pod), vgpu: vgpuOf(pod)}
		info.Workload, _ = resolveWorkload(p.Namespace, p.Name, seed, lookup)
		s.pods[podKey{p.Namespace, p.Name}] = info
	}
	return s
}

// Lookup returns the Info of the pod namespace/pod.
func (s *Static) Lookup(namespace, pod string) (Info, bool) {
	info, ok := s.pods[podKey{namespace, pod}]
	return info, ok
}

// KAIWorkloads is Store.KAIWorkloads over the fixed pods.
func (s *Static) KAIWorkloads(namespace, pod string) []ContainerRef {
	group := s.pods[podKey{namespace, pod}].kai.reserves
	if group == "" {
		return nil
	}
	return kaiWorkloads(group, func(yield func(podKey, kaiRole) bool) {
		for k, info := range s.pods {
			if !yield(k, info.kai) {
				return
			}
		}
	})
}

// apiPod is p as the API server would send it, for kaiRoleOf: running,
// as the simulator's pods are.
func (p *StaticPod) apiPod() *apiPod {
	pod := &apiPod{Status: apiPodStatus{Phase: "Running"}}
	pod.Namespace, pod.Name, pod.Labels, pod.Annotations = p.Namespace, p.Name, p.Labels, p.Annotations
	for _, c := range p.Containers {
		pod.Spec.Containers = append(pod.Spec.Containers, apiContainer{Name: c})
	}
	for _, c := range p.InitContainers {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, apiContainer{Name: c})
	}
	return pod
}

// Version is always 0: the answers never change.
func (s *Static) Version() uint64 { return 0 }

func (r *OwnerRef) owner() (Owner, bool) {
	if r == nil {
		return Owner{}, false
	}
	gv, err := schema.ParseGroupVersion(r.APIVersion)
	if err != nil {
		return Owner{}, false
	}
	return Owner{Group: gv.Group, Kind: r.Kind, Name: r.Name}, true
}

// Simulated is a source that stands in for the Kubernetes API for its own
// pods (the simulator).
type Simulated interface {
	SimulatedPods() *Static
}
