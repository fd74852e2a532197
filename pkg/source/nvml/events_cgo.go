//go:build cgo && linux

package nvml

import (
	"context"
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// maxEventsPerRead bounds the events drained from one GPU per Read; the
// rest wait for the next Read.
const maxEventsPerRead = 256

// applyXIDs records the XID events of one GPU in the sample and sets its
// last-XID value.
func (s *Source) applyXIDs(sample *source.Sample, g *gpuInfo, x *xidState, xids []int64) {
	if x == nil || x.set == nil {
		return
	}
	for _, code := range xids {
		sample.XIDs = append(sample.XIDs, source.XIDEvent{Entity: g.row, XID: code, Time: sample.Time})
		x.last = code
	}
	if s.plan.xidCol >= 0 {
		sample.Set(g.row, s.plan.xidCol, source.IntValue(x.last))
	}
}

// registerEvents creates an XID event set for every GPU without one, once
// Watch was called. A GPU whose driver has no XID events gets an empty
// state, logged once, and reads DCGM_FI_DEV_XID_ERRORS as Blank.
func (s *Source) registerEvents(ctx context.Context) error {
	if !s.watching {
		return nil
	}
	for _, g := range s.gpus {
		if s.xid[g.entity.UUID] != nil {
			continue
		}
		dev := g.dev
		set, err := cgocall.Call(ctx, s.w, "RegisterEvents", func() (nvml.EventSet, error) { return s.registerJob(dev) })
		if err != nil {
			var ce *cgocall.CallError
			if errors.As(err, &ce) || ctx.Err() != nil {
				return err
			}
			if s.first("xid-" + g.entity.UUID) {
				s.log.Warn("nvml XID events unavailable", "gpu", g.index, "uuid", g.entity.UUID, "err", err)
			}
		}
		s.xid[g.entity.UUID] = &xidState{set: set}
	}
	return nil
}

func (s *Source) registerJob(dev nvml.Device) (nvml.EventSet, error) {
	types, ret := dev.GetSupportedEventTypes()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("GetSupportedEventTypes: %w", ret)
	}
	if types&nvml.EventTypeXidCriticalError == 0 {
		return nil, errors.New("the driver reports no XID events for this GPU")
	}
	set, ret := s.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("EventSetCreate: %w", ret)
	}
	if ret := dev.RegisterEvents(nvml.EventTypeXidCriticalError, set); ret != nvml.SUCCESS {
		_ = set.Free()
		return nil, fmt.Errorf("RegisterEvents: %w", ret)
	}
	return set, nil
}

// drainEvents takes the pending events of a GPU's set without waiting; it
// returns false if the GPU is lost.
func (res *gpuResult) drainEvents(set nvml.EventSet) bool {
	for range maxEventsPerRead {
		data, ret := set.Wait(0)
		switch ret {
		case nvml.SUCCESS:
			if data.EventType&nvml.EventTypeXidCriticalError != 0 {
				res.xids = append(res.xids, int64(data.EventData))
			}
		case nvml.ERROR_TIMEOUT:
			return true // none left
		case nvml.ERROR_GPU_IS_LOST:
			return false
		default:
			res.failures = append(res.failures, failure{"EventSetWait", ret})
			return true
		}
	}
	return true
}
