//go:build cgo && linux

package nvml

import (
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// gpuResult is what reading one GPU found besides its values.
type gpuResult struct {
	// lost is set when a call returned ERROR_GPU_IS_LOST; the GPU's values
	// are then incomplete and it leaves the inventory.
	lost     bool
	xids     []int64
	procs    []Process
	failures []failure
	// linkFailures are the link calls of a fabric read that failed.
	linkFailures []linkFailure
}

// failure is a call that failed for a GPU; its fields read Blank.
type failure struct {
	what string
	ret  nvml.Return
}

// readGPU reads every planned value of one GPU and its MIG instances into
// their rows of sample, drains its XID events and lists its processes; its
// links and fabric fields only when fabric is set. It runs on the worker
// and writes only to sample and its result, which the caller drops if the
// call timed out.
func (s *Source) readGPU(g *gpuInfo, events nvml.EventSet, p *plan, has features, sample *source.Sample, fabric bool) gpuResult {
	var res gpuResult
	n := len(sample.Fields)
	row := func(r int) []source.Value { return sample.Values[r*n : (r+1)*n] }
	var out [4]source.Value
	fv := p.fv
	if fabric {
		fv = p.fvWithFabric
	}
	if !res.readSteps(g.dev, p.gpu, has, row(g.row), out[:]) || !res.readFieldValues(g.dev, fv, row(g.row)) {
		res.lost = true
		return res
	}
	if fabric && !res.readSteps(g.dev, p.fabricGPU, has, row(g.row), out[:]) {
		res.lost = true
		return res
	}
	for _, m := range g.migs {
		if !res.readSteps(m.dev, p.gi, has, row(m.row), out[:]) {
			res.lost = true
			return res
		}
	}
	if fabric && !res.readLinks(g, p, sample) {
		res.lost = true
		return res
	}
	if events != nil && !res.drainEvents(events) {
		res.lost = true
		return res
	}
	if s.cfg.Processes && !res.readProcesses(g) {
		res.lost = true
	}
	return res
}

// readSteps runs steps on a device; it returns false if the GPU is lost.
func (res *gpuResult) readSteps(d nvml.Device, steps []step, has features, row, out []source.Value) bool {
	for i := range steps {
		st := &steps[i]
		clear(out)
		switch ret := st.read(d, has, out); ret {
		case nvml.SUCCESS:
			for k, c := range st.cols {
				if c >= 0 {
					row[c] = out[k]
				}
			}
		case nvml.ERROR_GPU_IS_LOST:
			return false
		default:
			res.failures = append(res.failures, failure{st.what, ret})
		}
	}
	return true
}

// readFieldValues reads all planned field values of a GPU in one call; it
// returns false if the GPU is lost.
func (res *gpuResult) readFieldValues(d nvml.Device, items []fvItem, row []source.Value) bool {
	if len(items) == 0 {
		return true
	}
	vals := make([]nvml.FieldValue, len(items))
	for i, it := range items {
		vals[i].FieldId = it.nvmlID
	}
	switch ret := d.GetFieldValues(vals); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_GPU_IS_LOST:
		return false
	default:
		res.failures = append(res.failures, failure{"GetFieldValues", ret})
		return true
	}
	for i, it := range items {
		v := &vals[i]
		switch ret := nvml.Return(v.NvmlReturn); ret {
		case nvml.SUCCESS:
			row[it.col] = decodeFieldValue(v, it.kind)
		case nvml.ERROR_GPU_IS_LOST:
			return false
		default:
			res.failures = append(res.failures, failure{"GetFieldValues", ret})
		}
	}
	return true
}

// readProcesses lists the compute processes of a GPU; it returns false if
// the GPU is lost.
func (res *gpuResult) readProcesses(g *gpuInfo) bool {
	infos, ret := g.dev.GetComputeRunningProcesses()
	switch ret {
	case nvml.SUCCESS:
	case nvml.ERROR_GPU_IS_LOST:
		return false
	default:
		res.failures = append(res.failures, failure{"GetComputeRunningProcesses", ret})
		return true
	}
	for _, pi := range infos {
		p := Process{GPU: g.index, UUID: g.entity.UUID, GPUInstance: -1, ComputeInstance: -1, PID: pi.Pid}
		if len(g.migs) > 0 {
			p.GPUInstance, p.ComputeInstance = instanceID(pi.GpuInstanceId), instanceID(pi.ComputeInstanceId)
		}
		// NVML_VALUE_NOT_AVAILABLE is all ones.
		if pi.UsedGpuMemory != math.MaxUint64 {
			p.UsedBytes, p.UsedKnown = pi.UsedGpuMemory, true
		}
		res.procs = append(res.procs, p)
	}
	return true
}

// instanceID is a MIG instance id, -1 for NVML's "invalid" all ones.
func instanceID(v uint32) int {
	if v == math.MaxUint32 {
		return -1
	}
	return int(v)
}
