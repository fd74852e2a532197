package exposition

import (
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// colMode says how one sample column becomes series; it is decided once per
// field set, so that rendering a value never looks at names.
type colMode uint8

const (
	// modeScaled: the value times the field's scale (Prometheus naming).
	modeScaled colMode = iota
	// modeReasons: one 0/1 series per bitmask reason (Prometheus naming).
	modeReasons
	// modeRaw: the value as DCGM reported it (dcgm naming).
	modeRaw
	// modeRawXID: the raw value with err_code and err_msg labels (dcgm
	// naming, DCGM_FI_DEV_XID_ERRORS).
	modeRawXID
)

// column is the rendering plan of one exported sample column.
type column struct {
	col  int
	fam  family
	mode colMode
	// reasons are the ,reason="…" label pairs of a modeReasons column.
	reasons [][]byte
	// attribute returns the label pairs a modeRawXID value adds.
	attribute func(code int64) []byte
	// instancesOnly leaves out the GPU row of a GPU that has MIG instances
	// (dcgm naming, fields DCGM reads per instance): dcgm-exporter monitors
	// only the GPU instances of a MIG GPU (its default --devices "f":
	// "Monitor all GPUs if MIG is disabled, or all GPU instances if MIG is
	// enabled", pkg/cmd/app.go; devicemonitoring.monitorAllGPUInstances), so
	// DCGM_FI_DEV_FB_USED and the other instance-level fields have no GPU
	// row there, and summing them over a node must not count the GPU's
	// memory twice.
	instancesOnly bool
	// fromParent exports a GPU-level field on each GPU instance row of a
	// MIG GPU with the GPU's value (dcgm naming). dcgm-exporter watches the
	// GPU instances of a MIG GPU only, and DCGM answers a GPU-level field
	// watched on a GPU instance with the GPU's value ("If passed in an
	// instance or compute instance, then translate it to the corresponding
	// GPU id", DCGM dcgmlib/src/DcgmCacheManager.cpp, the practical entity
	// of a watch; NVML-mapped fields are remapped to the parent GPU in the
	// same file), so every family of the counters file appears once per
	// instance, with the instance's GPU_I_* and pod labels.
	fromParent bool
}

// refreshPlan rebuilds the column plan when the sample's field set differs
// from the one the plan was made for.
func (r *Renderer) refreshPlan(in Input) {
	set := in.Sample.Fields
	if in.Extra == r.planExtra && sameFields(set, r.planFields) {
		return
	}
	r.planFields = append(r.planFields[:0], set...)
	r.planExtra = in.Extra
	r.plan = r.plan[:0]
	for col := 0; col < len(set)-in.Extra; col++ {
		f := &set[col]
		if f.Kind == fields.Label {
			continue
		}
		r.plan = append(r.plan, r.scheme.column(f, col))
	}
}

// sameFields reports whether two field sets render the same columns.
func sameFields(a, b []fields.Field) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.ID != y.ID || x.Kind != y.Kind || x.Type != y.Type || x.DCGMType != y.DCGMType ||
			x.Name != y.Name || x.Help != y.Help || x.DCGMName != y.DCGMName || x.DCGMHelp != y.DCGMHelp {
			return false
		}
	}
	return true
}
