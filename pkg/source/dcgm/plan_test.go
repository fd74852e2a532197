package dcgm

import (
	"reflect"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

func catalogFields(t testing.TB, names ...string) []fields.Field {
	t.Helper()
	c := fields.MustNew()
	out := make([]fields.Field, len(names))
	for i, n := range names {
		f, ok := c.Lookup(n)
		if !ok {
			t.Fatalf("no field %s", n)
		}
		out[i] = f
	}
	return out
}

// planInventory is GPU 0 and GPU 1, and two MIG instances on GPU 1.
func planInventory() (*source.Inventory, []entityRef) {
	inv := &source.Inventory{Entities: []source.Entity{
		{Kind: source.GPU, GPU: 0},
		{Kind: source.GPU, GPU: 1},
		{Kind: source.GPUInstance, GPU: 1, GPUInstance: 1},
		{Kind: source.GPUInstance, GPU: 1, GPUInstance: 2},
	}}
	refs := []entityRef{{groupGPU, 0}, {groupGPU, 1}, {groupGPUI, 7}, {groupGPUI, 8}}
	return inv, refs
}

func TestPlanLevels(t *testing.T) {
	t.Parallel()
	inv, refs := planInventory()
	set := catalogFields(t, "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE")
	p := makePlan(inv, refs, set, nil)

	if len(p.reads) != 2 {
		t.Fatalf("reads = %d, want one per level", len(p.reads))
	}
	gpu, gi := p.reads[0], p.reads[1]
	if gpu.kind != source.GPU || !reflect.DeepEqual(gpu.fieldIDs, []uint16{150, 252, 155}) || !reflect.DeepEqual(gpu.rows, []int{0, 1}) {
		t.Errorf("GPU read = %+v", gpu)
	}
	if gi.kind != source.GPUInstance || !reflect.DeepEqual(gi.fieldIDs, []uint16{252}) || !reflect.DeepEqual(gi.rows, []int{2, 3}) {
		t.Errorf("GPU instance read = %+v", gi)
	}
	if gi.cols[252] != 1 || gpu.cols[155] != 2 {
		t.Errorf("columns: GI %v, GPU %v", gi.cols, gpu.cols)
	}
	want := []watchSpec{
		{entities: refs[:2], fieldIDs: []uint16{150, 252, 155}},
		{entities: refs[2:], fieldIDs: []uint16{252}},
	}
	if !reflect.DeepEqual(p.watches, want) {
		t.Errorf("watches = %+v, want %+v", p.watches, want)
	}
	if p.provided != 3 || len(p.dropped) != 0 {
		t.Errorf("provided %d, dropped %+v", p.provided, p.dropped)
	}
	if !reflect.DeepEqual(p.gpus, refs[:2]) || p.gpuRows[1] != 1 || p.rows[refs[3].key()] != 3 {
		t.Errorf("gpus %v, gpuRows %v, rows %v", p.gpus, p.gpuRows, p.rows)
	}
}

func TestPlanProfiling(t *testing.T) {
	t.Parallel()
	inv, refs := planInventory()
	set := catalogFields(t, "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES")
	cases := []struct {
		name     string
		prof     profSupport
		watches  []watchSpec
		provided int
		dropped  map[uint16][]int // field -> GPUs lacking it (nil: dropped everywhere)
	}{
		{
			name: "no profiling anywhere",
			watches: []watchSpec{
				{entities: refs[:2], fieldIDs: []uint16{150}},
			},
			provided: 1,
			dropped:  map[uint16][]int{1001: nil, 1002: nil, 1009: nil},
		},
		{
			name: "GPU 0 only",
			prof: profSupport{0: {1001: true, 1002: true, 1009: true}},
			watches: []watchSpec{
				{entities: refs[:2], fieldIDs: []uint16{150}},
				{entities: refs[:1], fieldIDs: []uint16{1001, 1002, 1009}, profiling: true},
			},
			provided: 4,
			dropped:  map[uint16][]int{1001: {1}, 1002: {1}, 1009: {1}},
		},
		{
			name: "different subsets",
			prof: profSupport{0: {1001: true, 1002: true}, 1: {1001: true}},
			watches: []watchSpec{
				{entities: refs[:2], fieldIDs: []uint16{150}},
				{entities: refs[:1], fieldIDs: []uint16{1001, 1002}, profiling: true},
				{entities: refs[1:2], fieldIDs: []uint16{1001}, profiling: true},
				{entities: refs[2:], fieldIDs: []uint16{1001}, profiling: true},
			},
			provided: 3,
			dropped:  map[uint16][]int{1002: {1}, 1009: nil},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := makePlan(inv, refs, set, tc.prof)
			if !reflect.DeepEqual(p.watches, tc.watches) {
				t.Errorf("watches =\n%+v\nwant\n%+v", p.watches, tc.watches)
			}
			if p.provided != tc.provided {
				t.Errorf("provided = %d, want %d", p.provided, tc.provided)
			}
			got := map[uint16][]int{}
			for _, d := range p.dropped {
				got[d.field.ID] = d.gpus
			}
			if !reflect.DeepEqual(got, tc.dropped) {
				t.Errorf("dropped = %v, want %v", got, tc.dropped)
			}
		})
	}
}

func TestPlanChunksLargeFieldGroups(t *testing.T) {
	t.Parallel()
	ids := make([]uint16, 300)
	for i := range ids {
		ids[i] = uint16(i + 1)
	}
	specs := chunk([]entityRef{{groupGPU, 0}}, ids, false)
	if len(specs) != 3 || len(specs[0].fieldIDs) != maxFieldsPerGroup || len(specs[2].fieldIDs) != 300-2*maxFieldsPerGroup {
		t.Errorf("chunks: %d", len(specs))
	}
}
