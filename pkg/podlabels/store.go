// Package podlabels tells, for a pod on this node, its UID and its
// allowlisted labels, so that GPU series attributed to the pod can carry
// them. The kubelet pod-resources API, which attributes GPUs to pods, has
// neither.
//
// A Store runs one client-go pod informer restricted to this node's pods
// (field selector spec.nodeName=<node>, no resync) and recomputes a pod's
// Info only when an informer event changes it; Lookup, on the collection
// path, is one map read under a read lock and allocates nothing. Version
// changes whenever a Lookup answer may have, so callers can keep label sets
// until it moves.
//
// Nothing here runs unless the user asks for pod labels
// (--kubernetes.pod-labels=<allowlist regex>) or pod UIDs
// (--kubernetes.pod-uid). Both need, in the exporter's pod:
//
//   - NODE_NAME, from the downward API:
//     env: [{name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
//   - read-only RBAC on pods, cluster-wide (a ClusterRole, since pods live in
//     every namespace): apiGroups [""], resources ["pods"], verbs ["list",
//     "watch"], bound to the exporter's service account.
//
// The API server does the node filtering; Store filters by spec.nodeName
// again, so a client that ignores field selectors (client-go's fake
// clientset does) cannot leak other nodes' pods into this node's series.
//
// Label names are LabelPrefix plus the Kubernetes key as kube-state-metrics
// names kube_pod_labels, so queries port between the two: characters
// outside [a-zA-Z0-9_] become "_", camelCase is split with "_", all is
// lower-cased; keys whose names collide are all renamed _conflict1,
// _conflict2, … in byte order of the key. The prefix keeps them apart from
// every label the exporter sets itself. Values are passed through
// unchanged, except that bytes that are not UTF-8 become U+FFFD; the
// exposition escapes them. At most Config.MaxLabels labels
// per pod: the first keys in byte order, the others dropped with one log
// line per pod.
package podlabels

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// userAgent identifies the exporter in API server audit logs.
const userAgent = "gpu-exporter"

// Store follows this node's pods and answers Lookup from precomputed Info.
type Store struct {
	cfg      Config
	logger   *slog.Logger
	reg      prometheus.Registerer
	m        *metrics
	informer cache.SharedIndexInformer
	handlers cache.ResourceEventHandlerRegistration
	// owners resolves pods' workloads (Config.Workloads); nil otherwise.
	owners *owners

	mu      sync.RWMutex
	pods    map[podKey]podEntry
	byUID   map[string]podByUID // for LookupContainer
	version atomic.Uint64

	// life guards the start/stop state shared by Run and Close.
	life    sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	syncOnce sync.Once
	// synced is set once the informer has listed this node's pods (Synced).
	synced atomic.Bool

	// watchMu guards watchErr, the last list/watch error logged; it is
	// cleared (and the recovery logged) when events flow again.
	watchMu  sync.Mutex
	watchErr string
}

type podKey struct{ namespace, name string }

type podEntry struct {
	info Info
	// truncated: keys were dropped for the cap, and that was logged.
	truncated bool
	// uid is the pod's UID, the key of its byUID entry; staticUID, when
	// set, a second key (staticPodUID).
	uid, staticUID string
}

// Pods is what the Store needs of the API server: listing and watching
// pods. The exporter uses an API client of its own for the v1 pods
// resource only, decoding the fields the Store reads (apiclient.go,
// pod.go); tests pass a fake clientset's pods client converted to them.
// client-go's clientset and informer factory link every API group's types,
// clients, listers and informers, which (with the reflection the binary
// also links) tripled the binary and the resident memory its mapped pages
// cost (docs/PERFORMANCE.md).
type Pods interface {
	List(ctx context.Context, opts metav1.ListOptions) (*apiPodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// New prepares a Store on client; it does not contact the API server (Run
// does). Errors name the setting at fault. Self-metrics are registered on
// reg unless it is nil. A nil logger discards logs.
func New(client Pods, cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if client == nil {
		return nil, errors.New("podlabels: no Kubernetes client")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	s := &Store{
		cfg:    cfg,
		logger: logger.With("node", cfg.Node),
		reg:    reg,
		m:      m,
		pods:   map[podKey]podEntry{},
		byUID:  map[string]podByUID{},
	}
	if cfg.Workloads {
		s.owners = newOwners(nil, s.logger, m, &s.version) // NewInCluster sets the getter
	}
	selector := fields.OneTermEqualSelector("spec.nodeName", cfg.Node).String()
	s.informer = podInformer(client, selector, cfg.ResyncPeriod)
	informer := s.informer
	if err := informer.SetWatchErrorHandlerWithContext(s.onWatchError); err != nil {
		m.unregister(reg)
		return nil, fmt.Errorf("podlabels: pod informer: %w", err)
	}
	s.handlers, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.upsert,
		UpdateFunc: func(_, obj any) { s.upsert(obj) },
		DeleteFunc: s.onDelete,
	})
	if err != nil {
		m.unregister(reg)
		return nil, fmt.Errorf("podlabels: pod informer: %w", err)
	}
	return s, nil
}

// NewInCluster is New with the in-cluster client: the pod's service account
// token and the KUBERNETES_SERVICE_HOST/PORT environment.
func NewInCluster(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Store, error) {
	if _, err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	rc, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("podlabels: --kubernetes.pod-labels and --kubernetes.pod-uid need the exporter to run in a Kubernetes pod with a service account: %w", err)
	}
	rc.UserAgent = userAgent
	client, err := newPodsClient(rc)
	if err != nil {
		return nil, fmt.Errorf("podlabels: Kubernetes client: %w", err)
	}
	g, err := newRESTGetter(rc)
	if err != nil {
		return nil, fmt.Errorf("podlabels: Kubernetes client: %w", err)
	}
	s, err := New(client, cfg, logger, reg)
	if err != nil {
		return nil, err
	}
	if s.owners != nil {
		s.owners.get = g
	}
	return s, nil
}

// podInformer is the informer client-go's informer factory builds for pods
// (informers/core/v1/pod.go: a list-watch of the pods resource with the
// list options tweaked, a namespace index), restricted by selector and
// slimmed by slimPod, without the factory.
func podInformer(pods Pods, selector string, resync time.Duration) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return pods.Watch(ctx, o)
		},
	}
	informer := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, pods), &apiPod{},
		cache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
	_ = informer.SetTransform(slimPod) // fails only once the informer has started
	return informer
}

// Run starts the informer and waits until it has delivered this node's
// pods, or Config.SyncTimeout has passed: then it logs and returns nil, and
// the informer keeps trying (gpu_exporter_pod_informer_synced says when it
// makes it). Waiting lets the first page carry pod labels, so series do not
// change identity a moment after start. The informer runs until ctx is done
// or Close is called. Run returns an error when ctx ends first or when
// called more than once.
func (s *Store) Run(ctx context.Context) error {
	s.life.Lock()
	if s.started || s.closed {
		s.life.Unlock()
		return errors.New("podlabels: Run called twice or after Close")
	}
	s.started = true
	ctx, s.cancel = context.WithCancel(ctx)
	synced := s.handlers.HasSyncedChecker().Done()
	s.wg.Go(func() {
		select {
		case <-synced:
			s.markSynced()
		case <-ctx.Done():
		}
	})
	s.life.Unlock()

	s.wg.Go(func() { s.informer.RunWithContext(ctx) })
	if s.owners != nil && s.owners.get != nil {
		s.wg.Go(func() { s.owners.run(ctx) })
	}
	timer := time.NewTimer(s.cfg.SyncTimeout)
	defer timer.Stop()
	select {
	case <-synced:
		s.markSynced()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("podlabels: stopped while waiting for the pod informer: %w", context.Cause(ctx))
	case <-timer.C:
		s.logger.Warn("pod informer has not synced; series carry no pod labels or pod UIDs until it does",
			"timeout", s.cfg.SyncTimeout)
		return nil
	}
}

// Close stops the informer, waits for its goroutines and unregisters the
// self-metrics.
func (s *Store) Close() {
	s.life.Lock()
	s.closed = true
	cancel := s.cancel
	s.life.Unlock()
	if cancel != nil {
		cancel()
	}
	s.wg.Wait()
	s.m.unregister(s.reg)
}

// Lookup returns the Info of the pod namespace/pod on this node; false when
// the informer does not know it (not synced yet, not on this node, gone).
// It allocates nothing without Config.Workloads; do not modify the
// returned Labels. With Config.Workloads it fills Info.Workload from the
// owners known so far and asks for the missing ones, which a goroutine of
// the Store's fetches: Version moves when they arrive.
func (s *Store) Lookup(namespace, pod string) (Info, bool) {
	s.mu.RLock()
	e, ok := s.pods[podKey{namespace, pod}]
	s.mu.RUnlock()
	if ok && s.owners != nil && e.info.seed.enabled {
		e.info.Workload, _ = resolveWorkload(namespace, pod, e.info.seed, s.owners.lookup)
	}
	return e.info, ok
}

// Version increases whenever a Lookup answer may have changed: a pod added
// or removed, its labels or UID changed. Events that change nothing Lookup
// reports (status updates) leave it alone. Read it before the Lookups whose
// results you cache under it.
func (s *Store) Version() uint64 { return s.version.Load() }

// markSynced records the first complete pod list, once.
func (s *Store) markSynced() {
	s.syncOnce.Do(func() {
		s.synced.Store(true)
		s.m.synced.Set(1)
		s.mu.RLock()
		n := len(s.pods)
		s.mu.RUnlock()
		s.logger.Info("pod informer synced; pod labels on", "pods", n)
		if n == 0 {
			// The exporter's own pod runs on this node, so none at all
			// means the name matches no node.
			s.logger.Warn("the API server lists no pod on this node; is NODE_NAME right?")
		}
	})
}

// upsert applies an added or updated pod.
func (s *Store) upsert(obj any) {
	pod, ok := obj.(*apiPod)
	if !ok {
		return
	}
	s.eventsFlow()
	key := podKey{pod.Namespace, pod.Name}
	if pod.Spec.NodeName != s.cfg.Node {
		s.remove(key)
		return
	}
	info, dropped := podInfo(pod, s.cfg.Allowlist, s.cfg.UID, s.cfg.MaxLabels)
	if s.cfg.Workloads {
		info.seed = seedOf(pod)
	}
	info.kai = kaiRoleOf(pod)
	info.vgpu = vgpuOf(pod)
	truncated := len(dropped) > 0

	s.mu.Lock()
	old, had := s.pods[key]
	staticUID := staticPodUID(pod)
	s.pods[key] = podEntry{info: info, truncated: truncated, uid: string(pod.UID), staticUID: staticUID}
	if had && old.uid != string(pod.UID) {
		delete(s.byUID, old.uid)
	}
	if had && old.staticUID != "" && old.staticUID != staticUID {
		delete(s.byUID, old.staticUID)
	}
	byUID := podByUID{key: key, containers: containerIDs(pod)}
	s.byUID[string(pod.UID)] = byUID
	if staticUID != "" {
		s.byUID[staticUID] = byUID
	}
	if !had || !old.info.equal(info) {
		s.version.Add(1)
	}
	s.m.pods.Set(float64(len(s.pods)))
	s.mu.Unlock()

	if e := info.vgpu.err; e != "" && (!had || old.info.vgpu.err != e) {
		s.logger.Warn("cannot read the GPUs a vGPU scheduler chose; the kubelet's device ids label the pod's GPUs", "err", e)
	}
	if truncated && !old.truncated {
		s.logger.Warn("pod has more allowlisted labels than the limit; extra labels dropped",
			"namespace", pod.Namespace, "pod", pod.Name, "limit", s.cfg.MaxLabels, "dropped", dropped)
	}
}

func (s *Store) onDelete(obj any) {
	var key podKey
	switch o := obj.(type) {
	case *apiPod:
		key = podKey{o.Namespace, o.Name}
	case cache.DeletedFinalStateUnknown:
		// The watch missed the delete; a relist found the pod gone.
		ns, name, err := cache.SplitMetaNamespaceKey(o.Key)
		if err != nil {
			return
		}
		key = podKey{ns, name}
	default:
		return
	}
	s.remove(key)
}

func (s *Store) remove(key podKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.pods[key]
	if !had {
		return
	}
	delete(s.pods, key)
	delete(s.byUID, old.uid)
	if old.staticUID != "" {
		delete(s.byUID, old.staticUID)
	}
	s.version.Add(1)
	s.m.pods.Set(float64(len(s.pods)))
}

// onWatchError replaces client-go's klog output for list/watch failures:
// one log line per distinct error, with a hint for missing RBAC.
func (s *Store) onWatchError(_ context.Context, _ *cache.Reflector, err error) {
	switch {
	case errors.Is(err, io.EOF):
		return // the watch ended normally
	case errors.Is(err, io.ErrUnexpectedEOF), apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		s.logger.Debug("pod watch closed; relisting", "err", err)
		return
	}
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if err.Error() == s.watchErr {
		return
	}
	s.watchErr = err.Error()
	if apierrors.IsForbidden(err) {
		s.logger.Error("listing or watching pods is forbidden; grant the exporter's service account list and watch on pods (ClusterRole)", "err", err)
		return
	}
	s.logger.Warn("listing or watching pods failed; retrying", "err", err)
}

// eventsFlow logs the end of a list/watch failure.
func (s *Store) eventsFlow() {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watchErr != "" {
		s.watchErr = ""
		s.logger.Info("pod informer receiving events again")
	}
}

// slimPod keeps only what podInfo and the store read, so the informer cache
// holds a few hundred bytes per pod instead of whole pod objects.
func slimPod(obj any) (any, error) {
	pod, ok := obj.(*apiPod)
	if !ok {
		return obj, nil
	}
	return &apiPod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            pod.Name,
			Namespace:       pod.Namespace,
			UID:             pod.UID,
			ResourceVersion: pod.ResourceVersion,
			Labels:          pod.Labels,
			Annotations:     keptAnnotations(pod),
			OwnerReferences: controllerRef(pod),
		},
		Spec: slimSpec(pod),
		Status: apiPodStatus{
			Phase:                      kaiPhase(pod),
			ContainerStatuses:          slimStatuses(pod.Status.ContainerStatuses),
			InitContainerStatuses:      slimStatuses(pod.Status.InitContainerStatuses),
			EphemeralContainerStatuses: slimStatuses(pod.Status.EphemeralContainerStatuses),
		},
	}, nil
}

// controllerRef keeps a pod's controlling owner reference, the one the
// workload resolution reads (metav1.GetControllerOf), and drops the
// others.
func controllerRef(pod *apiPod) []metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return nil
	}
	return []metav1.OwnerReference{*ref}
}
