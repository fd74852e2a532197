//go:build cgo && linux

package nvml

import (
	"reflect"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

func planSet(t *testing.T, ids ...uint16) []fields.Field {
	t.Helper()
	c := fields.MustNew()
	set := make([]fields.Field, len(ids))
	for i, id := range ids {
		f, ok := c.ByID(id)
		if !ok {
			t.Fatalf("no field %d", id)
		}
		set[i] = f
	}
	return set
}

// stepCols is what and cols of each step (a step's read func does not
// compare).
func stepCols(steps []step) map[string][]int {
	out := map[string][]int{}
	for _, s := range steps {
		out[s.what] = s.cols
	}
	return out
}

// A plan reads the fabric manager call and the NVLink counters only when
// the fabric is due, every other call on every Read, and counts what it
// gives; a field in column 0 is a column like any other.
func TestPlanSplitsFabric(t *testing.T) {
	t.Parallel()
	// GPU temperature, fabric manager status and error code, memory
	// temperature, NVLink CRC flit errors, FB used, a profiling field.
	p := makePlan(planSet(t, 150, 170, 171, 140, 409, 252, 1001))
	if want := map[string][]int{"GetTemperature(GPU)": {0}, "GetMemoryInfo": {-1, -1, 5, -1}}; !reflect.DeepEqual(stepCols(p.gpu), want) {
		t.Errorf("GPU steps %v, want %v", stepCols(p.gpu), want)
	}
	if want := map[string][]int{"GetGpuFabricInfo": {1, 2}}; !reflect.DeepEqual(stepCols(p.fabricGPU), want) {
		t.Errorf("fabric GPU steps %v, want %v", stepCols(p.fabricGPU), want)
	}
	if want := map[string][]int{"GetMemoryInfo": {-1, -1, 5, -1}}; !reflect.DeepEqual(stepCols(p.gi), want) {
		t.Errorf("GPU instance steps %v, want %v", stepCols(p.gi), want)
	}
	memTemp := fvItem{nvmlID: nvml.FI_DEV_MEMORY_TEMP, col: 3, kind: fvMemoryTemp}
	crc := fvItem{nvmlID: nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, col: 4, kind: fvPlain}
	if !reflect.DeepEqual(p.fv, []fvItem{memTemp}) || !reflect.DeepEqual(p.fvWithFabric, []fvItem{memTemp, crc}) {
		t.Errorf("field values %+v, with the fabric's %+v", p.fv, p.fvWithFabric)
	}
	if !reflect.DeepEqual(p.fabricCols, []int{1, 2, 4}) {
		t.Errorf("fabric columns %v, want [1 2 4]", p.fabricCols)
	}
	if p.xidCol != -1 || p.provided != 6 || len(p.dropped) != 1 || p.dropped[0].ID != 1001 {
		t.Errorf("xid column %d, provided %d, dropped %v; want -1, 6, [1001]", p.xidCol, p.provided, p.dropped)
	}

	// XID errors in column 0.
	p = makePlan(planSet(t, 230, 150))
	if p.xidCol != 0 || p.provided != 2 || len(p.dropped) != 0 {
		t.Errorf("xid column %d, provided %d, dropped %v; want 0, 2, none", p.xidCol, p.provided, p.dropped)
	}
}
