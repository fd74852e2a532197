//go:build cgo && linux

package nvml

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/logthrottle"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// Source reads GPU fields from NVML. Its methods may be called from several
// goroutines; NVML calls are serialised on one worker goroutine.
type Source struct {
	cfg Config
	lib nvml.Interface
	log *slog.Logger
	w   *cgocall.Worker
	now func() time.Time
	// inited says NVML is initialised; only jobs on the worker change it.
	inited atomic.Bool

	mu     sync.Mutex
	closed bool
	link   cgocall.Link // up, or down until the backoff passes

	has    features
	driver string

	set      []fields.Field
	plan     plan
	watching bool // Watch was called: XID event sets are wanted

	inv   *source.Inventory
	gpus  []*gpuInfo           // the GPUs of inv, in row order
	fab   fabricRead           // the last read of the fabric, repeated until due
	xid   map[string]*xidState // by GPU UUID; reset with each NVML session
	dead  map[string]bool      // GPUs lost in this NVML session, by UUID
	lost  source.LostTracker   // GPUs gone from the inventory
	procs []Process

	logged map[string]bool
	// denied are the GPU indices NVML refused a handle for
	// (NO_PERMISSION) at the last scan, logged when the set changes.
	denied []int

	// logs rate-limits warnings that can repeat on every fabric read;
	// nvlinkFailing says the last fabric read had failed link calls.
	logs          *logthrottle.Logger
	nvlinkFailing bool
}

var _ source.Source = (*Source)(nil)

// xidState is the XID event set of one GPU. set is nil when the GPU has no
// XID events; then DCGM_FI_DEV_XID_ERRORS stays Blank.
type xidState struct {
	set  nvml.EventSet
	last int64
}

// New returns an NVML source and tries to initialise NVML once. A missing
// library or driver does not fail New: Inventory and Read return errors
// wrapping source.ErrUnavailable (and ErrLibraryNotFound when the library is
// missing) until an attempt succeeds. New fails only on an invalid Config.
func New(cfg Config, logger *slog.Logger) (*Source, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	lib := cfg.Library
	if lib == nil {
		lib = nvml.New()
	}
	s := &Source{
		cfg:    cfg,
		lib:    lib,
		log:    logger.With("source", "nvml"),
		now:    time.Now,
		link:   cgocall.NewLink("nvml", cgocall.Retry{CallTimeout: cfg.CallTimeout, BackoffMin: cfg.BackoffMin, BackoffMax: cfg.BackoffMax}),
		xid:    map[string]*xidState{},
		dead:   map[string]bool{},
		logged: map[string]bool{},
		plan:   makePlan(nil),
	}
	s.logs = logthrottle.New(s.log, logthrottle.Config{})
	s.w = cgocall.NewWorker("nvml", cfg.CallTimeout, s.release)
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.ensure(context.Background()) // a failure is logged and retried later
	return s, nil
}

// Name returns "nvml".
func (s *Source) Name() string { return "nvml" }

// Inventory returns the GPUs and MIG instances NVML sees. It makes no NVML
// call while initialised: Read notices inventory changes.
func (s *Source) Inventory(ctx context.Context) (*source.Inventory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensure(ctx); err != nil {
		return nil, err
	}
	return s.inv, nil
}

// Watch replaces the watched field set and registers XID event sets on the
// GPUs. Fields NVML cannot give are dropped with one log line and read as
// Blank; Watch fails only if none of a non-empty set can be given. The set
// is kept when NVML is unavailable (the error then wraps
// source.ErrUnavailable) and used once it is.
func (s *Source) Watch(ctx context.Context, set []fields.Field) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return cgocall.ErrClosed
	}
	s.set = slices.Clone(set)
	s.plan = makePlan(s.set)
	s.fab = fabricRead{} // other columns: read the fabric at the next Read
	for _, f := range s.plan.dropped {
		if s.first("drop-" + strconv.Itoa(int(f.ID))) {
			s.log.Info("field dropped", "field", f.DCGMName, "reason", "not available through NVML")
		}
	}
	s.watching = true
	if len(s.set) > 0 && s.plan.provided == 0 {
		return fmt.Errorf("nvml: none of the %d fields can be read through NVML", len(s.set))
	}
	if err := s.ensure(ctx); err != nil {
		return err
	}
	if err := s.registerEvents(ctx); err != nil {
		return s.failed(err)
	}
	return nil
}

// Read returns the current value of every watched field for every entity,
// and the XID events NVML reported since the previous Read.
func (s *Source) Read(ctx context.Context) (*source.Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := !s.link.Up()
	if err := s.ensure(ctx); err != nil {
		return nil, err
	}
	if !fresh {
		// A fresh connection has just scanned the GPUs. Links whose state
		// query failed are asked again when the fabric is read.
		retryLinks := s.fab.due(s.inv, s.now(), s.cfg.FabricInterval)
		if err := s.rescan(ctx, retryLinks); err != nil {
			return nil, s.failed(err)
		}
	}
	sample := source.NewSample(s.now(), s.inv, s.set)
	if hasLinks(s.gpus) {
		sample.LinkStates = make([]source.LinkState, len(s.inv.Entities))
	}
	// The job gets its own copies: after a timeout it may still run while
	// Watch replaces the plan.
	plan, has := s.plan, s.has
	fabric := s.fab.due(s.inv, s.now(), s.cfg.FabricInterval)
	var lost []*gpuInfo
	var procs []Process
	linksFailed := false
	for _, g := range s.gpus {
		x := s.xid[g.entity.UUID]
		var events nvml.EventSet
		if x != nil {
			events = x.set
		}
		res, err := cgocall.Call(ctx, s.w, "read GPU", func() (gpuResult, error) {
			return s.readGPU(g, events, &plan, has, sample, fabric), nil
		})
		if err != nil {
			var ce *cgocall.CallError
			if errors.As(err, &ce) || ctx.Err() != nil {
				return nil, s.failed(err)
			}
			// A panic in the library: this GPU reads Blank.
			if s.first("read-panic-" + g.entity.UUID) {
				s.log.Error("nvml GPU read failed", "gpu", g.index, "uuid", g.entity.UUID, "err", err)
			}
			continue
		}
		if len(res.failures) > 0 && s.log.Enabled(ctx, slog.LevelDebug) {
			for _, f := range res.failures {
				if s.first("fail-" + g.entity.UUID + "-" + f.what) {
					s.log.Debug("nvml value unavailable", "gpu", g.index, "uuid", g.entity.UUID, "call", f.what, "err", f.ret.Error())
				}
			}
		}
		if res.lost {
			lost = append(lost, g)
			continue
		}
		if len(res.linkFailures) > 0 {
			linksFailed = true
			s.linkReadsFailed(g, res.linkFailures)
		}
		if fabric && len(g.failedLinks) > 0 {
			linksFailed = true
			s.linkScansFailed(g)
		}
		s.applyXIDs(sample, g, x, res.xids)
		procs = append(procs, res.procs...)
	}
	if fabric {
		s.fab.keep(sample, plan.fabricCols)
		s.fabricRead(sample, linksFailed)
	} else {
		s.fab.repeat(sample, plan.fabricCols)
	}
	if len(lost) > 0 {
		sample = s.dropLost(ctx, sample, lost)
	}
	if s.cfg.Processes {
		s.procs = procs
	}
	return sample, nil
}

// LostGPUs returns the GPUs that left the inventory while this source ran
// (ERROR_GPU_IS_LOST, or no longer listed) and have not come back, by index.
func (s *Source) LostGPUs() []LostGPU {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost.List()
}

// Processes returns the compute processes the last Read saw, by GPU, when
// Config.Processes is set; nil otherwise. They are not exported yet: the
// collector may later attribute them to pods.
func (s *Source) Processes() []Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.procs)
}

// Close frees the event sets, shuts NVML down and stops the worker. If an
// NVML call is still blocked, NVML is shut down when it returns.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.link.Down()
	sets := s.eventSets()
	s.xid = map[string]*xidState{}
	if s.inited.Load() {
		_, _ = cgocall.Call(context.Background(), s.w, "Shutdown", func() (struct{}, error) { return s.shutdownJob(sets) })
	}
	s.mu.Unlock()
	if !s.w.Close(s.cfg.CallTimeout) {
		return errors.New("nvml: an NVML call is still blocked; NVML is shut down when it returns")
	}
	return nil
}

// release runs on the worker goroutine when it stops.
func (s *Source) release() {
	if s.inited.Load() {
		_, _ = s.shutdownJob(nil)
	}
}

// shutdownJob frees event sets and shuts NVML down; it runs on the worker.
func (s *Source) shutdownJob(sets []nvml.EventSet) (struct{}, error) {
	for _, set := range sets {
		_ = set.Free() // the session ends anyway
	}
	ret := s.lib.Shutdown()
	s.inited.Store(false)
	if ret != nvml.SUCCESS {
		return struct{}{}, ret
	}
	return struct{}{}, nil
}

func (s *Source) eventSets() []nvml.EventSet {
	var sets []nvml.EventSet
	for _, x := range s.xid {
		if x.set != nil {
			sets = append(sets, x.set)
		}
	}
	return sets
}

// ensure initialises NVML if needed and allowed by the backoff.
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
			s.log.Warn("nvml unavailable", "err", err, "retry_in", delay)
		} else {
			s.log.Debug("nvml initialisation failed", "err", err, "retry_in", delay)
		}
		return cgocall.Unavailable(err)
	}
	s.log.Info("nvml initialised", "driver", s.driver, "gpus", s.inv.GPUs(), "entities", len(s.inv.Entities))
	return nil
}

// connect (re)initialises NVML and rebuilds the inventory and event sets.
func (s *Source) connect(ctx context.Context) error {
	if s.inited.Load() {
		sets := s.eventSets()
		if _, err := cgocall.Call(ctx, s.w, "Shutdown", func() (struct{}, error) { return s.shutdownJob(sets) }); err != nil {
			var ce *cgocall.CallError
			if errors.As(err, &ce) {
				return err
			}
			s.log.Debug("nvml shutdown before reinitialising failed", "err", err)
		}
	}
	// Event sets and lost marks belong to the NVML session.
	s.xid = map[string]*xidState{}
	s.dead = map[string]bool{}
	s.gpus = nil
	if _, err := cgocall.Call(ctx, s.w, "Init", s.initJob); err != nil {
		return err
	}
	has, err := cgocall.Call(ctx, s.w, "LookupSymbol", func() (features, error) { return probeFeatures(s.lib), nil })
	if err != nil {
		var ce *cgocall.CallError
		if errors.As(err, &ce) {
			return err
		}
		has = features{} // the oldest calls, which every supported driver has
	}
	s.has = has
	driver, err := cgocall.Call(ctx, s.w, "SystemGetDriverVersion", func() (string, error) {
		v, ret := s.lib.SystemGetDriverVersion()
		return validText(v), nonSuccess(ret)
	})
	if err != nil {
		var ce *cgocall.CallError
		if errors.As(err, &ce) {
			return err
		}
		if s.first("driver-version") {
			s.log.Warn("nvml driver version unavailable", "err", err)
		}
	}
	s.driver = driver
	// The scan also registers event sets once Watch was called.
	return s.rescan(ctx, false)
}

func (s *Source) initJob() (struct{}, error) {
	switch ret := s.lib.Init(); ret {
	case nvml.SUCCESS:
		s.inited.Store(true)
		return struct{}{}, nil
	default:
		return struct{}{}, initError(ret)
	}
}

// initError turns a failed nvmlInit into a sentence an operator can act on.
func initError(ret nvml.Return) error {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return ErrLibraryNotFound
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return fmt.Errorf("NVIDIA driver not loaded (%w)", ret)
	case nvml.ERROR_NO_PERMISSION:
		return fmt.Errorf("no permission to open the NVIDIA device files (%w)", ret)
	default:
		return ret
	}
}

// failed records a failed call on an initialised source: NVML is presumed
// broken and the next call reinitialises it after the backoff. Context
// cancellation by the caller is not NVML's fault and changes nothing.
func (s *Source) failed(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if delay, wasUp := s.link.Lost(s.now(), err); wasUp {
		s.log.Warn("nvml failed", "err", err, "retry_in", delay)
	}
	return cgocall.Unavailable(err)
}

// nonSuccess returns ret as an error, or nil for SUCCESS.
func nonSuccess(ret nvml.Return) error {
	if ret == nvml.SUCCESS {
		return nil
	}
	return ret
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

// features are NVML entry points newer than the oldest supported driver.
// go-nvml calls symbols it resolved lazily, so calling one the driver lacks
// would crash the process: each is looked up once per session.
type features struct {
	memoryV2           bool // nvmlDeviceGetMemoryInfo_v2 (R510+), with reserved memory
	clocksEventReasons bool // nvmlDeviceGetCurrentClocksEventReasons (R535+)
}

func probeFeatures(lib nvml.Interface) features {
	ext := lib.Extensions()
	if ext == nil {
		return features{}
	}
	has := func(sym string) bool { return ext.LookupSymbol(sym) == nil }
	return features{
		memoryV2:           has("nvmlDeviceGetMemoryInfo_v2"),
		clocksEventReasons: has("nvmlDeviceGetCurrentClocksEventReasons"),
	}
}
