package podlabels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
)

// resource is a namespaced resource the workload resolution GETs, in
// version or, where the API server does not serve that, in fallback.
type resource struct {
	group, version, name string
	fallback             string
}

// The resources read, each needing get on it (deployment/helm's
// workload-reader-rbac.yaml grants exactly these):
//   - ReplicaSets and Jobs: apps/v1 and batch/v1, the Kubernetes API.
//   - JobSets: for the Kueue queue label a JobSet alone carries.
//   - LocalQueues: group kueue.x-k8s.io, resource localqueues, spec.clusterQueue
//     (kubernetes-sigs/kueue apis/kueue/v1beta1/localqueue_types.go
//     @01ed66fdddfa757b45d1e9126c34218183ca80fd: LocalQueueSpec.ClusterQueue
//     `json:"clusterQueue"`, printcolumn .spec.clusterQueue), the same field
//     in v1beta2 (apis/kueue/v1beta2/localqueue_types.go
//     @ff69552e79ad21652c36caa97038382e55625cf7). Kueue's CRD
//     (config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml) serves
//     v1beta1 only up to v0.14; v0.15.0 adds v1beta2 (v1beta1 stored);
//     v0.16.0 stores v1beta2 and deprecates v1beta1, whose reads then go
//     through Kueue's conversion webhook; v0.19 still serves both, and
//     CHANGELOG-0.16.md plans to drop v1beta1. So v1beta2 is read first, and
//     v1beta1 where v1beta2 is not served (a Kueue before v0.15).
var (
	replicaSets = resource{group: "apps", version: "v1", name: "replicasets"}
	jobs        = resource{group: "batch", version: "v1", name: "jobs"}
	localQueues = resource{group: "kueue.x-k8s.io", version: "v1beta2", fallback: "v1beta1", name: "localqueues"}
	// jobSets: v1alpha2 is the one version JobSet's CRD serves
	// (kubernetes-sigs/jobset config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml
	// @08dfbdfd682714a9ab929633eca8dc95315187e7); read for its queue label
	// only. Kueue's Workload for a JobSet names the queue too (spec.queueName),
	// but finding it takes more than a get: it is named
	// jobset-<name>-<hash of the JobSet's kind, group, name and UID>, labelled
	// kueue.x-k8s.io/job-uid with the UID and controlled by the JobSet
	// (kubernetes-sigs/kueue pkg/controller/jobframework/workload_names.go,
	// ConstructWorkload in reconciler.go, @ff69552e79ad21652c36caa97038382e55625cf7).
	jobSets = resource{group: "jobset.x-k8s.io", version: "v1alpha2", name: "jobsets"}
)

// Owner lookups' limits.
const (
	// ownerTTL is how long an answer is used before it is asked again
	// (owners rarely change, but RBAC granted later and a LocalQueue
	// recreated for another ClusterQueue should show within minutes). An
	// expired answer stays in use until the new one arrives.
	ownerTTL = 10 * time.Minute
	// ownerRetry is how soon a failed lookup (not 403 or 404) is retried.
	ownerRetry = 30 * time.Second
	// ownerCacheSize bounds the cached owners; a node runs at most a few
	// hundred pods, each with at most three owners.
	ownerCacheSize = 4096
	// ownerQueueSize bounds the lookups waiting; a full queue drops the
	// request, which the next collection makes again.
	ownerQueueSize = 256
	// ownerTimeout bounds one GET; ownerMaxBytes its reply (a ReplicaSet
	// or Job with its pod template is a few KiB, a large one tens).
	ownerTimeout  = 10 * time.Second
	ownerMaxBytes = 1 << 20
)

// getter GETs one object of r in version, returning its JSON; errors from
// the API server are apierrors' status errors.
type getter interface {
	get(ctx context.Context, r *resource, version, namespace, name string) ([]byte, error)
}

// notServed reports whether err is the API server's answer to a path it
// does not serve (a resource, or a version of it, no API group or CRD
// serves): a 404 that names no object. A missing object's 404 names it
// (apierrors.NewNotFound); an unserved path's is k8s.io/apiserver's
// notfoundhandler's plain http.NotFound, which client-go turns into a
// NotFound status naming nothing (pkg/util/notfoundhandler/not_found_handler.go,
// k8s.io/apiserver@v0.37.2; apiextensions-apiserver's crdHandler delegates
// there for a version its CRD does not serve, HasServedCRDVersion in
// pkg/apiserver/customresource_handler.go).
func notServed(err error, name string) bool {
	var st apierrors.APIStatus
	if !apierrors.IsNotFound(err) {
		return false
	}
	return !errors.As(err, &st) || st.Status().Details == nil || st.Status().Details.Name != name
}

// getServed GETs an object of r in the version the API server serves: r's
// own, else its fallback. first is the version to try first (the one that
// answered last time); it returns the version that answered, "" if
// neither is served.
func getServed(ctx context.Context, g getter, r *resource, first, namespace, name string) ([]byte, string, error) {
	versions := [2]string{r.version, r.fallback}
	if r.fallback != "" && first == r.fallback {
		versions[0], versions[1] = versions[1], versions[0]
	}
	raw, err := g.get(ctx, r, versions[0], namespace, name)
	if versions[1] == "" || !notServed(err, name) {
		return raw, versions[0], err
	}
	raw, err = g.get(ctx, r, versions[1], namespace, name)
	if notServed(err, name) {
		return raw, "", err
	}
	return raw, versions[1], err
}

// restGetter GETs through client-go's REST client.
type restGetter struct{ rc rest.Interface }

func newRESTGetter(cfg *rest.Config) (*restGetter, error) {
	c := rest.CopyConfig(cfg)
	// Status registered, so that a refusal decodes into the API server's
	// own Status (reason, message, details) rather than a generic error.
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	c.AcceptContentTypes = runtime.ContentTypeJSON
	// LocalQueue v1beta1 answers with a deprecation warning header; it is
	// read only where v1beta2 is not served (above), so the warning is
	// noise in the exporter's log.
	c.WarningHandler = rest.NoWarnings{}
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &restGetter{rc: rc}, nil
}

func (g *restGetter) get(ctx context.Context, r *resource, version, namespace, name string) ([]byte, error) {
	body, err := g.rc.Get().AbsPath("/apis", r.group, version, "namespaces", namespace, r.name, name).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	return bounded.ReadAll(ctx, body, ownerMaxBytes)
}

// apiOwnerObject is the part of a ReplicaSet, Job, JobSet or LocalQueue the
// resolution reads.
type apiOwnerObject struct {
	Metadata metav1.ObjectMeta `json:"metadata"`
	Spec     struct {
		ClusterQueue string `json:"clusterQueue"`
	} `json:"spec"`
}

func decodeOwner(raw []byte) (ownerObject, error) {
	var o apiOwnerObject
	if err := json.Unmarshal(raw, &o); err != nil {
		return ownerObject{}, err
	}
	obj := ownerObject{
		queue:        validText(o.Metadata.Labels[queueLabel]),
		jobSet:       validText(o.Metadata.Labels[jobSetLabel]),
		clusterQueue: validText(o.Spec.ClusterQueue),
	}
	obj.owner, obj.controlled = controllerOf(&o.Metadata)
	return obj, nil
}

type ownerKey struct {
	r               *resource
	namespace, name string
}

type ownerEntry struct {
	obj     ownerObject
	state   lookupState
	expires time.Time
	queued  bool
}

// owners caches the owners the workload resolution reads and fetches the
// missing ones on a goroutine of its own: lookup never waits for the API
// server, so neither does a collection, and a scrape never reaches here.
// A change of an answer adds to version (the Store's), so the collector's
// join rebuilds its label sets.
type owners struct {
	get     getter
	logger  *slog.Logger
	m       *metrics
	version *atomic.Uint64
	now     func() time.Time

	mu        sync.Mutex
	cache     map[ownerKey]*ownerEntry
	forbidden map[*resource]bool   // logged once each
	served    map[*resource]string // the version that answered last
	queue     chan ownerKey
}

func newOwners(g getter, logger *slog.Logger, m *metrics, version *atomic.Uint64) *owners {
	return &owners{
		get: g, logger: logger, m: m, version: version, now: time.Now,
		cache:     map[ownerKey]*ownerEntry{},
		forbidden: map[*resource]bool{},
		served:    map[*resource]string{},
		queue:     make(chan ownerKey, ownerQueueSize),
	}
}

// lookup returns what is known of an owner, and asks for it (again) when
// it is unknown or expired.
func (o *owners) lookup(r *resource, namespace, name string) (ownerObject, lookupState) {
	key := ownerKey{r, namespace, name}
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.cache[key]
	if !ok {
		if len(o.cache) >= ownerCacheSize {
			o.evictLocked()
		}
		e = &ownerEntry{}
		o.cache[key] = e
	}
	if !e.queued && (e.state == statePending || !o.now().Before(e.expires)) {
		select {
		case o.queue <- key:
			e.queued = true
		default: // full: asked again on the next lookup
		}
	}
	return e.obj, e.state
}

// evictLocked makes room: an expired entry if there is one, else any
// entry not waiting for an answer (map order), so the cache stays bounded
// whatever the pods name.
func (o *owners) evictLocked() {
	now := o.now()
	var victim *ownerKey
	for k, e := range o.cache {
		if e.queued {
			continue
		}
		if !now.Before(e.expires) {
			delete(o.cache, k)
			return
		}
		if victim == nil {
			kk := k
			victim = &kk
		}
	}
	if victim != nil {
		delete(o.cache, *victim)
	}
}

// run answers the lookups asked for until ctx is done.
func (o *owners) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case key := <-o.queue:
			o.fetch(ctx, key)
		}
	}
}

// fetch GETs one owner and records the answer.
func (o *owners) fetch(ctx context.Context, key ownerKey) {
	o.mu.Lock()
	first := o.served[key.r]
	o.mu.Unlock()
	// One deadline for both versions' GETs, where the first is not served.
	getCtx, cancel := context.WithTimeout(ctx, ownerTimeout)
	raw, version, err := getServed(getCtx, o.get, key.r, first, key.namespace, key.name)
	cancel()
	if version != "" && version != first {
		o.mu.Lock()
		o.served[key.r] = version
		o.mu.Unlock()
	}
	var obj ownerObject
	state := stateFound
	if err == nil {
		if obj, err = decodeOwner(raw); err != nil {
			err = fmt.Errorf("decoding %s %s/%s: %w", key.r.name, key.namespace, key.name, err)
		}
	}
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		state = stateNotFound
	case apierrors.IsForbidden(err):
		state = stateForbidden
	case ctx.Err() != nil:
		return // stopping: nobody reads the answer
	default:
		state = stateFailed
	}
	o.m.ownerLookups.WithLabelValues(key.r.name, stateName[state]).Inc()
	o.record(key, obj, state, err)
}

var stateName = [...]string{statePending: "pending", stateFound: "found", stateNotFound: "not_found",
	stateForbidden: "forbidden", stateFailed: "error"}

// record stores an answer and logs what an operator must act on: a
// forbidden resource once (until it is allowed again), failures per
// distinct owner at debug level.
func (o *owners) record(key ownerKey, obj ownerObject, state lookupState, err error) {
	now := o.now()
	o.mu.Lock()
	e, ok := o.cache[key]
	if !ok {
		e = &ownerEntry{}
		o.cache[key] = e
	}
	e.queued = false
	changed := false
	switch {
	case state == stateFailed && e.state == stateFound:
		// Keep the last answer; ask again soon.
		e.expires = now.Add(ownerRetry)
	case state == stateFailed:
		changed = e.state != stateFailed
		e.state, e.expires = stateFailed, now.Add(ownerRetry)
	default:
		changed = e.state != state || e.obj != obj
		e.obj, e.state, e.expires = obj, state, now.Add(ownerTTL)
	}
	logForbidden := state == stateForbidden && !o.forbidden[key.r]
	logAllowed := state != stateForbidden && state != stateFailed && o.forbidden[key.r]
	if logForbidden {
		o.forbidden[key.r] = true
	}
	if logAllowed {
		delete(o.forbidden, key.r)
	}
	o.mu.Unlock()

	forbidden := 0.0
	if state == stateForbidden {
		forbidden = 1
	}
	if state != stateFailed {
		o.m.ownerForbidden.WithLabelValues(key.r.name).Set(forbidden)
	}
	switch {
	case logForbidden:
		o.logger.Error("reading pod owners is forbidden; gpu_workload_info leaves out the pods that need them. Grant the exporter's service account get on this resource (the chart does with kubernetes.workloadInfo)",
			"group", key.r.group, "resource", key.r.name, "err", err)
	case logAllowed:
		o.logger.Info("reading pod owners allowed again", "group", key.r.group, "resource", key.r.name)
	case state == stateFailed:
		o.logger.Debug("reading a pod owner failed; retrying", "resource", key.r.name, "namespace", key.namespace, "name", key.name, "err", err)
	}
	if changed {
		o.version.Add(1)
	}
}

// Access says whether the exporter may read one resource of pod owners.
type Access struct {
	// Group and Resource name it (apps replicasets, batch jobs,
	// jobset.x-k8s.io jobsets, kueue.x-k8s.io localqueues).
	Group, Resource string
	// Allowed: get is allowed. Forbidden: 403. NotServed: the API server
	// does not serve the resource (JobSet or Kueue not installed).
	// Err: any other failure.
	Allowed, Forbidden, NotServed bool
	Err                           error
}

// probeName is an object name no cluster has: a GET of it answers 404 if
// the caller may get the resource (RBAC is checked before the lookup), 403
// if not.
const probeName = "gpu-exporter-doctor-probe"

// ProbeWorkloadAccess asks the API server once per resource the workload
// resolution reads whether the exporter may read it, with a GET of an
// object that does not exist in namespace: 404 naming the object means
// allowed, 403 forbidden, a 404 without it that the resource is not served
// (in any version the resolution reads).
func ProbeWorkloadAccess(ctx context.Context, cfg *rest.Config, namespace string) ([]Access, error) {
	g, err := newRESTGetter(cfg)
	if err != nil {
		return nil, err
	}
	return probeAccess(ctx, g, namespace), nil
}

func probeAccess(ctx context.Context, g getter, namespace string) []Access {
	var out []Access
	for _, r := range []*resource{&replicaSets, &jobs, &jobSets, &localQueues} {
		a := Access{Group: r.group, Resource: r.name}
		_, _, err := getServed(ctx, g, r, "", namespace, probeName)
		switch {
		case err == nil:
			a.Allowed = true
		case apierrors.IsForbidden(err):
			a.Forbidden = true
		case notServed(err, probeName):
			a.NotServed = true
		case apierrors.IsNotFound(err):
			a.Allowed = true
		default:
			a.Err = err
		}
		out = append(out, a)
	}
	return out
}
