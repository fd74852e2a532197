//go:build cgo && linux

package dcgm

import (
	"context"
	"errors"
	"strconv"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// watchState is what the source created on the current connection.
type watchState struct {
	groups      map[string]godcgm.GroupHandle // by entitiesKey
	groupList   []godcgm.GroupHandle
	fieldGroups []godcgm.FieldHandle
	watches     []watchPair
	// xid is set when XID events are watched on the GPUs.
	xid       bool
	xidGroup  godcgm.GroupHandle
	xidFields godcgm.FieldHandle
	// health is set when health watches are on.
	health      bool
	healthGroup godcgm.GroupHandle
}

type watchPair struct {
	group  godcgm.GroupHandle
	fields godcgm.FieldHandle
}

// readCall is a readSpec in go-dcgm's types, built once per plan.
type readCall struct {
	spec     *readSpec
	entities []godcgm.GroupEntityPair
	fieldIDs []godcgm.Short
	// cache holds the last values of a fabric read, by entity then field,
	// which samples repeat until the next one; nil before the first.
	cache []source.Value
}

// keep remembers the values a fabric read put into sample.
func (rc *readCall) keep(sample *source.Sample) {
	rc.cache = rc.cache[:0]
	for _, row := range rc.spec.rows {
		for _, id := range rc.spec.fieldIDs {
			rc.cache = append(rc.cache, sample.At(row, rc.spec.cols[id]))
		}
	}
}

// repeat puts the kept values into sample.
func (rc *readCall) repeat(sample *source.Sample) {
	i := 0
	for _, row := range rc.spec.rows {
		for _, id := range rc.spec.fieldIDs {
			sample.Set(row, rc.spec.cols[id], rc.cache[i])
			i++
		}
	}
}

// applyWatches replaces the groups and watches for the current set and
// inventory.
func (s *Source) applyWatches(ctx context.Context) error {
	if err := s.dropWatches(ctx); err != nil {
		return err
	}
	prof, err := s.profiling(ctx)
	if err != nil {
		return err
	}
	s.plan = makePlan(s.inv.inv, s.inv.refs, s.set, prof)
	s.reads = s.reads[:0]
	for i := range s.plan.reads {
		s.reads = append(s.reads, newReadCall(&s.plan.reads[i]))
	}
	for _, d := range s.plan.dropped {
		if s.first("drop-" + strconv.Itoa(int(d.field.ID)) + "-" + d.reason) {
			s.log.Info("field dropped", "field", d.field.DCGMName, "reason", d.reason, "gpus", d.gpus)
		}
	}
	ws := &watchState{groups: map[string]godcgm.GroupHandle{}}
	s.watch = ws // kept even if a step fails, so the next apply removes it
	freq := s.cfg.Interval.Microseconds()
	keepAge := s.cfg.KeepAge.Seconds()
	for _, spec := range s.plan.watches {
		freq, keepAge := freq, keepAge
		if spec.fabric {
			// Links and switches multiply series: their own, longer period.
			freq = s.cfg.FabricInterval.Microseconds()
			keepAge = max(keepAge, 3*s.cfg.FabricInterval.Seconds())
		}
		err := s.watchFields(ctx, ws, spec.entities, spec.fieldIDs, freq, keepAge)
		if err == nil {
			continue
		}
		if !s.refused(ctx, err) {
			return err
		}
		if !spec.profiling {
			// A hostengine older than the catalog refuses a group holding
			// a field it does not know; watch the rest without it.
			if err := s.watchEach(ctx, ws, spec.entities, spec.fieldIDs, freq, keepAge); err != nil {
				return err
			}
			continue
		}
		// DCGM refused a profiling combination (not supported, or more
		// than one pass): those fields stay Blank until the next re-watch.
		if s.first("prof-watch-" + idsKey(spec.fieldIDs)) {
			s.log.Warn("profiling fields dropped", "fields", spec.fieldIDs, "err", err)
		}
	}
	if len(s.plan.gpus) == 0 {
		return nil
	}
	// XID events: the field keeps every value for KeepAge so that Read can
	// fetch all of them since the previous read.
	if err := s.watchFields(ctx, ws, s.plan.gpus, []uint16{xidField}, freq, keepAge); err != nil {
		return err
	}
	ws.xid = true
	ws.xidGroup = ws.groups[entitiesKey(s.plan.gpus)]
	ws.xidFields = ws.fieldGroups[len(ws.fieldGroups)-1]
	if s.xidSince.IsZero() {
		s.xidSince = s.now()
	}
	if s.cfg.Health {
		g := ws.groups[entitiesKey(s.plan.gpus)]
		if _, err := cgocall.Call(ctx, s.w, "HealthSet", func() (struct{}, error) {
			return struct{}{}, godcgm.HealthSet(g, godcgm.DCGM_HEALTH_WATCH_ALL)
		}); err != nil {
			var ce *cgocall.CallError
			if errors.As(err, &ce) {
				return err
			}
			if s.first("health-set") {
				s.log.Warn("dcgm health watches unavailable", "err", err)
			}
		} else {
			ws.health, ws.healthGroup = true, g
		}
	}
	return nil
}

func newReadCall(spec *readSpec) readCall {
	rc := readCall{spec: spec}
	for _, e := range spec.entities {
		rc.entities = append(rc.entities, godcgm.GroupEntityPair{EntityGroupId: godcgm.Field_Entity_Group(e.group), EntityId: e.id})
	}
	for _, id := range spec.fieldIDs {
		rc.fieldIDs = append(rc.fieldIDs, godcgm.Short(id))
	}
	return rc
}

// watchFields watches ids on entities, creating or reusing their groups.
func (s *Source) watchFields(ctx context.Context, ws *watchState, entities []entityRef, ids []uint16, freq int64, keepAge float64) error {
	g, err := s.entityGroup(ctx, ws, entities)
	if err != nil {
		return err
	}
	shorts := make([]godcgm.Short, len(ids))
	for i, id := range ids {
		shorts[i] = godcgm.Short(id)
	}
	name := s.name("fields")
	fg, err := cgocall.Call(ctx, s.w, "FieldGroupCreate", func() (godcgm.FieldHandle, error) {
		return godcgm.FieldGroupCreate(name, shorts)
	})
	if err != nil {
		return err
	}
	ws.fieldGroups = append(ws.fieldGroups, fg)
	if _, err := cgocall.Call(ctx, s.w, "WatchFields", func() (struct{}, error) {
		// keepSamples 0: bounded by age only.
		return struct{}{}, godcgm.WatchFieldsWithGroupEx(fg, g, freq, keepAge, 0)
	}); err != nil {
		return err
	}
	ws.watches = append(ws.watches, watchPair{g, fg})
	return nil
}

// refused reports whether err, from a failed watch, is DCGM refusing it
// while the connection still works (rather than a lost connection or a
// blocked call).
func (s *Source) refused(ctx context.Context, err error) bool {
	var ce *cgocall.CallError
	if errors.As(err, &ce) {
		return false
	}
	if connectionLost(err) {
		// go-dcgm drops the DCGM code of a failed watch: a simple call
		// tells a refusal from a lost connection.
		if _, perr := cgocall.Call(ctx, s.w, "GetSupportedDevices", godcgm.GetSupportedDevices); perr != nil {
			return false
		}
	}
	return true
}

// watchEach watches ids in halves after DCGM refused them together, down to
// single ids, so that only the ids the hostengine refuses are dropped (each
// logged once) and the rest are watched in O(log n) groups.
func (s *Source) watchEach(ctx context.Context, ws *watchState, entities []entityRef, ids []uint16, freq int64, keepAge float64) error {
	if len(ids) == 1 {
		if s.first("refused-" + strconv.Itoa(int(ids[0]))) {
			s.log.Warn("field dropped: the DCGM hostengine refuses to watch it (a DCGM release older than the field?)", "field", ids[0])
		}
		return nil
	}
	mid := len(ids) / 2
	for _, half := range [][]uint16{ids[:mid], ids[mid:]} {
		err := s.watchFields(ctx, ws, entities, half, freq, keepAge)
		if err == nil {
			continue
		}
		if !s.refused(ctx, err) {
			return err
		}
		if err := s.watchEach(ctx, ws, entities, half, freq, keepAge); err != nil {
			return err
		}
	}
	return nil
}

// entityGroup returns the DCGM group of entities, creating it once per
// connection and entity set.
func (s *Source) entityGroup(ctx context.Context, ws *watchState, entities []entityRef) (godcgm.GroupHandle, error) {
	key := entitiesKey(entities)
	if g, ok := ws.groups[key]; ok {
		return g, nil
	}
	name := s.name("entities")
	g, err := cgocall.Call(ctx, s.w, "CreateGroup", func() (godcgm.GroupHandle, error) { return godcgm.CreateGroup(name) })
	if err != nil {
		return g, err
	}
	ws.groupList = append(ws.groupList, g)
	for _, e := range entities {
		if _, err := cgocall.Call(ctx, s.w, "AddEntityToGroup", func() (struct{}, error) {
			return struct{}{}, godcgm.AddEntityToGroup(g, godcgm.Field_Entity_Group(e.group), e.id)
		}); err != nil {
			return g, err
		}
	}
	ws.groups[key] = g
	return g, nil
}

// dropWatches removes what applyWatches created on this connection. Errors
// other than a blocked or timed-out call are ignored: the groups are gone
// or will go with the connection.
func (s *Source) dropWatches(ctx context.Context) error {
	ws := s.watch
	s.watch = nil
	if ws == nil {
		return nil
	}
	var ce *cgocall.CallError
	for _, p := range ws.watches {
		if _, err := cgocall.Call(ctx, s.w, "UnwatchFields", func() (struct{}, error) {
			return struct{}{}, godcgm.UnwatchFields(p.fields, p.group)
		}); errors.As(err, &ce) {
			return err
		}
	}
	for _, fg := range ws.fieldGroups {
		if _, err := cgocall.Call(ctx, s.w, "FieldGroupDestroy", func() (struct{}, error) {
			return struct{}{}, godcgm.FieldGroupDestroy(fg)
		}); errors.As(err, &ce) {
			return err
		}
	}
	for _, g := range ws.groupList {
		if _, err := cgocall.Call(ctx, s.w, "DestroyGroup", func() (struct{}, error) {
			return struct{}{}, godcgm.DestroyGroup(g)
		}); errors.As(err, &ce) {
			return err
		}
	}
	return nil
}

// profiling asks each GPU which profiling fields it supports, when the set
// has any. A GPU that answers with an error supports none.
func (s *Source) profiling(ctx context.Context) (profSupport, error) {
	need := false
	for _, f := range s.set {
		need = need || f.Profiling
	}
	if !need {
		return nil, nil
	}
	prof := profSupport{}
	for _, e := range s.inv.inv.Entities {
		if e.Kind != source.GPU {
			continue
		}
		groups, err := cgocall.Call(ctx, s.w, "GetSupportedMetricGroups", func() ([]godcgm.MetricGroup, error) {
			return godcgm.GetSupportedMetricGroups(uint(e.GPU))
		})
		if err != nil {
			var ce *cgocall.CallError
			if errors.As(err, &ce) {
				return nil, err
			}
			s.logs.Debug("profiling-unsupported-"+strconv.Itoa(e.GPU), "dcgm profiling not supported", "gpu", e.GPU, "err", err)
			continue
		}
		ids := map[uint16]bool{}
		for _, g := range groups {
			for _, id := range g.FieldIds {
				ids[uint16(id)] = true
			}
		}
		prof[e.GPU] = ids
	}
	return prof, nil
}
