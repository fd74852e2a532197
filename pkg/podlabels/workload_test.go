package podlabels

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
)

// controlledBy returns the owner reference a controller sets on what it
// creates (metav1.NewControllerRef: controller and blockOwnerDeletion true).
func controlledBy(apiVersion, kind, name string) []metav1.OwnerReference {
	yes := true
	return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: &yes, BlockOwnerDeletion: &yes}}
}

// fakeOwners answers lookups from a table; missing keys are pending.
type fakeOwners map[string]struct {
	obj   ownerObject
	state lookupState
}

func (f fakeOwners) lookup(r *resource, namespace, name string) (ownerObject, lookupState) {
	e, ok := f[r.name+"/"+namespace+"/"+name]
	if !ok {
		return ownerObject{}, statePending
	}
	return e.obj, e.state
}

func TestResolveWorkload(t *testing.T) {
	t.Parallel()
	deployment := ownerObject{owner: Owner{Group: "apps", Kind: KindDeployment, Name: "llm"}, controlled: true}
	cronJob := ownerObject{owner: Owner{Group: "batch", Kind: KindCronJob, Name: "nightly"}, controlled: true, queue: "team-a"}
	rsOwner := Owner{Group: "apps", Kind: KindReplicaSet, Name: "llm-5d8f7"}
	jobOwner := Owner{Group: "batch", Kind: KindJob, Name: "nightly-2891"}
	owners := fakeOwners{
		"replicasets/ml/llm-5d8f7":     {deployment, stateFound},
		"replicasets/ml/orphan-rs":     {ownerObject{}, stateFound},
		"replicasets/ml/gone-rs":       {ownerObject{}, stateNotFound},
		"replicasets/locked/llm-5d8f7": {ownerObject{}, stateForbidden},
		"replicasets/ml/flaky-rs":      {ownerObject{}, stateFailed},
		"jobs/ml/nightly-2891":         {cronJob, stateFound},
		"jobs/ml/js-job":               {ownerObject{jobSet: "pretrain", owner: Owner{Group: "jobset.x-k8s.io", Kind: "JobSet", Name: "pretrain"}, controlled: true}, stateFound},
		"localqueues/ml/team-a":        {ownerObject{clusterQueue: "gpu-pool"}, stateFound},
		"localqueues/ml/team-b":        {ownerObject{}, stateForbidden},
		"localqueues/ml/team-c":        {ownerObject{}, stateNotFound},
		// A JobSet carries the queue label Kueue reads; its Jobs and pods
		// need not (the JobSet controller copies none of its labels to them).
		"jobsets/ml/pretrain":     {ownerObject{queue: "team-a"}, stateFound},
		"jobsets/ml/unqueued":     {ownerObject{}, stateFound},
		"jobsets/ml/gone":         {ownerObject{}, stateNotFound},
		"jobsets/locked/locked":   {ownerObject{}, stateForbidden},
		"jobsets/ml/flaky":        {ownerObject{}, stateFailed},
		"jobs/ml/js-job-unqueued": {ownerObject{jobSet: "unqueued", owner: Owner{Group: "jobset.x-k8s.io", Kind: "JobSet", Name: "unqueued"}, controlled: true}, stateFound},
	}
	cases := []struct {
		name string
		ns   string
		seed workloadSeed
		want Workload
		ok   bool
	}{
		{"bare pod", "ml", workloadSeed{}, Workload{Kind: KindPod, Name: "p"}, true},
		{"static pod", "ml", workloadSeed{owner: Owner{Kind: "Node", Name: "gpu-node-a"}, controlled: true}, Workload{Kind: KindPod, Name: "p"}, true},
		{"deployment", "ml", workloadSeed{owner: rsOwner, controlled: true}, Workload{Kind: KindDeployment, Name: "llm"}, true},
		{"replicaset without owner", "ml", workloadSeed{owner: Owner{Group: "apps", Kind: KindReplicaSet, Name: "orphan-rs"}, controlled: true}, Workload{Kind: KindReplicaSet, Name: "orphan-rs"}, true},
		{"replicaset gone", "ml", workloadSeed{owner: Owner{Group: "apps", Kind: KindReplicaSet, Name: "gone-rs"}, controlled: true}, Workload{Kind: KindReplicaSet, Name: "gone-rs"}, true},
		{"replicaset forbidden", "locked", workloadSeed{owner: rsOwner, controlled: true}, Workload{}, false},
		{"replicaset failing", "ml", workloadSeed{owner: Owner{Group: "apps", Kind: KindReplicaSet, Name: "flaky-rs"}, controlled: true}, Workload{}, false},
		{"replicaset pending", "other", workloadSeed{owner: rsOwner, controlled: true}, Workload{}, false},
		{"a ReplicaSet of another group is not read", "ml", workloadSeed{owner: Owner{Group: "example.com", Kind: KindReplicaSet, Name: "x"}, controlled: true}, Workload{Kind: KindReplicaSet, Name: "x"}, true},
		{"cronjob, queue from the job", "ml", workloadSeed{owner: jobOwner, controlled: true}, Workload{Kind: KindCronJob, Name: "nightly", Queue: "team-a", ClusterQueue: "gpu-pool"}, true},
		{"the pod's queue wins", "ml", workloadSeed{owner: jobOwner, controlled: true, queue: "team-c"}, Workload{Kind: KindCronJob, Name: "nightly", Queue: "team-c"}, true},
		{"jobset label", "ml", workloadSeed{owner: jobOwner, controlled: true, jobSet: "pretrain", queue: "team-a"}, Workload{Kind: KindJobSet, Name: "pretrain", Queue: "team-a", ClusterQueue: "gpu-pool"}, true},
		{"jobset label, queue on the JobSet only", "ml", workloadSeed{owner: jobOwner, controlled: true, jobSet: "pretrain"}, Workload{Kind: KindJobSet, Name: "pretrain", Queue: "team-a", ClusterQueue: "gpu-pool"}, true},
		{"job of a jobset, queue on the JobSet only", "ml", workloadSeed{owner: Owner{Group: "batch", Kind: KindJob, Name: "js-job"}, controlled: true}, Workload{Kind: KindJobSet, Name: "pretrain", Queue: "team-a", ClusterQueue: "gpu-pool"}, true},
		{"jobset without queue", "ml", workloadSeed{owner: Owner{Group: "batch", Kind: KindJob, Name: "js-job-unqueued"}, controlled: true}, Workload{Kind: KindJobSet, Name: "unqueued"}, true},
		{"jobset gone", "ml", workloadSeed{owner: jobOwner, controlled: true, jobSet: "gone"}, Workload{Kind: KindJobSet, Name: "gone"}, true},
		{"jobset forbidden: no queue", "locked", workloadSeed{owner: jobOwner, controlled: true, jobSet: "locked"}, Workload{Kind: KindJobSet, Name: "locked"}, true},
		{"jobset failing", "ml", workloadSeed{owner: jobOwner, controlled: true, jobSet: "flaky"}, Workload{}, false},
		{"jobset pending", "ml", workloadSeed{owner: jobOwner, controlled: true, jobSet: "new"}, Workload{}, false},
		{"kueue's pod queue labels: no lookup", "other", workloadSeed{owner: jobOwner, controlled: true, jobSet: "pretrain", queue: "team-a", clusterQueue: "gpu-pool"}, Workload{Kind: KindJobSet, Name: "pretrain", Queue: "team-a", ClusterQueue: "gpu-pool"}, true},
		{"leaderworkerset label", "ml", workloadSeed{owner: Owner{Group: "apps", Kind: "StatefulSet", Name: "vllm-0"}, controlled: true, lws: "vllm"}, Workload{Kind: KindLeaderWorkerSet, Name: "vllm"}, true},
		{"statefulset", "ml", workloadSeed{owner: Owner{Group: "apps", Kind: "StatefulSet", Name: "db"}, controlled: true}, Workload{Kind: "StatefulSet", Name: "db"}, true},
		{"daemonset", "ml", workloadSeed{owner: Owner{Group: "apps", Kind: "DaemonSet", Name: "agent"}, controlled: true}, Workload{Kind: "DaemonSet", Name: "agent"}, true},
		{"localqueue forbidden: no cluster queue", "ml", workloadSeed{queue: "team-b"}, Workload{Kind: KindPod, Name: "p", Queue: "team-b"}, true},
		{"localqueue pending", "ml", workloadSeed{queue: "team-z"}, Workload{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := resolveWorkload(tc.ns, "p", tc.seed, owners.lookup)
			if got != tc.want || ok != tc.ok {
				t.Errorf("resolveWorkload = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// kubeAPI serves GETs of namespaced objects as the API server does: the
// object's JSON, or a metav1.Status for a missing object (404) or a
// resource the caller may not read (403, the message RBAC's authorizer
// writes). With served set, a path whose /apis/<group>/<version>/ prefix
// it lacks answers as kube-apiserver does for a version no CRD serves:
// apiextensions-apiserver's crdHandler hands a request for a version the
// CRD does not serve to its delegate (pkg/apiserver/customresource_handler.go,
// HasServedCRDVersion, k8s.io/apiextensions-apiserver@v0.37.2), which ends
// in k8s.io/apiserver's notfoundhandler: http.NotFound, a plain-text 404
// naming no object (pkg/util/notfoundhandler/not_found_handler.go @v0.37.2).
type kubeAPI struct {
	mu        sync.Mutex
	objects   map[string]any // path -> object
	forbidden map[string]bool
	served    map[string]bool // "/apis/<group>/<version>/"; nil: all
	gets      map[string]int
	malformed []string // paths not of a namespaced object
}

func (k *kubeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gets[r.URL.Path]++
	w.Header().Set("Content-Type", "application/json")
	parts := strings.Split(r.URL.Path, "/") // /apis/<group>/<version>/namespaces/<ns>/<resource>/<name>
	if len(parts) != 8 || parts[1] != "apis" || parts[4] != "namespaces" || slices.Contains(parts[1:], "") {
		k.malformed = append(k.malformed, r.URL.Path)
	}
	status := func(code int, reason metav1.StatusReason, msg string) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
			Status: metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code)})
	}
	if k.served != nil && (len(parts) < 4 || !k.served["/apis/"+parts[2]+"/"+parts[3]+"/"]) {
		http.NotFound(w, r)
		return
	}
	if len(parts) == 8 && k.forbidden[parts[6]] {
		status(http.StatusForbidden, metav1.StatusReasonForbidden, fmt.Sprintf(`%s.%s %q is forbidden: User "system:serviceaccount:gpu:exporter" cannot get resource %q in API group %q in the namespace %q`,
			parts[6], parts[2], parts[7], parts[6], parts[2], parts[5]))
		return
	}
	obj, ok := k.objects[r.URL.Path]
	if !ok && len(parts) == 8 {
		// apierrors.NewNotFound, as the registry answers a missing object:
		// details name the object and its resource.
		st := apierrors.NewNotFound(schema.GroupResource{Group: parts[2], Resource: parts[6]}, parts[7]).ErrStatus
		st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(st)
		return
	}
	if !ok {
		status(http.StatusNotFound, metav1.StatusReasonNotFound, "not found")
		return
	}
	_ = json.NewEncoder(w).Encode(obj)
}

func (k *kubeAPI) count(path string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.gets[path]
}

// localQueueIn is a LocalQueue as Kueue's API serves it in version: kind,
// metadata and spec.clusterQueue (kubernetes-sigs/kueue apis/kueue/v1beta1/localqueue_types.go
// @01ed66fdddfa757b45d1e9126c34218183ca80fd; v1beta2 keeps the field,
// apis/kueue/v1beta2/localqueue_types.go @ff69552e79ad21652c36caa97038382e55625cf7),
// with the status fields a live object has.
func localQueueIn(version, ns, name, clusterQueue string) map[string]any {
	return map[string]any{
		"apiVersion": "kueue.x-k8s.io/" + version, "kind": "LocalQueue",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "uid-lq"},
		"spec":     map[string]any{"clusterQueue": clusterQueue, "stopPolicy": "None"},
		"status":   map[string]any{"pendingWorkloads": 0, "admittedWorkloads": 1, "reservingWorkloads": 1},
	}
}

// jobSet is a JobSet labelled with a Kueue queue as Kueue's JobSet guide
// has users write it (kubernetes-sigs/kueue site/content/en/docs/tasks/run/jobsets.md
// @ff69552e79ad21652c36caa97038382e55625cf7): apiVersion and kind from
// kubernetes-sigs/jobset's CRD (@08dfbdfd682714a9ab929633eca8dc95315187e7).
func jobSet(ns, name, queue string) map[string]any {
	return map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "uid-js", "labels": map[string]any{queueLabel: queue}},
		"spec":     map[string]any{"replicatedJobs": []any{map[string]any{"name": "workers", "replicas": 1}}},
	}
}

// workloadStore is a Store resolving workloads against api, its owner
// lookups running.
func workloadStore(t *testing.T, api http.Handler, reg prometheus.Registerer, logs *logBuffer) *Store {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	if k, ok := api.(*kubeAPI); ok {
		t.Cleanup(func() {
			k.mu.Lock()
			defer k.mu.Unlock()
			if len(k.malformed) > 0 {
				t.Errorf("GETs of paths that name no namespaced object: %q", k.malformed)
			}
		})
	}
	s, err := New(fakePods(newAPIServer(t).client), Config{Node: thisNode, Workloads: true}, newLogger(logs), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	g, err := newRESTGetter(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s.owners.get = g
	done := make(chan struct{})
	ctx := t.Context()
	go func() { defer close(done); s.owners.run(ctx) }()
	t.Cleanup(func() { <-done })
	return s
}

// TestWorkloadsOverHTTP resolves owner chains against an API server
// serving the objects Kubernetes' own types encode, through the real REST
// client: a Deployment's ReplicaSet, a CronJob's Job labelled with a Kueue
// queue, its LocalQueue; and a forbidden resource.
func TestWorkloadsOverHTTP(t *testing.T) {
	t.Parallel()
	rs := &appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "llm-5d8f7", OwnerReferences: controlledBy("apps/v1", "Deployment", "llm")}}
	job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "nightly-2891", Labels: map[string]string{queueLabel: "team-a"},
			OwnerReferences: controlledBy("batch/v1", "CronJob", "nightly")}}
	api := &kubeAPI{gets: map[string]int{}, forbidden: map[string]bool{}, objects: map[string]any{
		"/apis/apps/v1/namespaces/ml/replicasets/llm-5d8f7":             rs,
		"/apis/batch/v1/namespaces/ml/jobs/nightly-2891":                job,
		"/apis/kueue.x-k8s.io/v1beta2/namespaces/ml/localqueues/team-a": localQueueIn("v1beta2", "ml", "team-a", "gpu-pool"),
		"/apis/jobset.x-k8s.io/v1alpha2/namespaces/ml/jobsets/pretrain": jobSet("ml", "pretrain", "team-a"),
	}}
	reg := prometheus.NewRegistry()
	logs := &logBuffer{}
	s := workloadStore(t, api, reg, logs)

	// A JobSet's worker: labelled with its JobSet, not with the queue,
	// which only the JobSet carries.
	worker := newPod("ml", "pretrain-workers-0-0-abc", thisNode, map[string]string{jobSetLabel: "pretrain"})
	worker.OwnerReferences = controlledBy("batch/v1", "Job", "pretrain-workers-0")
	s.upsert(toAPIPod(worker))

	serve := newPod("ml", "llm-5d8f7-abcde", thisNode, nil)
	serve.OwnerReferences = controlledBy("apps/v1", "ReplicaSet", "llm-5d8f7")
	batch := newPod("ml", "nightly-2891-xyz", thisNode, map[string]string{"batch.kubernetes.io/job-name": "nightly-2891"})
	batch.OwnerReferences = controlledBy("batch/v1", "Job", "nightly-2891")
	s.upsert(toAPIPod(serve))
	s.upsert(toAPIPod(batch))

	v0 := s.Version()
	want := map[string]Workload{
		"llm-5d8f7-abcde":          {Kind: KindDeployment, Name: "llm"},
		"nightly-2891-xyz":         {Kind: KindCronJob, Name: "nightly", Queue: "team-a", ClusterQueue: "gpu-pool"},
		"pretrain-workers-0-0-abc": {Kind: KindJobSet, Name: "pretrain", Queue: "team-a", ClusterQueue: "gpu-pool"},
	}
	poll.Problems(t, 10*time.Second, 10*time.Millisecond, func() []string {
		var problems []string
		for pod, w := range want {
			if info, _ := s.Lookup("ml", pod); info.Workload != w {
				problems = append(problems, fmt.Sprintf("%s: workload %+v, want %+v", pod, info.Workload, w))
			}
		}
		return problems
	})
	if s.Version() == v0 {
		t.Error("Version did not move when the owners arrived")
	}
	// Cached: more lookups make no more GETs.
	for range 10 {
		s.Lookup("ml", "llm-5d8f7-abcde")
	}
	if n := api.count("/apis/apps/v1/namespaces/ml/replicasets/llm-5d8f7"); n != 1 {
		t.Errorf("the ReplicaSet was fetched %d times, want once", n)
	}
	if got := testutil.ToFloat64(s.m.ownerLookups.WithLabelValues("replicasets", "found")); got != 1 {
		t.Errorf("lookups found = %v, want 1", got)
	}
}

// TestWorkloadsForbidden: without get on replicasets, pods of
// ReplicaSets have no workload, the rest do (without localqueues or
// jobsets, less their cluster queue or queue); each refusal is logged once
// and stated by a self-metric.
func TestWorkloadsForbidden(t *testing.T) {
	t.Parallel()
	api := &kubeAPI{gets: map[string]int{}, forbidden: map[string]bool{"replicasets": true, "localqueues": true, "jobsets": true}, objects: map[string]any{}}
	reg := prometheus.NewRegistry()
	logs := &logBuffer{}
	s := workloadStore(t, api, reg, logs)
	for i := range 3 {
		p := newPod("ml", fmt.Sprintf("llm-%d", i), thisNode, nil)
		p.OwnerReferences = controlledBy("apps/v1", "ReplicaSet", fmt.Sprintf("llm-rs-%d", i))
		s.upsert(toAPIPod(p))
	}
	queued := newPod("ml", "queued", thisNode, map[string]string{queueLabel: "team-a"})
	s.upsert(toAPIPod(queued))
	worker := newPod("ml", "worker", thisNode, map[string]string{jobSetLabel: "pretrain"})
	worker.OwnerReferences = controlledBy("batch/v1", "Job", "pretrain-workers-0")
	s.upsert(toAPIPod(worker))

	poll.Until(t, "the three ReplicaSets asked for", func() bool {
		for i := range 3 {
			s.Lookup("ml", fmt.Sprintf("llm-%d", i))
		}
		s.Lookup("ml", "queued")
		s.Lookup("ml", "worker")
		return testutil.ToFloat64(s.m.ownerLookups.WithLabelValues("replicasets", "forbidden")) == 3 &&
			testutil.ToFloat64(s.m.ownerLookups.WithLabelValues("localqueues", "forbidden")) == 1 &&
			testutil.ToFloat64(s.m.ownerLookups.WithLabelValues("jobsets", "forbidden")) == 1
	})
	for i := range 3 {
		if info, _ := s.Lookup("ml", fmt.Sprintf("llm-%d", i)); info.Workload != (Workload{}) {
			t.Errorf("pod of a forbidden ReplicaSet has workload %+v, want none", info.Workload)
		}
	}
	if info, _ := s.Lookup("ml", "queued"); info.Workload != (Workload{Kind: KindPod, Name: "queued", Queue: "team-a"}) {
		t.Errorf("pod with a forbidden LocalQueue: workload %+v, want its queue without cluster queue", info.Workload)
	}
	if info, _ := s.Lookup("ml", "worker"); info.Workload != (Workload{Kind: KindJobSet, Name: "pretrain"}) {
		t.Errorf("pod of a forbidden JobSet: workload %+v, want its JobSet without queue", info.Workload)
	}
	if n := logs.count("reading pod owners is forbidden"); n != 3 {
		t.Errorf("forbidden logged %d times, want once per resource (3):\n%s", n, logs)
	}
	if got := testutil.ToFloat64(s.m.ownerForbidden.WithLabelValues("replicasets")); got != 1 {
		t.Errorf("gpu_exporter_workload_owner_forbidden{resource=replicasets} = %v, want 1", got)
	}
}

// TestLocalQueueVersions: the ClusterQueue is read from clusters whose
// Kueue serves LocalQueues in v1beta1 only (before v0.15), in both (v0.15
// on) and in v1beta2 only (once v1beta1 is dropped), each LocalQueue in
// one GET once the served version is known.
func TestLocalQueueVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		served []string
	}{
		{"v1beta1 only", []string{"v1beta1"}},
		{"both", []string{"v1beta1", "v1beta2"}},
		{"v1beta2 only", []string{"v1beta2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			api := &kubeAPI{gets: map[string]int{}, forbidden: map[string]bool{}, objects: map[string]any{},
				served: map[string]bool{}}
			for _, v := range tc.served {
				api.served["/apis/kueue.x-k8s.io/"+v+"/"] = true
				for _, q := range []string{"team-a", "team-b"} {
					api.objects["/apis/kueue.x-k8s.io/"+v+"/namespaces/ml/localqueues/"+q] = localQueueIn(v, "ml", q, "pool-"+q)
				}
			}
			s := workloadStore(t, api, prometheus.NewRegistry(), &logBuffer{})
			s.upsert(toAPIPod(newPod("ml", "a", thisNode, map[string]string{queueLabel: "team-a"})))
			want := Workload{Kind: KindPod, Name: "a", Queue: "team-a", ClusterQueue: "pool-team-a"}
			poll.Until(t, "pod a's cluster queue", func() bool { info, _ := s.Lookup("ml", "a"); return info.Workload == want })
			// The second LocalQueue is asked for in the version that answered.
			s.upsert(toAPIPod(newPod("ml", "b", thisNode, map[string]string{queueLabel: "team-b"})))
			want = Workload{Kind: KindPod, Name: "b", Queue: "team-b", ClusterQueue: "pool-team-b"}
			poll.Until(t, "pod b's cluster queue", func() bool { info, _ := s.Lookup("ml", "b"); return info.Workload == want })
			gets := 0
			for _, v := range []string{"v1beta1", "v1beta2"} {
				gets += api.count("/apis/kueue.x-k8s.io/" + v + "/namespaces/ml/localqueues/team-b")
			}
			if gets != 1 {
				t.Errorf("LocalQueue team-b fetched %d times, want once", gets)
			}
		})
	}
}

// recordingGetter answers every GET 404 naming the object, or, for the
// versions in unserved, as for a path the API server does not serve, and
// records the versions asked.
type recordingGetter struct {
	unserved map[string]bool
	asked    []string
}

func (g *recordingGetter) get(_ context.Context, r *resource, version, _, name string) ([]byte, error) {
	g.asked = append(g.asked, version)
	if g.unserved[version] {
		return nil, apierrors.NewGenericServerResponse(http.StatusNotFound, "GET", schema.GroupResource{}, "", "404 page not found", 0, true)
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: r.group, Resource: r.name}, name)
}

// Regression: a resource without a fallback version was asked for with
// an empty version first (its empty fallback taken for the version that
// answered last), a path the real API server refuses with 403.
func TestGetServedVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		r        *resource
		first    string
		unserved []string
		want     []string
	}{
		{"no fallback", &replicaSets, "", nil, []string{"v1"}},
		{"no fallback, not served", &jobSets, "", []string{"v1alpha2"}, []string{"v1alpha2"}},
		{"served", &localQueues, "", nil, []string{"v1beta2"}},
		{"fallback", &localQueues, "", []string{"v1beta2"}, []string{"v1beta2", "v1beta1"}},
		{"fallback answered last", &localQueues, "v1beta1", []string{"v1beta2"}, []string{"v1beta1"}},
		{"fallback no longer served", &localQueues, "v1beta1", []string{"v1beta1"}, []string{"v1beta1", "v1beta2"}},
	} {
		g := &recordingGetter{unserved: map[string]bool{}}
		for _, v := range tc.unserved {
			g.unserved[v] = true
		}
		_, _, _ = getServed(t.Context(), g, tc.r, tc.first, "ml", "x")
		if !slices.Equal(g.asked, tc.want) {
			t.Errorf("%s: versions asked %q, want %q", tc.name, g.asked, tc.want)
		}
	}
}

// TestLocalQueueMissingIsNotUnserved: a LocalQueue the served version
// lacks is gone (its 404 names it); the other version is not asked.
func TestLocalQueueMissingIsNotUnserved(t *testing.T) {
	t.Parallel()
	api := &kubeAPI{gets: map[string]int{}, forbidden: map[string]bool{}, objects: map[string]any{}, served: map[string]bool{
		"/apis/kueue.x-k8s.io/v1beta1/": true, "/apis/kueue.x-k8s.io/v1beta2/": true}}
	s := workloadStore(t, api, prometheus.NewRegistry(), &logBuffer{})
	s.upsert(toAPIPod(newPod("ml", "a", thisNode, map[string]string{queueLabel: "gone"})))
	want := Workload{Kind: KindPod, Name: "a", Queue: "gone"}
	poll.Until(t, "pod a without cluster queue", func() bool { info, _ := s.Lookup("ml", "a"); return info.Workload == want })
	if n := api.count("/apis/kueue.x-k8s.io/v1beta1/namespaces/ml/localqueues/gone") + api.count("/apis/kueue.x-k8s.io/v1beta2/namespaces/ml/localqueues/gone"); n != 1 {
		t.Errorf("a missing LocalQueue took %d GETs, want 1", n)
	}
}

// TestOwnerCacheBounded: however many owners the pods name, the cache
// holds at most ownerCacheSize, and lookups never wait.
func TestOwnerCacheBounded(t *testing.T) {
	t.Parallel()
	var version atomic.Uint64
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	o := newOwners(nil, nil, m, &version)
	for i := range ownerCacheSize + 100 {
		name := fmt.Sprint("rs-", i)
		o.lookup(&replicaSets, "ml", name)
		if i%2 == 0 { // answered, so evictable
			o.record(ownerKey{&replicaSets, "ml", name}, ownerObject{}, stateNotFound, nil)
		}
	}
	if n := len(o.cache); n > ownerCacheSize {
		t.Errorf("cache holds %d owners, want at most %d", n, ownerCacheSize)
	}
	if n := len(o.queue); n > ownerQueueSize {
		t.Errorf("queue holds %d, want at most %d", n, ownerQueueSize)
	}
}

// TestSeedQueueLabels: the queue is the pod's kueue.x-k8s.io/queue-name,
// else the kueue.x-k8s.io/local-queue-name Kueue (v0.17 on) puts on the
// pods it admits, with kueue.x-k8s.io/cluster-queue-name.
func TestSeedQueueLabels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                string
		labels              map[string]string
		queue, clusterQueue string
	}{
		{"none", nil, "", ""},
		{"user's label", map[string]string{queueLabel: "a"}, "a", ""},
		{"kueue's labels", map[string]string{localQueueLabel: "a", clusterQueueLabel: "cq"}, "a", "cq"},
		{"both: the user's queue", map[string]string{queueLabel: "a", localQueueLabel: "b", clusterQueueLabel: "cq"}, "a", "cq"},
	} {
		pod := &apiPod{}
		pod.Labels = tc.labels
		if s := seedOf(pod); s.queue != tc.queue || s.clusterQueue != tc.clusterQueue {
			t.Errorf("%s: seed queue %q cluster queue %q, want %q %q", tc.name, s.queue, s.clusterQueue, tc.queue, tc.clusterQueue)
		}
	}
}

func TestSlimPodKeepsControllerRef(t *testing.T) {
	t.Parallel()
	full := newPod("ml", "train-0", thisNode, nil)
	no := false
	full.OwnerReferences = append([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "other", Controller: &no}},
		controlledBy("batch/v1", "Job", "train")...)
	got, err := slimPod(toAPIPod(full))
	if err != nil {
		t.Fatal(err)
	}
	slim := got.(*apiPod)
	if len(slim.OwnerReferences) != 1 || slim.OwnerReferences[0].Name != "train" {
		t.Errorf("slimPod kept owner references %+v, want the controller's only", slim.OwnerReferences)
	}
	if s := seedOf(slim); s.owner != (Owner{Group: "batch", Kind: KindJob, Name: "train"}) || !s.controlled {
		t.Errorf("seed of the slim pod = %+v", s)
	}
}

// TestProbeWorkloadAccess: a 404 naming the probed object means get is
// allowed (RBAC is checked before the lookup), 403 forbidden, and a 404
// from the API server's mux (an unserved resource: no JobSet) not served;
// LocalQueues are allowed where Kueue serves v1beta2 only.
func TestProbeWorkloadAccess(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(r.URL.Path, "/")
		status := func(code int, reason metav1.StatusReason, details *metav1.StatusDetails) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
				Status: metav1.StatusFailure, Reason: reason, Code: int32(code), Details: details})
		}
		switch parts[6] {
		case "localqueues": // Kueue serving v1beta2 only
			if parts[3] != "v1beta2" {
				http.NotFound(w, r)
				return
			}
			status(http.StatusNotFound, metav1.StatusReasonNotFound, &metav1.StatusDetails{Name: parts[7], Group: parts[2], Kind: parts[6]})
		case "replicasets": // the API server's answer for a missing object
			status(http.StatusNotFound, metav1.StatusReasonNotFound, &metav1.StatusDetails{Name: parts[7], Group: "apps", Kind: "replicasets"})
		case "jobs":
			status(http.StatusForbidden, metav1.StatusReasonForbidden, &metav1.StatusDetails{Name: parts[7], Group: "batch", Kind: "jobs"})
		default: // the mux's plain 404 for a path nothing serves
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	got, err := ProbeWorkloadAccess(t.Context(), &rest.Config{Host: srv.URL}, "default")
	if err != nil {
		t.Fatal(err)
	}
	want := []Access{
		{Group: "apps", Resource: "replicasets", Allowed: true},
		{Group: "batch", Resource: "jobs", Forbidden: true},
		{Group: "jobset.x-k8s.io", Resource: "jobsets", NotServed: true},
		{Group: "kueue.x-k8s.io", Resource: "localqueues", Allowed: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if g := got[i]; g.Group != want[i].Group || g.Resource != want[i].Resource || g.Allowed != want[i].Allowed ||
			g.Forbidden != want[i].Forbidden || g.NotServed != want[i].NotServed || g.Err != nil {
			t.Errorf("access %d = %+v, want %+v", i, g, want[i])
		}
	}
}

// cancelingGetter fails every GET as a reset stream does: with
// context.Canceled, though the owners' own context is alive.
type cancelingGetter struct{ calls atomic.Int32 }

func (g *cancelingGetter) get(context.Context, *resource, string, string, string) ([]byte, error) {
	g.calls.Add(1)
	return nil, context.Canceled
}

// Regression: a GET failing with context.Canceled while the owners keep
// running was dropped unrecorded, and its owner stayed queued, never asked
// again.
func TestOwnerCanceledGetIsRetried(t *testing.T) {
	t.Parallel()
	var version atomic.Uint64
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	g := &cancelingGetter{}
	o := newOwners(g, slog.New(slog.DiscardHandler), m, &version)
	now := time.Unix(1000, 0)
	o.now = func() time.Time { return now }
	o.lookup(&jobs, "ml", "j")
	o.fetch(t.Context(), <-o.queue)
	if _, state := o.lookup(&jobs, "ml", "j"); state != stateFailed {
		t.Fatalf("state after a canceled GET = %d, want failed (%d)", state, stateFailed)
	}
	now = now.Add(ownerRetry)
	o.lookup(&jobs, "ml", "j")
	select {
	case <-o.queue:
	default:
		t.Fatal("the owner was not asked for again after the retry interval")
	}
}
