package resourceslices

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// DefaultSyncTimeout bounds how long Run waits for the first list.
const DefaultSyncTimeout = 30 * time.Second

// Store keeps the index of this node's ResourceSlices. Lookup is safe for
// concurrent use and reads an immutable index the informer's handler
// replaces on every change.
type Store struct {
	cfg     *rest.Config
	node    string
	logger  *slog.Logger
	timeout time.Duration

	index   atomic.Pointer[index]
	version atomic.Uint64

	mu     sync.Mutex
	slices map[string]*apiSlice // by object name
	state  State

	wg sync.WaitGroup
}

// index is one immutable view of the node's devices.
type index struct {
	devices map[Key]Device
	drivers []string
}

// State is what the store knows of its own health, for doctor and logs.
type State struct {
	// Version is the resource.k8s.io version in use, empty before
	// discovery succeeded.
	Version string
	// Synced is set once the first list has been delivered.
	Synced bool
	// Err is the last discovery, list or watch error; nil once events
	// flow again.
	Err error
}

// New prepares a store of node's ResourceSlices on cfg; Run starts it.
func New(cfg *rest.Config, node string, logger *slog.Logger) (*Store, error) {
	if node == "" {
		return nil, errors.New("resourceslices: the node name is empty (set NODE_NAME from the downward API)")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{cfg: cfg, node: node, logger: logger.With("node", node), timeout: DefaultSyncTimeout,
		slices: map[string]*apiSlice{}}
	s.index.Store(&index{})
	return s, nil
}

// Run discovers the served version and runs the informer until ctx ends.
// It waits for the first list at most the sync timeout, then returns nil
// and keeps trying in the background: lookups fail until it succeeds.
func (s *Store) Run(ctx context.Context) {
	synced := make(chan struct{})
	s.wg.Go(func() { s.loop(ctx, synced) })
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case <-synced:
	case <-ctx.Done():
	case <-timer.C:
		s.logger.Warn("ResourceSlice informer has not synced; DRA MIG devices stay unattributed until it does", "timeout", s.timeout)
	}
}

// Wait waits for Run's goroutines after ctx has ended.
func (s *Store) Wait() { s.wg.Wait() }

// loop discovers the version (retrying with capped backoff: the group may
// be enabled later) and runs the informer.
func (s *Store) loop(ctx context.Context, synced chan struct{}) {
	backoff := time.Second
	var version string
	for {
		v, err := ServedVersion(ctx, s.cfg)
		if err == nil {
			version = v
			break
		}
		s.setErr(err, "discovering the DRA API failed; retrying")
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
	}
	s.mu.Lock()
	s.state.Version = version
	s.mu.Unlock()
	client, err := newSlicesClient(s.cfg, version)
	if err != nil {
		s.setErr(err, "ResourceSlice client failed")
		return
	}
	inf := s.informer(client)
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.upsert,
		UpdateFunc: func(_, obj any) { s.upsert(obj) },
		DeleteFunc: s.remove,
	})
	if err != nil {
		s.setErr(err, "ResourceSlice informer failed")
		return
	}
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return
		}
		if apierrors.IsForbidden(err) {
			s.setErr(err, "listing or watching ResourceSlices is forbidden; grant the exporter's service account get, list and watch on resourceslices.resource.k8s.io (the chart does with kubernetes.dra true, or auto where the cluster serves resource.k8s.io)")
			return
		}
		s.setErr(err, "listing or watching ResourceSlices failed; retrying")
	})
	s.wg.Go(func() {
		select {
		case <-reg.HasSyncedChecker().Done():
			s.mu.Lock()
			s.state.Synced = true
			s.mu.Unlock()
			s.logger.Info("ResourceSlice informer synced", "version", Group+"/"+version)
			close(synced)
		case <-ctx.Done():
		}
	})
	inf.RunWithContext(ctx)
}

// informer is a list-watch of the node's ResourceSlices (field selector
// spec.nodeName, which the API server supports for ResourceSlices).
func (s *Store) informer(c *slicesClient) cache.SharedIndexInformer {
	selector := fields.OneTermEqualSelector("spec.nodeName", s.node).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return c.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return c.Watch(ctx, o)
		},
	}
	return cache.NewSharedIndexInformerWithOptions(lw, &apiSlice{}, cache.SharedIndexInformerOptions{})
}

// setErr records err and logs it once per distinct error, with what
// failed and what to do as attributes of one constant message.
func (s *Store) setErr(err error, what string) {
	s.mu.Lock()
	same := s.state.Err != nil && s.state.Err.Error() == err.Error()
	s.state.Err = err
	s.mu.Unlock()
	if !same {
		s.logger.Warn("DRA ResourceSlices unavailable; DRA MIG devices stay unattributed until they are", "what", what, "err", err)
	}
}

func (s *Store) upsert(obj any) {
	sl, ok := obj.(*apiSlice)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state.Err != nil {
		s.state.Err = nil
		s.logger.Info("ResourceSlice informer receiving events again")
	}
	s.slices[sl.Name] = sl
	s.rebuild()
}

func (s *Store) remove(obj any) {
	name := ""
	switch o := obj.(type) {
	case *apiSlice:
		name = o.Name
	case cache.DeletedFinalStateUnknown:
		_, name, _ = cache.SplitMetaNamespaceKey(o.Key)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.slices, name)
	s.rebuild()
}

// rebuild makes a new index from the slices (called with mu held). A pool
// is published as slices of one generation; slices of an older generation
// of the same pool are stale and ignored (KEP 4381 ResourcePool.generation).
func (s *Store) rebuild() {
	newest := map[[2]string]int64{}
	for _, sl := range s.slices {
		k := [2]string{sl.Spec.Driver, sl.Spec.Pool.Name}
		if g, ok := newest[k]; !ok || sl.Spec.Pool.Generation > g {
			newest[k] = sl.Spec.Pool.Generation
		}
	}
	ix := &index{devices: map[Key]Device{}}
	drivers := map[string]bool{}
	for _, sl := range s.slices {
		if sl.Spec.Pool.Generation < newest[[2]string{sl.Spec.Driver, sl.Spec.Pool.Name}] {
			continue
		}
		drivers[sl.Spec.Driver] = true
		for i := range sl.Spec.Devices {
			d := &sl.Spec.Devices[i]
			ix.devices[Key{Driver: sl.Spec.Driver, Pool: sl.Spec.Pool.Name, Device: d.Name}] = deviceOf(sl.Spec.Driver, d)
		}
	}
	ix.drivers = slices.Sorted(maps.Keys(drivers))
	s.index.Store(ix)
	s.version.Add(1)
}

// Lookup returns what the node's ResourceSlices say of device k.
func (s *Store) Lookup(k Key) (Device, bool) {
	if s == nil {
		return Device{}, false
	}
	d, ok := s.index.Load().devices[k]
	return d, ok
}

// Version changes whenever the index changes.
func (s *Store) Version() uint64 {
	if s == nil {
		return 0
	}
	return s.version.Load()
}

// Drivers returns the drivers that publish ResourceSlices for this node,
// sorted.
func (s *Store) Drivers() []string {
	if s == nil {
		return nil
	}
	return s.index.Load().drivers
}

// State returns the store's state.
func (s *Store) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// String names the store for logs.
func (s *Store) String() string { return fmt.Sprintf("ResourceSlices of node %s", s.node) }
