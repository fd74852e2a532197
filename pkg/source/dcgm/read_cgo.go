//go:build cgo && linux

package dcgm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// readLevel reads every field of one level for all its entities in one
// call. If DCGM rejects the call for a reason other than a lost connection,
// it falls back to one call per entity, so one entity cannot blank the
// others.
func (s *Source) readLevel(ctx context.Context, rc *readCall, sample *source.Sample) error {
	vals, err := cgocall.Call(ctx, s.w, "EntitiesGetLatestValues", func() ([]godcgm.FieldValue_v2, error) {
		return godcgm.EntitiesGetLatestValues(rc.entities, rc.fieldIDs, 0)
	})
	if err == nil {
		s.fill(rc.spec, sample, vals)
		return nil
	}
	if connectionLost(err) {
		return err
	}
	if s.first("read-level-" + rc.spec.kind.String()) {
		s.log.Warn("dcgm bulk read failed; reading entities one by one", "level", rc.spec.kind.String(), "err", err)
	}
	for _, e := range rc.entities {
		vals, err := cgocall.Call(ctx, s.w, "EntityGetLatestValues", func() ([]godcgm.FieldValue_v1, error) {
			return godcgm.EntityGetLatestValues(e.EntityGroupId, e.EntityId, rc.fieldIDs)
		})
		if err != nil {
			var ce *cgocall.CallError
			if errors.As(err, &ce) {
				return err
			}
			// Fails again on every collection: one line per entity per
			// minute, with the count of the others.
			if s.log.Enabled(ctx, slog.LevelDebug) {
				s.logs.Debug("entity-read-"+strconv.FormatUint(entityRef{uint(e.EntityGroupId), e.EntityId}.key(), 10),
					"dcgm entity read failed", "entity_group", e.EntityGroupId.String(), "entity", e.EntityId, "err", err)
			}
			continue
		}
		row, ok := s.plan.rows[entityRef{uint(e.EntityGroupId), e.EntityId}.key()]
		if !ok {
			continue
		}
		for i := range vals {
			v := &vals[i]
			if col, ok := rc.spec.cols[uint16(v.FieldID)]; ok {
				sample.Set(row, col, translate(rawOfV1(v)))
			}
		}
	}
	return nil
}

// fill stores values into the sample. DCGM returns them in any order, so
// each value finds its row and column by entity and field id.
func (s *Source) fill(spec *readSpec, sample *source.Sample, vals []godcgm.FieldValue_v2) {
	for i := range vals {
		v := &vals[i]
		row, ok := s.plan.rows[entityRef{uint(v.EntityGroupId), v.EntityID}.key()]
		if !ok {
			continue
		}
		col, ok := spec.cols[uint16(v.FieldID)]
		if !ok {
			continue
		}
		if v.Status == godcgm.DCGM_ST_GPU_IS_LOST {
			s.stale = true
		}
		sample.Set(row, col, translate(rawOf(v)))
	}
}

// rawOf decodes a value without copying it: FieldValue_v2's accessors take
// the 4 KiB struct by value.
func rawOf(v *godcgm.FieldValue_v2) rawValue {
	return rawFromBytes(v.FieldType, v.Status, v.Value[:], v.StringValue)
}

func rawOfV1(v *godcgm.FieldValue_v1) rawValue {
	return rawFromBytes(v.FieldType, v.Status, v.Value[:], nil)
}

// rawFromBytes decodes a value's union bytes by field type; a string value
// go-dcgm already decoded (str) is taken as is. go-dcgm itself assumes
// little-endian hosts.
func rawFromBytes(fieldType uint, status int, value []byte, str *string) rawValue {
	r := rawValue{fieldType: fieldType, status: status}
	switch fieldType {
	case typeInt64, typeTimestamp:
		r.i = int64(binary.LittleEndian.Uint64(value[:8]))
	case typeDouble:
		r.f = math.Float64frombits(binary.LittleEndian.Uint64(value[:8]))
	case typeString:
		if str != nil {
			r.s = *str
		} else {
			r.s = cString(value)
		}
	}
	return r
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

type valuesSince struct {
	values []godcgm.FieldValue_v2
	next   time.Time
}

// readXIDs returns the XID events DCGM recorded since the previous read,
// oldest first. DCGM keeps every XID value for KeepAge; the values-since
// call returns each of them once.
func (s *Source) readXIDs(ctx context.Context) ([]source.XIDEvent, error) {
	ws := s.watch
	if ws == nil || !ws.xid {
		return nil, nil
	}
	since := s.xidSince
	got, err := cgocall.Call(ctx, s.w, "GetValuesSince", func() (valuesSince, error) {
		vals, next, err := godcgm.GetValuesSince(ws.xidGroup, ws.xidFields, since)
		return valuesSince{vals, next}, err
	})
	if err != nil {
		return nil, err
	}
	var events []source.XIDEvent
	latest := since
	for i := range got.values {
		v := &got.values[i]
		if v.FieldID != xidField || v.EntityGroupId != godcgm.FE_GPU {
			continue
		}
		val := translate(rawOf(v))
		if val.Kind != source.Int || val.Int <= 0 {
			continue
		}
		ts := time.UnixMicro(v.TS)
		if ts.Before(since) {
			continue // already reported
		}
		row, ok := s.plan.gpuRows[v.EntityID]
		if !ok {
			continue
		}
		events = append(events, source.XIDEvent{Entity: row, XID: val.Int, Time: ts})
		if !ts.Before(latest) {
			latest = ts.Add(time.Microsecond)
		}
	}
	slices.SortStableFunc(events, func(a, b source.XIDEvent) int {
		return cmp.Or(a.Time.Compare(b.Time), cmp.Compare(a.Entity, b.Entity))
	})
	// DCGM's next timestamp is one past the newest value; never go back.
	s.xidSince = latest
	if got.next.After(s.xidSince) {
		s.xidSince = got.next
	}
	return events, nil
}

// Health runs DCGM's health check on the GPUs (Config.Health must be set)
// and returns the incidents DCGM found since the previous check.
func (s *Source) Health(ctx context.Context) (*HealthReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cfg.Health {
		return nil, errors.New("dcgm: health watches are off (Config.Health)")
	}
	if err := s.ensure(ctx); err != nil {
		return nil, err
	}
	ws := s.watch
	if ws == nil || !ws.health {
		return nil, errors.New("dcgm: no health watches set (no GPUs, or DCGM refused them)")
	}
	resp, err := cgocall.Call(ctx, s.w, "HealthCheck", func() (godcgm.HealthResponse, error) {
		return godcgm.HealthCheck(ws.healthGroup)
	})
	if err != nil {
		if connectionLost(err) {
			return nil, s.failed(err)
		}
		return nil, err
	}
	report := &HealthReport{Overall: HealthStatus(resp.OverallHealth)}
	for _, in := range resp.Incidents {
		inc := Incident{
			GPU:       int(in.EntityInfo.EntityId),
			Subsystem: subsystemName(uint(in.System)),
			Status:    HealthStatus(in.Health),
			Code:      int(in.Error.Code),
			Message:   in.Error.Message,
		}
		if row, ok := s.plan.gpuRows[in.EntityInfo.EntityId]; ok && in.EntityInfo.EntityGroupId == godcgm.FE_GPU {
			inc.UUID = s.inv.inv.Entities[row].UUID
		}
		report.Incidents = append(report.Incidents, inc)
	}
	return report, nil
}
