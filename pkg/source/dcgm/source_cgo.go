//go:build cgo && linux

package dcgm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/logthrottle"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// inUse is set while a Source holds go-dcgm. go-dcgm keeps its one
// connection in package variables, so this process-wide flag is the one
// piece of global state here: a second Source would share and break it.
var inUse atomic.Bool

// Source reads GPU fields from DCGM. Its methods may be called from several
// goroutines; DCGM calls are serialised on one worker goroutine.
type Source struct {
	cfg Config
	log *slog.Logger
	w   *cgocall.Worker
	now func() time.Time
	// inited says go-dcgm is initialised; only jobs on the worker change it.
	inited atomic.Bool

	mu     sync.Mutex
	closed bool
	link   cgocall.Link // up, or down until the backoff passes

	set      []fields.Field
	inv      *inventory
	invAt    time.Time
	stale    bool // a value reported a lost GPU: reload the inventory
	watch    *watchState
	plan     plan
	reads    []readCall
	xidSince time.Time
	lost     source.LostTracker
	logged   map[string]bool
	// fabric is the last NVLink fabric DCGM reported (loadFabric);
	// fabricReadAt when links and switches were last read.
	fabric       *fabricTopology
	fabricReadAt time.Time
	// fabricErrors counts failed link status and switch list calls not yet
	// reported in a sample (Sample.FabricErrors); nvlinkFailing and
	// switchesFailing say the last one of each failed.
	fabricErrors    int
	nvlinkFailing   bool
	switchesFailing bool
	// p2p is the last NVLink P2P status (P2PStatus).
	p2p *p2pStatus
	// logs rate-limits lines that repeat per collection or per re-plan.
	logs *logthrottle.Logger
	seq  int
}

var _ source.Source = (*Source)(nil)

// New returns a DCGM source and tries to connect once. A hostengine that is
// down, or a missing libdcgm, does not fail New: Inventory and Read return
// errors wrapping source.ErrUnavailable until a reconnect succeeds. New
// fails on an invalid Config and when another Source is open in the process.
func New(cfg Config, logger *slog.Logger) (*Source, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if !inUse.CompareAndSwap(false, true) {
		return nil, errors.New("dcgm: another DCGM source is open in this process (go-dcgm holds one connection per process)")
	}
	s := &Source{
		cfg:    cfg,
		log:    logger.With("source", "dcgm"),
		now:    time.Now,
		link:   cgocall.NewLink("dcgm", cgocall.Retry{CallTimeout: cfg.CallTimeout, BackoffMin: cfg.BackoffMin, BackoffMax: cfg.BackoffMax}),
		logged: map[string]bool{},
	}
	s.w = cgocall.NewWorker("dcgm", cfg.CallTimeout, s.release)
	s.logs = logthrottle.New(s.log, logthrottle.Config{})
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.ensure(context.Background()) // a failure is logged and retried later
	return s, nil
}

// Name returns "dcgm".
func (s *Source) Name() string { return "dcgm" }

// Inventory returns the GPUs and MIG instances DCGM sees. It makes no DCGM
// call while connected: Read notices inventory changes.
func (s *Source) Inventory(ctx context.Context) (*source.Inventory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensure(ctx); err != nil {
		return nil, err
	}
	return s.inv.inv, nil
}

// Watch replaces the watched field set. The set is kept even when the
// hostengine is unreachable (the error then wraps source.ErrUnavailable) and
// is applied on reconnect. Fields no entity can carry (profiling fields no
// GPU supports, levels this source does not read) are dropped with one log
// line; Watch fails only if none of a non-empty set can be provided.
func (s *Source) Watch(ctx context.Context, set []fields.Field) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return cgocall.ErrClosed
	}
	same := s.link.Up() && slices.EqualFunc(set, s.set, func(a, b fields.Field) bool { return a.ID == b.ID })
	s.set = slices.Clone(set)
	switch {
	case same:
		// The same field ids in the same order: the watches stand.
	case !s.link.Up():
		if err := s.ensure(ctx); err != nil {
			return err
		}
	default:
		if err := s.applyWatches(ctx); err != nil {
			return s.failed(err)
		}
	}
	if len(s.set) > 0 && len(s.inv.inv.Entities) > 0 && s.plan.provided == 0 {
		return fmt.Errorf("dcgm: none of the %d fields can be read from these GPUs", len(s.set))
	}
	return nil
}

// Read returns the latest value of every watched field for every entity,
// and the XID events DCGM recorded since the previous Read.
func (s *Source) Read(ctx context.Context) (*source.Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensure(ctx); err != nil {
		return nil, err
	}
	if err := s.checkInventory(ctx); err != nil {
		return nil, s.failed(err)
	}
	sample := source.NewSample(s.now(), s.inv.inv, s.set)
	fabricDue := s.now().Sub(s.fabricReadAt) >= s.cfg.FabricInterval
	for i := range s.reads {
		rc := &s.reads[i]
		if rc.spec.fabric && !fabricDue && rc.cache != nil {
			rc.repeat(sample) // links and switches: read on their own interval
			continue
		}
		if err := s.readLevel(ctx, rc, sample); err != nil {
			return nil, s.failed(err)
		}
		if rc.spec.fabric {
			rc.keep(sample)
		}
	}
	if fabricDue {
		s.fabricReadAt = s.now()
	}
	sample.LinkStates = s.linkStates()
	xids, err := s.readXIDs(ctx)
	if err != nil {
		var ce *cgocall.CallError
		if errors.As(err, &ce) {
			return nil, s.failed(err)
		}
		if ctx.Err() != nil {
			// The read ended (its deadline, or the exporter stopping): no
			// failure of XID events to report, and their warning stays
			// for a real one.
			return nil, fmt.Errorf("read XID events: %w", context.Cause(ctx))
		}
		if s.first("xid") {
			s.log.Warn("dcgm XID events unavailable", "err", err)
		}
	}
	sample.XIDs = xids
	// Counted once, in the sample that goes out.
	sample.FabricErrors, s.fabricErrors = s.fabricErrors, 0
	return sample, nil
}

// LostGPUs returns the GPUs that left the inventory while this source ran
// (fell off the bus, marked lost by DCGM) and have not come back, by id.
func (s *Source) LostGPUs() []LostGPU {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost.List()
}

// Close shuts go-dcgm down and stops the worker. If a DCGM call is still
// blocked, go-dcgm is shut down when it returns, and only then can a new
// Source open.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.link.Down()
	if s.inited.Load() {
		_, _ = cgocall.Call(context.Background(), s.w, "Shutdown", s.shutdownJob)
	}
	s.mu.Unlock()
	if !s.w.Close(s.cfg.CallTimeout) {
		return errors.New("dcgm: a DCGM call is still blocked; go-dcgm is released when it returns")
	}
	return nil
}

// release runs on the worker goroutine when it stops.
func (s *Source) release() {
	if s.inited.Load() {
		_, _ = s.shutdownJob()
	}
	inUse.Store(false)
}

func (s *Source) shutdownJob() (struct{}, error) {
	err := godcgm.Shutdown()
	// go-dcgm drops its reference even when the hostengine reports an error.
	s.inited.Store(false)
	return struct{}{}, err
}

// ensure connects if needed and allowed by the backoff.
func (s *Source) ensure(ctx context.Context) error {
	if s.closed {
		return cgocall.ErrClosed
	}
	if s.link.Up() {
		return nil
	}
	if err := s.link.Wait(s.now()); err != nil {
		return err
	}
	err := s.connect(ctx)
	if delay, first := s.link.Attempted(s.now(), err); err != nil {
		if first {
			s.log.Warn("dcgm unavailable", "mode", s.cfg.Mode, "err", err, "retry_in", delay)
		} else {
			s.log.Debug("dcgm reconnect failed", "err", err, "retry_in", delay)
		}
		return cgocall.Unavailable(err)
	}
	s.log.Info("dcgm connected", "mode", s.cfg.Mode, "address", s.cfg.RemoteAddress,
		"gpus", s.inv.inv.GPUs(), "entities", len(s.inv.inv.Entities))
	return nil
}

// connect (re)initialises go-dcgm and rebuilds inventory, groups and watches.
func (s *Source) connect(ctx context.Context) error {
	if s.inited.Load() {
		if _, err := cgocall.Call(ctx, s.w, "Shutdown", s.shutdownJob); err != nil {
			var ce *cgocall.CallError
			if errors.As(err, &ce) {
				return err
			}
			s.log.Debug("dcgm shutdown before reconnect failed", "err", err)
		}
	}
	s.watch = nil  // groups and watches died with the connection
	s.fabric = nil // ask again
	mode, args := godcgm.Embedded, []string(nil)
	if s.cfg.Mode == ModeRemote {
		addr, unix := remoteAddress(s.cfg.RemoteAddress)
		flag := "0"
		if unix {
			flag = "1"
		}
		mode, args = godcgm.Standalone, []string{addr, flag}
	}
	if _, err := cgocall.Call(ctx, s.w, "Init", func() (struct{}, error) {
		_, err := godcgm.Init(mode, args...)
		if err == nil {
			s.inited.Store(true)
		}
		return struct{}{}, err
	}); err != nil {
		return err
	}
	inv, err := s.loadInventory(ctx)
	if err != nil {
		return err
	}
	s.setInventory(inv)
	return s.applyWatches(ctx)
}

// failed records a failed call on a connected source: the connection is
// presumed broken and the next call reconnects after the backoff. Context
// cancellation by the caller is not the hostengine's fault and changes
// nothing.
func (s *Source) failed(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if delay, wasUp := s.link.Lost(s.now(), err); wasUp {
		s.log.Warn("dcgm connection lost", "err", err, "retry_in", delay)
	}
	return cgocall.Unavailable(err)
}

// connectionLost reports whether a failed DCGM call means the connection is
// gone rather than a problem with the request. Errors without a DCGM code
// (go-dcgm drops it on many calls) count as lost.
func connectionLost(err error) bool {
	var ce *cgocall.CallError
	if errors.As(err, &ce) {
		return true
	}
	var de *godcgm.Error
	if !errors.As(err, &de) {
		return true
	}
	switch int(de.Code) {
	case godcgm.DCGM_ST_CONNECTION_NOT_VALID, godcgm.DCGM_ST_UNINITIALIZED, godcgm.DCGM_ST_TIMEOUT,
		godcgm.DCGM_ST_INIT_ERROR, godcgm.DCGM_ST_GENERIC_ERROR:
		return true
	}
	return false
}

// first reports whether key is new, so that a condition is logged once per
// source rather than on every collection.
func (s *Source) first(key string) bool {
	if s.logged[key] {
		return false
	}
	s.logged[key] = true
	return true
}

func (s *Source) name(kind string) string {
	s.seq++
	return fmt.Sprintf("gpu-exporter-%s-%d-%d", kind, os.Getpid(), s.seq)
}
