package podlabels

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Keys of the labels the workload resolution reads, as their projects
// define them:
//   - queueLabel names the Kueue LocalQueue of a workload; Kueue reads it
//     from the Job (batch/Job integration) and from pods (pod and pod-group
//     integrations: Deployment, StatefulSet, LeaderWorkerSet): QueueLabel in
//     kubernetes-sigs/kueue pkg/controller/constants/constants.go
//     (@003ea965c23c4b254ed1c528e67cbf603539368a).
//   - jobSetLabel names the JobSet of a child Job and of its pods:
//     JobSetNameKey in kubernetes-sigs/jobset api/jobset/v1alpha2/jobset_types.go
//     (@0336a8fd9fd3ba7a8e5d3e16462138b746e01ec8); labelAndAnnotateObject in
//     pkg/controllers/jobset_controller.go sets it on "child Jobs and pods".
//     A JobSet's Kueue queue is the queueLabel on the JobSet itself (Kueue's
//     site/content/en/docs/tasks/run/jobsets.md, "Queue selection",
//     @ff69552e79ad21652c36caa97038382e55625cf7); the JobSet controller
//     builds each child Job's labels from its replicated Job's template
//     plus its own keys (constructJob, labelAndAnnotateObject,
//     @08dfbdfd682714a9ab929633eca8dc95315187e7), never the JobSet's
//     labels, so the Jobs and pods carry the queue only if a user put it in
//     the template.
//   - localQueueLabel and clusterQueueLabel name the LocalQueue and the
//     ClusterQueue that admitted a pod's workload; Kueue sets them on the
//     pod templates of the workloads it admits, a JobSet's included, from
//     v0.17 on (feature AssignQueueLabelsForPods, beta and on by default):
//     LocalQueueLabel and ClusterQueueLabel in pkg/constants/constants.go,
//     assignQueueLabels in pkg/controller/jobframework/reconciler.go
//     (@ff69552e79ad21652c36caa97038382e55625cf7; absent at v0.16.0). The
//     ClusterQueue label is left out when its name is no valid label value.
//   - lwsLabel names the LeaderWorkerSet of its pods and StatefulSets:
//     SetNameLabelKey in kubernetes-sigs/lws api/leaderworkerset/v1/leaderworkerset_types.go
//     (@024af0845195be26fb4a0847c37d7209849d69da).
const (
	queueLabel        = "kueue.x-k8s.io/queue-name"
	localQueueLabel   = "kueue.x-k8s.io/local-queue-name"
	clusterQueueLabel = "kueue.x-k8s.io/cluster-queue-name"
	jobSetLabel       = "jobset.sigs.k8s.io/jobset-name"
	lwsLabel          = "leaderworkerset.sigs.k8s.io/name"
)

// Kinds a Workload reports besides an owner's own kind, as Kubernetes
// spells them.
const (
	KindPod             = "Pod"
	KindReplicaSet      = "ReplicaSet"
	KindDeployment      = "Deployment"
	KindJob             = "Job"
	KindCronJob         = "CronJob"
	KindJobSet          = "JobSet"
	KindLeaderWorkerSet = "LeaderWorkerSet"
)

// Workload is the workload a pod belongs to: the top of its owner chain
// (Pod→ReplicaSet→Deployment, Pod→Job→CronJob, a JobSet's or
// LeaderWorkerSet's pods by their label, a StatefulSet's or DaemonSet's
// pods by their owner; a pod without owner, or a static pod, is its own
// workload), and the
// Kueue LocalQueue (Queue) and ClusterQueue that admitted it, when Kueue
// manages it. Kind is empty when the workload is unknown.
type Workload struct {
	Kind, Name          string
	Queue, ClusterQueue string
}

// Owner is an object's controlling owner reference (metadata.ownerReferences
// with controller: true): the group of its apiVersion, its kind and name.
type Owner struct {
	Group, Kind, Name string
}

// workloadSeed is what a pod tells of its workload by itself: its
// controlling owner and the labels above. Resolving it may need the
// owner's own object (resolveWorkload).
type workloadSeed struct {
	owner                            Owner
	queue, clusterQueue, jobSet, lws string
	controlled, enabled              bool
}

// controllerOf returns the controlling owner reference in meta, if any.
func controllerOf(meta *metav1.ObjectMeta) (Owner, bool) {
	ref := metav1.GetControllerOfNoCopy(meta)
	if ref == nil {
		return Owner{}, false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return Owner{}, false
	}
	return Owner{Group: gv.Group, Kind: validText(ref.Kind), Name: validText(ref.Name)}, true
}

// seedOf reads a pod's workload seed.
func seedOf(pod *apiPod) workloadSeed {
	s := seedLabels(pod.Labels)
	s.owner, s.controlled = controllerOf(&pod.ObjectMeta)
	return s
}

// seedLabels reads the labels of a workload seed: the queue is the one the
// user set (queueLabel), else the one Kueue set (localQueueLabel).
func seedLabels(labels map[string]string) workloadSeed {
	s := workloadSeed{
		enabled:      true,
		queue:        validText(labels[queueLabel]),
		clusterQueue: validText(labels[clusterQueueLabel]),
		jobSet:       validText(labels[jobSetLabel]),
		lws:          validText(labels[lwsLabel]),
	}
	if s.queue == "" {
		s.queue = validText(labels[localQueueLabel])
	}
	return s
}

// ownerObject is what the resolution reads of an owner fetched from the
// API server: a ReplicaSet's or Job's controlling owner and the labels
// above, or a LocalQueue's spec.clusterQueue.
type ownerObject struct {
	owner        Owner
	controlled   bool
	queue        string
	jobSet       string
	clusterQueue string
}

// lookupState says what the API server answered for an owner.
type lookupState uint8

const (
	statePending   lookupState = iota // not asked yet, or asked and not answered
	stateFound                        // the object
	stateNotFound                     // 404: gone (the pod outlived it, or a race)
	stateForbidden                    // 403: the exporter may not read this resource
	stateFailed                       // another error, retried later
)

// lookupFunc returns the object resource/namespace/name and what the API
// server answered for it.
type lookupFunc func(r *resource, namespace, name string) (ownerObject, lookupState)

// resolveWorkload resolves the workload of the pod named pod in namespace
// from its seed, reading the owners it needs through lookup. It returns
// false while an owner it needs is not known yet, or may not be read
// (403): then the pod has no workload series until it is, rather than a
// series that changes identity (or a wrong one) a moment later.
//
// A ReplicaSet's controlling owner is its workload (a Deployment, or
// whatever else controls it); a ReplicaSet without one, or gone, is its
// own. A Job's is too (a CronJob), and a Job labelled with a JobSet is the
// JobSet's; the Job's queue label is the workload's queue when the pod has
// none (Kueue's batch/Job integration reads it from the Job, and the pods
// of a Job need not carry it). A JobSet's queue, when neither the pod nor
// its Job carries one, is the JobSet's own label; a JobSet that may not be
// read (403) or is gone leaves the queue out. Any other controlling owner
// (StatefulSet, DaemonSet, a custom controller) is the workload as it
// stands: the exporter reads no other kind.
//
// With a queue, the ClusterQueue is the pod's clusterQueueLabel, else the
// LocalQueue's spec.clusterQueue; that is left out when the LocalQueue may
// not be read or is gone, so that missing RBAC on Kueue costs the
// cluster_queue label only.
func resolveWorkload(namespace, pod string, seed workloadSeed, lookup lookupFunc) (Workload, bool) {
	w := Workload{Queue: seed.queue}
	jobSet := false // the workload is a JobSet named by its label
	switch {
	case seed.jobSet != "":
		w.Kind, w.Name, jobSet = KindJobSet, seed.jobSet, true
	case seed.lws != "":
		w.Kind, w.Name = KindLeaderWorkerSet, seed.lws
	case !seed.controlled, seed.owner.Group == "" && seed.owner.Kind == "Node":
		// A mirror pod (static pod) is controlled by its Node: the kubelet
		// sets that owner reference (kubernetes/kubernetes
		// pkg/kubelet/pod/mirror_client.go, CreateMirrorPod, "mirror pods are
		// required to have an owner reference to the owning node"). It is its
		// own workload.
		w.Kind, w.Name = KindPod, pod
	case seed.owner.Group == replicaSets.group && seed.owner.Kind == KindReplicaSet:
		rs, state := lookup(&replicaSets, namespace, seed.owner.Name)
		if !settled(state) {
			return Workload{}, false
		}
		w.Kind, w.Name = KindReplicaSet, seed.owner.Name
		if state == stateFound && rs.controlled {
			w.Kind, w.Name = rs.owner.Kind, rs.owner.Name
		}
	case seed.owner.Group == jobs.group && seed.owner.Kind == KindJob:
		job, state := lookup(&jobs, namespace, seed.owner.Name)
		if !settled(state) {
			return Workload{}, false
		}
		w.Kind, w.Name = KindJob, seed.owner.Name
		if state == stateFound {
			switch {
			case job.jobSet != "":
				w.Kind, w.Name, jobSet = KindJobSet, job.jobSet, true
			case job.controlled:
				w.Kind, w.Name = job.owner.Kind, job.owner.Name
			}
			if w.Queue == "" {
				w.Queue = job.queue
			}
		}
	default:
		w.Kind, w.Name = seed.owner.Kind, seed.owner.Name
	}
	if jobSet && w.Queue == "" {
		// Kueue reads a JobSet's queue from the JobSet's own label, and the
		// JobSet controller copies none of the JobSet's labels to its Jobs
		// and pods (jobSetLabel's sources above), so neither need carry it.
		js, state := lookup(&jobSets, namespace, w.Name)
		switch state {
		case statePending, stateFailed:
			return Workload{}, false
		case stateFound:
			w.Queue = js.queue
		}
	}
	if w.Queue == "" {
		return w, true
	}
	if seed.clusterQueue != "" {
		// Kueue named the ClusterQueue that admitted the pod.
		w.ClusterQueue = seed.clusterQueue
		return w, true
	}
	lq, state := lookup(&localQueues, namespace, w.Queue)
	switch state {
	case statePending, stateFailed:
		return Workload{}, false
	case stateFound:
		w.ClusterQueue = lq.clusterQueue
	}
	return w, true
}

// settled reports whether an owner's state lets the resolution go on: it
// is known, or known to be gone.
func settled(s lookupState) bool { return s == stateFound || s == stateNotFound }
