package sim

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Source simulates the GPUs of a Scenario; it implements source.Source.
// Values are a function of the time elapsed since the start, read from the
// clock (time.Now unless WithClock).
type Source struct {
	scn   *Scenario
	now   func() time.Time
	start time.Time

	set []fields.Field
	// plan[e*len(set)+c] is the spec of column c for Scenario.entities[e];
	// nil where the entity has no value for the field.
	plan []*fieldSpec

	// fabricEvery is the fabric interval (WithFabricInterval); fabric
	// holds, per column, whether it is a fabric field.
	fabricEvery time.Duration
	fabric      []bool

	lastRead time.Duration // elapsed time of the last successful Read
	read     bool
	// energy is the energy model's millijoules since t=0, by scenario
	// entity, on GPUs with processes (energy.go).
	energy map[int]float64
	// closed is set by Close, which may run while a read the collector
	// gave up on (its deadline passed) is still in flight.
	closed atomic.Bool
}

var (
	_ source.Source         = (*Source)(nil)
	_ source.LostReporter   = (*Source)(nil)
	_ source.HealthReporter = (*Source)(nil)
)

// Option configures a Source.
type Option func(*Source)

// WithClock makes the Source read time from now instead of time.Now.
func WithClock(now func() time.Time) Option { return func(s *Source) { s.now = now } }

// WithFabricInterval makes the fabric's values (link and switch rows, and
// fields.Field.Fabric columns) and link states change only every d, as DCGM
// updates them every --collect.nvlink-interval: a Read between two updates
// gives the values of the last one. Zero (the default) updates them on
// every Read.
func WithFabricInterval(d time.Duration) Option { return func(s *Source) { s.fabricEvery = max(d, 0) } }

// WithStart sets the instant the simulation starts (elapsed time zero).
// The default is the clock's time when New is called.
func WithStart(t time.Time) Option { return func(s *Source) { s.start = t } }

// New returns a Source playing scn.
func New(scn *Scenario, opts ...Option) *Source {
	s := &Source{scn: scn, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if s.start.IsZero() {
		s.start = s.now()
	}
	return s
}

// Name returns "sim".
func (s *Source) Name() string { return "sim" }

// Scenario returns the scenario the Source plays.
func (s *Source) Scenario() *Scenario { return s.scn }

// Elapsed returns the simulated time: the time since the start, never
// negative. Unlike the source.Source methods it is safe to call from any
// goroutine (the fake kubelet asks it which pods to report).
func (s *Source) Elapsed() time.Duration { return s.elapsedAt(s.now()) }

func (s *Source) elapsedAt(now time.Time) time.Duration { return max(now.Sub(s.start), 0) }

// Pods returns the pods present now; see Scenario.PodsAt. It is safe to
// call from any goroutine.
func (s *Source) Pods() []Pod { return s.scn.PodsAt(s.Elapsed()) }

// Jobs returns the HPC jobs running now; see Scenario.JobsAt. It is safe
// to call from any goroutine (the job-mapping writer asks it).
func (s *Source) Jobs() []Job { return s.scn.JobsAt(s.Elapsed()) }

// Inventory returns the entities present now. The pointer changes only when
// a GPU is lost or comes back. During a simulated outage it fails with an
// error wrapping source.ErrUnavailable.
func (s *Source) Inventory(ctx context.Context) (*source.Inventory, error) {
	t, err := s.check(ctx)
	if err != nil {
		return nil, err
	}
	return s.scn.segmentAt(t).inv, nil
}

// Watch sets the fields later Reads return, in this column order. Fields
// the scenario gives no entity are Blank; an empty set, or one of which the
// scenario defines nothing, is an error.
func (s *Source) Watch(ctx context.Context, set []fields.Field) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return errClosed
	}
	if len(set) == 0 {
		return errors.New("sim: watch: no fields")
	}
	set = append([]fields.Field(nil), set...)
	n := len(set)
	plan := make([]*fieldSpec, len(s.scn.entities)*n)
	defined := false
	for e := range s.scn.entities {
		level := s.scn.entities[e].Kind.Level()
		for c := range set {
			if !set[c].Levels.Has(level) {
				continue
			}
			if sp := s.scn.specs[e][set[c].ID]; sp != nil {
				plan[e*n+c] = sp
				defined = true
			}
		}
	}
	if !defined && len(s.scn.entities) > 0 {
		return fmt.Errorf("sim: watch: scenario %s defines none of the %d fields", s.scn.name, n)
	}
	s.fabric = make([]bool, n)
	for c := range set {
		s.fabric[c] = set[c].Fabric
	}
	s.set, s.plan = set, plan
	return nil
}

// Read evaluates every watched field for every entity at the current
// elapsed time, and reports the XID faults that took effect since the
// previous successful Read.
func (s *Source) Read(ctx context.Context) (*source.Sample, error) {
	now := s.now()
	t, err := s.checkAt(ctx, now)
	if err != nil {
		return nil, err
	}
	if len(s.set) == 0 {
		return nil, errors.New("sim: read before watch")
	}
	seg := s.scn.segmentAt(t)
	smp := source.NewSample(now, seg.inv, s.set)
	n := len(s.set)
	tf := t // the time of the fabric's last update
	if s.fabricEvery > 0 {
		tf = t.Truncate(s.fabricEvery)
	}
	for r, e := range seg.rows {
		plan := s.plan[e*n : e*n+n]
		row := smp.Values[r*n : r*n+n]
		k := s.scn.entities[e].Kind
		onFabric := k == source.NVLink || k == source.NVSwitch
		for c, sp := range plan {
			switch {
			case sp == nil:
			case onFabric || s.fabric[c]:
				sp.fill(tf, &row[c])
			default:
				sp.fill(t, &row[c])
			}
		}
	}
	s.processUtilization(smp, seg, t)
	s.processEnergy(smp, seg, t)
	smp.XIDs = s.xidEvents(seg, t)
	smp.LinkStates = s.scn.linkStates(seg, tf)
	if !s.read || t > s.lastRead {
		s.lastRead, s.read = t, true
	}
	return smp, nil
}

// xidEvents returns the XID faults in (lastRead, t], or [0, t] on the first
// Read, for GPUs in the inventory.
func (s *Source) xidEvents(seg *segment, t time.Duration) []source.XIDEvent {
	xids := s.scn.xids
	i := 0
	if s.read {
		i = sort.Search(len(xids), func(i int) bool { return xids[i].at > s.lastRead })
	}
	var out []source.XIDEvent
	for ; i < len(xids) && xids[i].at <= t; i++ {
		row := seg.gpuRow[xids[i].gpu]
		if row < 0 {
			continue
		}
		out = append(out, source.XIDEvent{Entity: row, XID: xids[i].xid, Time: s.start.Add(xids[i].at)})
	}
	return out
}

// LostGPUs returns the GPUs a lost fault keeps out of the inventory now,
// by index, each since it left: the start of its absence, which
// overlapping or adjacent faults prolong (source.LostReporter). Like
// DCGM's and NVML's, the list holds a GPU until it comes back.
func (s *Source) LostGPUs() []source.LostGPU {
	t := s.Elapsed()
	var out []source.LostGPU
	for g := range s.scn.timeline[0].gpuRow {
		if since, ok := s.scn.lostSince(g, t); ok {
			out = append(out, source.LostGPU{GPU: g, UUID: s.scn.entities[g].UUID, Since: s.start.Add(since)})
		}
	}
	return out
}

// HealthIncidents returns the incidents of the health faults in force now,
// for GPUs in the inventory, in the scenario's order
// (source.HealthReporter). During a simulated outage it fails as Read does.
func (s *Source) HealthIncidents(ctx context.Context) ([]source.HealthIncident, error) {
	t, err := s.check(ctx)
	if err != nil {
		return nil, err
	}
	seg := s.scn.segmentAt(t)
	// Empty, not nil, when every check passes: source.HealthReporter's
	// "every watched subsystem passed", which dcgm naming writes as
	// DCGM_EXP_GPU_HEALTH_STATUS 0 per check (nil is no answer).
	out := []source.HealthIncident{}
	for _, h := range s.scn.health {
		if !h.contains(t) || seg.gpuRow[h.gpu] < 0 {
			continue
		}
		out = append(out, source.HealthIncident{GPU: h.gpu, UUID: s.scn.entities[h.gpu].UUID, Subsystem: h.subsystem, Status: h.status})
	}
	return out, nil
}

// Close ends the simulation; later calls fail.
func (s *Source) Close() error {
	s.closed.Store(true)
	return nil
}

var errClosed = errors.New("sim: source closed")

func (s *Source) check(ctx context.Context) (time.Duration, error) {
	return s.checkAt(ctx, s.now())
}

// checkAt fails when ctx is done, the source closed, or an outage is on.
func (s *Source) checkAt(ctx context.Context, now time.Time) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if s.closed.Load() {
		return 0, errClosed
	}
	t := s.elapsedAt(now)
	if w, ok := s.scn.outageAt(t); ok {
		return 0, fmt.Errorf("sim: simulated outage from %s to %s: %w", w.from, w.until, source.ErrUnavailable)
	}
	return t, nil
}
