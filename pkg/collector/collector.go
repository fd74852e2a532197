// Package collector runs the collection loop: on every interval it reads the
// source (with a deadline), joins each entity with the containers holding it,
// renders a new exposition page and swaps it in whole. Scrapes read the
// current page and never reach the source or the kubelet.
//
// Three parts, one file each: the loop (collector.go: tick, deadline,
// readiness, self-metrics in metrics.go), the join (join.go: attribution
// to pods and HPC jobs, cached until an input changes) and the events
// (events.go: XID errors, health incidents and lost GPUs, the same for
// every source). The Collector composes them.
package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/logthrottle"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// ErrReadInFlight is returned while an earlier, timed-out Read has not
// returned yet: the collector never stacks calls on a hung source.
var ErrReadInFlight = errors.New("previous source read still in flight")

// Config configures a Collector.
type Config struct {
	// Interval between collections.
	Interval time.Duration
	// Timeout bounds one source read; defaults to Interval.
	Timeout time.Duration
	// Fields is the set to watch.
	Fields []fields.Field
	// Labels are fields whose values label every series of their entity
	// (counters file "label" rows). Dcgm naming only.
	Labels []fields.Field
	// XIDErrorsCount and ClockEventsCount configure dcgm-exporter's window
	// counters; nil leaves them out. Dcgm naming only.
	XIDErrorsCount, ClockEventsCount *exposition.WindowCounter
	// GPUs, when not empty, limits the exported entities to these GPU
	// indices, with their MIG instances and links.
	GPUs []int
	// MaxSeries caps the GPU series on a page; 0 means no limit.
	MaxSeries int
	// Naming selects names, units, labels, extra watched fields and derived
	// families; DCGM tunes dcgm naming. The collector hands it the sample,
	// the join and the raw events through the renderer.
	Naming exposition.Naming
	DCGM   exposition.DCGMOptions
	// PodInfo adds pod UIDs and allowlisted pod labels to held series; nil
	// leaves them out.
	PodInfo PodInfo
	// Jobs attributes GPUs to HPC jobs besides (or instead of) pods; nil
	// leaves job labels out.
	Jobs JobAttribution
	// Processes attributes the processes on shared GPUs to containers
	// (gpu_container_* families); nil leaves it out.
	Processes ProcessAccounting
	// RequireGPUs makes a collection that finds no GPU leave the collector
	// not ready, with a warning: right for DCGM and NVML on a GPU node. The
	// simulator may declare no GPU and still be ready.
	RequireGPUs bool
}

func (c *Config) validate() error {
	if c.Interval <= 0 {
		return fmt.Errorf("collect interval must be positive, got %s", c.Interval)
	}
	if c.Timeout <= 0 {
		c.Timeout = c.Interval
	}
	if len(c.Fields) == 0 {
		return errors.New("no fields to collect")
	}
	if c.MaxSeries < 0 {
		return fmt.Errorf("max series must not be negative, got %d", c.MaxSeries)
	}
	for _, w := range []*exposition.WindowCounter{c.XIDErrorsCount, c.ClockEventsCount} {
		if w != nil && w.Window <= 0 {
			return fmt.Errorf("%s: window must be positive, got %s", w.Name, w.Window)
		}
	}
	for _, g := range c.GPUs {
		if g < 0 {
			return fmt.Errorf("negative GPU index %d", g)
		}
	}
	return nil
}

// Collector owns the loop and the current page: it ticks, reads the source
// with a deadline, hands the sample, the join and the events to the
// renderer, publishes the page, and keeps readiness and self-metrics. The
// join (join.go) and the events (events.go) are parts of their own.
type Collector struct {
	cfg    Config
	src    source.Source
	logger *slog.Logger
	m      *metrics

	page  atomic.Pointer[exposition.Page]
	ready atomic.Bool
	// noGPUs holds why the collector is not ready although collections
	// succeed (no GPU found, with RequireGPUs); nil otherwise.
	noGPUs atomic.Pointer[string]

	mu       sync.Mutex // serialises collections (Run and direct Collect calls)
	renderer *exposition.Renderer
	counters exposition.Counters // what to collect; a change takes effect at the next Watch
	watched  []fields.Field      // set currently watched; nil forces a Watch
	extra    int                 // trailing columns of watched that only feed window counters
	pending  chan readResult
	up       bool
	lastInv  *source.Inventory
	filter   gpuFilter

	join   join
	events events

	started    time.Time         // when the current collection started
	procFailed bool              // the last process accounting failed (logged once)
	procInv    *source.Inventory // inventory procIndex was built from
	procIndex  map[deviceKey]int // process accounting device -> entity
	energy     processes.EnergySplitter
	mig        migEnergy // MIG GPUs' energy split (migenergy.go)

	procLogs *logthrottle.Logger // failures of single GPUs in process accounting
}

type readResult struct {
	s   *source.Sample
	err error
}

// New returns a collector. Register its metrics on reg.
func New(cfg Config, src source.Source, attr Attribution, logger *slog.Logger, reg prometheus.Registerer) (*Collector, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := newMetrics(src.Name())
	compress := m.stages[stageCompress]
	c := &Collector{
		cfg: cfg, src: src, logger: logger, m: m,
		renderer: exposition.NewRenderer(exposition.Options{MaxSeries: cfg.MaxSeries, Naming: cfg.Naming, DCGM: cfg.DCGM,
			ObserveCompression: func(d time.Duration) { compress.Observe(d.Seconds()) }, RecycleBuffers: true, RenderOnDemand: true}),
		counters: exposition.Counters{Fields: cfg.Fields, Labels: cfg.Labels, XIDErrorsCount: cfg.XIDErrorsCount, ClockEventsCount: cfg.ClockEventsCount},
		filter:   newGPUFilter(cfg.GPUs),
		up:       true, // so that a first failure is logged as a change
		join:     join{pods: attr, podInfo: cfg.PodInfo, jobs: cfg.Jobs, m: m},
		events:   events{src: src, timeout: cfg.Timeout, logger: logger, m: m},
		procLogs: logthrottle.New(logger, logthrottle.Config{}),
	}
	if err := c.m.register(reg, cfg.Jobs != nil); err != nil {
		return nil, err
	}
	c.page.Store(c.renderer.Empty())
	return c, nil
}

// Encoder returns the encoder of the collector's pages, for the server to
// compress its self-metrics with the same writer.
func (c *Collector) Encoder() *exposition.Encoder { return c.renderer.Encoder() }

// Page returns the current page; never nil. Its renderer recycles
// buffers: Acquire the page before reading its bytes, Release it after.
func (c *Collector) Page() *exposition.Page { return c.page.Load() }

// notReadyYet is the /readyz body before the first good collection.
const notReadyYet = "not ready: no successful GPU collection yet"

// Ready reports whether a collection has succeeded since start and, with
// RequireGPUs, the last one found a GPU.
func (c *Collector) Ready() bool {
	ok, _ := c.Readiness()
	return ok
}

// Readiness is Ready with the reason when not ready.
func (c *Collector) Readiness() (bool, string) {
	if !c.ready.Load() {
		return false, notReadyYet
	}
	if r := c.noGPUs.Load(); r != nil {
		return false, *r
	}
	return true, ""
}

// SetFields replaces the watched set from the next collection on.
func (c *Collector) SetFields(set []fields.Field) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counters.Fields = set
	c.watched = nil
}

// SetCounters replaces the fields, label fields and window counters from
// the next collection on.
func (c *Collector) SetCounters(k exposition.Counters) error {
	for _, w := range []*exposition.WindowCounter{k.XIDErrorsCount, k.ClockEventsCount} {
		if w != nil && w.Window <= 0 {
			return fmt.Errorf("%s: window must be positive, got %s", w.Name, w.Window)
		}
	}
	if len(k.Fields) == 0 {
		return errors.New("no fields to collect")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counters = k
	c.watched = nil
	return nil
}

// Run collects at once, then every interval until ctx is done.
func (c *Collector) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		_ = c.Collect(ctx) // failures are reported through metrics and logs
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Collect performs one collection and publishes its page. On failure the
// page is emptied (no stale GPU values are served) and the error returned.
func (c *Collector) Collect(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := time.Now()
	c.started = start
	err := c.collect(ctx)
	if err != nil && ctx.Err() != nil {
		// Stopped by the exporter's shutdown, not failed: nothing is
		// counted or logged, and the page stays as it was for the scrapes
		// the shutdown still answers.
		return err
	}
	c.m.duration.Observe(time.Since(start).Seconds())
	c.m.collections.Inc()
	if err != nil {
		c.page.Store(c.renderer.Empty())
		c.m.series.Set(0)
		c.m.up.Set(0)
		if c.up {
			c.logger.Error("GPU collection failed; serving no GPU series until it recovers", "source", c.src.Name(), "err", err)
		}
		c.up = false
		return err
	}
	c.m.up.Set(1)
	c.m.lastSuccess.Set(float64(time.Now().UnixNano()) / 1e9)
	if !c.up {
		c.logger.Info("GPU collection recovered", "source", c.src.Name())
	}
	c.up = true
	c.ready.Store(true)
	return nil
}

func (c *Collector) collect(ctx context.Context) error {
	if c.watched == nil {
		set, extra := c.renderer.WatchSet(c.counters)
		if err := c.src.Watch(ctx, set); err != nil {
			c.m.errors.WithLabelValues("watch").Inc()
			return fmt.Errorf("watch fields: %w", err)
		}
		c.watched, c.extra = set, extra
	}
	t0 := time.Now()
	s, err := c.read(ctx)
	if err != nil {
		return err
	}
	t1 := time.Now()
	c.m.stages[stageRead].Observe(t1.Sub(t0).Seconds())
	if s.FabricErrors > 0 {
		// The source kept the links it knew; the collection goes on.
		c.m.errors.WithLabelValues("fabric").Add(float64(s.FabricErrors))
	}
	s = c.filter.apply(s)
	if s.Inventory != c.lastInv {
		if c.lastInv != nil {
			c.logger.Info("GPU inventory changed", "gpus_before", c.lastInv.GPUs(), "gpus_now", s.Inventory.GPUs(), "entities", len(s.Inventory.Entities))
		}
		c.lastInv = s.Inventory
		c.countEntities(s.Inventory)
	}
	holdings, version := c.join.apply(s.Inventory, c.filter.unfiltered(s.Inventory), c.join.snapshot())
	t2 := time.Now()
	c.m.stages[stageJoin].Observe(t2.Sub(t1).Seconds())
	in := exposition.Input{Sample: s, Holdings: holdings, HoldingsVersion: version, Extra: c.extra}
	in.Containers, in.Processes, in.Accounting = c.processUsage(ctx, s, c.renderer.WantsProcesses())
	if c.renderer.WantsHealth() {
		in.Lost, in.Health = c.events.health(ctx)
	}
	if c.renderer.WantsP2P() {
		in.P2P = c.events.p2p(ctx)
	}
	t3 := time.Now()
	c.renderer.Derive(&in, c.counters)
	p := c.renderer.Render(in)
	c.m.stages[stageRender].Observe(time.Since(t3).Seconds())
	c.page.Store(p)
	c.m.series.Set(float64(p.Series))
	if p.Dropped > 0 {
		c.m.dropped.Add(float64(p.Dropped))
	}
	return nil
}

// read calls the source with the collection timeout. A read that outlives
// the timeout is left to finish on its own goroutine; until it does, later
// collections fail fast rather than piling up calls.
func (c *Collector) read(ctx context.Context) (*source.Sample, error) {
	if c.pending != nil {
		select {
		case <-c.pending: // the hung read finally returned; its result is stale
			c.pending = nil
		default:
			c.m.errors.WithLabelValues("timeout").Inc()
			return nil, ErrReadInFlight
		}
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	ch := make(chan readResult, 1)
	go func() {
		s, err := c.src.Read(rctx)
		ch <- readResult{s, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("read %s source: %w", c.src.Name(), r.err) // stopping: Collect counts nothing
		}
		if r.err != nil {
			stage := "read"
			if errors.Is(r.err, context.DeadlineExceeded) {
				stage = "timeout"
			}
			c.m.errors.WithLabelValues(stage).Inc()
			return nil, fmt.Errorf("read %s source: %w", c.src.Name(), r.err)
		}
		if r.s == nil || r.s.Inventory == nil {
			c.m.errors.WithLabelValues("read").Inc()
			return nil, fmt.Errorf("read %s source: empty sample", c.src.Name())
		}
		return r.s, nil
	case <-rctx.Done():
		c.pending = ch
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read %s source: %w", c.src.Name(), context.Cause(ctx)) // stopping
		}
		c.m.errors.WithLabelValues("timeout").Inc()
		return nil, fmt.Errorf("read %s source: no answer within %s: %w", c.src.Name(), c.cfg.Timeout, rctx.Err())
	}
}

// countEntities sets gpu_exporter_gpus from a new inventory and, with
// RequireGPUs, the readiness it implies.
func (c *Collector) countEntities(inv *source.Inventory) {
	var n [numKinds]int
	for i := range inv.Entities {
		if k := int(inv.Entities[i].Kind); k < numKinds {
			n[k]++
		}
	}
	for k, g := range c.m.gpus {
		g.Set(float64(n[k]))
	}
	if !c.cfg.RequireGPUs {
		return
	}
	if n[source.GPU] > 0 {
		if c.noGPUs.Swap(nil) != nil {
			c.logger.Info("GPU source reports GPUs again; ready", "source", c.src.Name(), "gpus", n[source.GPU])
		}
		return
	}
	reason := "no GPUs found: the " + c.src.Name() + " source reports none"
	if all := c.filter.unfiltered(inv).GPUs(); all > 0 {
		reason = fmt.Sprintf("no GPUs found: the %s source reports %d, none of them selected by --collect.gpus", c.src.Name(), all)
	}
	if c.noGPUs.Swap(&reason) == nil {
		c.logger.Warn("GPU source reports no GPUs; /readyz answers 503 until one appears", "source", c.src.Name(), "reason", reason)
	}
}
