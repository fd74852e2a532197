//go:build cgo && linux

package fakedcgm_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

// programState is a node as a program written for real DCGM sees it: two
// NvLinked H100s on two NUMA nodes, one MIG instance on GPU 0, and a lost
// GPU.
func programState() fakedcgm.State {
	return fakedcgm.State{
		Driver: "550.54.15",
		GPUs: []fakedcgm.GPU{
			{ID: 0, UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", BusID: "00000000:3B:00.0", FBMiB: 81559, NVLinks: 18},
			{ID: 1, UUID: "GPU-b", Name: "NVIDIA H100 80GB HBM3", BusID: "00000000:86:00.0", FBMiB: 81559, NVLinks: 18, NUMA: 1},
			{ID: 2, UUID: "GPU-c", Name: "NVIDIA A100", Status: "lost", Listed: true},
		},
		Instances:        []fakedcgm.Instance{{EntityID: 3, GPU: 0, Instance: 1, Profile: "1g.10gb", ProfileID: 19, Slices: 1, UUID: "MIG-x", FBMiB: 9984}},
		ComputeInstances: []fakedcgm.ComputeInstance{{EntityID: 9, GI: 3, Instance: 0, UUID: "MIG-x"}},
		Values: []fakedcgm.Value{
			fakedcgm.Str(fakedcgm.EntityGPU, 0, 51, "NVIDIA"),
			fakedcgm.Str(fakedcgm.EntityGPU, 0, 53, "1650123456789"),
			fakedcgm.Str(fakedcgm.EntityGPU, 0, 85, "96.00.5E.00.01"),
			fakedcgm.Int(fakedcgm.EntityGPU, 0, 163, 700), // power limit default: a double field given as an int
			fakedcgm.Int(fakedcgm.EntityGPU, 0, 235, 4),   // PCIe max link generation
			fakedcgm.Int(fakedcgm.EntityGPU, 0, 236, 16),  // PCIe max link width
			fakedcgm.Int(fakedcgm.EntityGPU, 0, 150, 61),  // GPU temperature, a GPU-level field
			fakedcgm.Int(fakedcgm.EntityGI, 3, 150, 99),   // never seen: DCGM reads it at the GPU
			fakedcgm.Int(fakedcgm.EntityGPU, 0, 252, 30000),
			fakedcgm.Int(fakedcgm.EntityGI, 3, 252, 4200), // FB used is per instance
			fakedcgm.Float(fakedcgm.EntityGI, 3, 1005, 0.25),
			fakedcgm.Float(fakedcgm.EntityGPU, 0, 1005, 0.75),
			fakedcgm.Int(fakedcgm.EntityGPU, 0, 155, 312), // power usage: DCGM_FT_DOUBLE
		},
	}
}

func initDCGM(t *testing.T, s fakedcgm.State) *fakedcgm.Env {
	t.Helper()
	fakedcgm.Load(t)
	env := fakedcgm.NewEnv(t, s)
	env.Setenv(t)
	if _, err := dcgm.Init(dcgm.Embedded); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dcgm.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	return env
}

// TestFieldMetadata checks DcgmFieldGetById against DCGM's field table for
// every field the catalog exports: a program that asks DCGM which fields
// exist (dcgm-exporter does, before it watches anything) must not skip them.
func TestFieldMetadata(t *testing.T) {
	initDCGM(t, programState())
	cat := fields.MustNew()
	for _, f := range append(cat.All(), cat.Labels()...) {
		m, err := dcgm.FieldGetByID(dcgm.Short(f.ID))
		if err != nil {
			t.Errorf("FieldGetByID(%d %s): %v (add the field's row from DCGM's dcgmlib/src/dcgm_fields.cpp to facts[] in libdcgm/fakedcgm.c)", f.ID, f.DCGMName, err)
			continue
		}
		if m.FieldID != dcgm.Short(f.ID) || m.Tag == "" || m.Size > 8 {
			t.Errorf("FieldGetByID(%d %s) = %+v", f.ID, f.DCGMName, m)
		}
		if !strings.ContainsRune("dis", rune(m.FieldType)) {
			t.Errorf("FieldGetByID(%d %s) type %q, want d, i or s", f.ID, f.DCGMName, m.FieldType)
		}
		// A field the catalog reads on MIG instances must be one DCGM keeps
		// per instance: a GPU-level field read there is the GPU's value
		// again, and every instance row would repeat it.
		if f.Levels.Has(fields.LevelGPUInstance) && m.EntityLevel != dcgm.FE_GPU_I && m.EntityLevel != dcgm.FE_GPU_CI {
			t.Errorf("catalog reads %s (%d) per MIG instance, but DCGM keeps it at entity level %v", f.DCGMName, f.ID, m.EntityLevel)
		}
	}
	// Facts from DCGM's table (dcgmlib/src/dcgm_fields.cpp).
	for _, tc := range []struct {
		id    dcgm.Short
		typ   byte // DCGM_FT_*
		size  byte
		tag   string
		level dcgm.Field_Entity_Group
	}{
		{252, 'i', 8, "fb_used", dcgm.FE_GPU_CI},
		{150, 'i', 8, "gpu_temp", dcgm.FE_GPU},
		{155, 'd', 8, "power_usage", dcgm.FE_GPU},
		{1, 's', 0, "driver_version", dcgm.FE_NONE},
		{1005, 'd', 0, "dram_active", dcgm.FE_GPU_I},
	} {
		m, err := dcgm.FieldGetByID(tc.id)
		if err != nil || m.FieldType != tc.typ || m.Size != tc.size || m.Tag != tc.tag || m.EntityLevel != tc.level {
			t.Errorf("FieldGetByID(%d) = %+v, %v; want type %q size %d tag %q level %v", tc.id, m, err, tc.typ, tc.size, tc.tag, tc.level)
		}
	}
	if _, err := dcgm.FieldGetByID(1999); err == nil {
		t.Error("FieldGetByID(1999), an id DCGM has no row for, succeeded")
	}
}

// TestFieldMetadataNeedsInit: before dcgmInit and after dcgmShutdown the
// fields module is not initialized and DcgmFieldGetById returns NULL.
func TestFieldMetadataNeedsInit(t *testing.T) {
	fakedcgm.Load(t)
	env := fakedcgm.NewEnv(t, programState())
	env.Setenv(t)
	if _, err := dcgm.Init(dcgm.Embedded); err != nil {
		t.Fatal(err)
	}
	if _, err := dcgm.FieldGetByID(252); err != nil {
		t.Errorf("after Init: %v", err)
	}
	if err := dcgm.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if _, err := dcgm.FieldGetByID(252); err == nil {
		t.Error("FieldGetByID succeeded after Shutdown")
	}
	if dcgm.FieldsInit() != 0 {
		t.Error("DcgmFieldsInit failed")
	}
	if _, err := dcgm.FieldGetByID(252); err != nil {
		t.Errorf("after DcgmFieldsInit: %v", err)
	}
	dcgm.FieldsTerm()
}

// TestDeviceInfo drives go-dcgm's GetDeviceInfo, which reads the device
// attributes, watches the CPU affinity and PCIe fields, and reads the
// topology with its peers' bus ids.
func TestDeviceInfo(t *testing.T) {
	initDCGM(t, programState())
	d, err := dcgm.GetDeviceInfo(0)
	if err != nil {
		t.Fatal(err)
	}
	if d.DCGMSupported != "Yes" || d.UUID != "GPU-a" || d.Identifiers.Model != "NVIDIA H100 80GB HBM3" ||
		d.Identifiers.Brand != "NVIDIA" || d.Identifiers.Serial != "1650123456789" || d.Identifiers.Vbios != "96.00.5E.00.01" ||
		d.Identifiers.DriverVersion != "550.54.15" || d.PCI.BusID != "00000000:3B:00.0" || d.PCI.FBTotal != 81559 || d.Power != 700 {
		t.Errorf("device 0 = %+v", d)
	}
	if d.PCI.Bandwidth != 1969*16 {
		t.Errorf("PCIe bandwidth = %d MB/s, want gen 4 x16", d.PCI.Bandwidth)
	}
	if !strings.Contains(d.CPUAffinity, "0") || strings.Contains(d.CPUAffinity, "16") {
		t.Errorf("CPU affinity = %q, want NUMA node 0's CPUs 0-15", d.CPUAffinity)
	}
	if len(d.Topology) != 1 || d.Topology[0].GPU != 1 || d.Topology[0].BusID != "00000000:86:00.0" ||
		d.Topology[0].Link.PCIPaths() != "NV18" {
		t.Errorf("topology = %+v, want GPU 1 over 18 NvLinks", d.Topology)
	}

	lost, err := dcgm.GetDeviceInfo(2)
	if err != nil || lost.DCGMSupported != "No" {
		t.Errorf("lost GPU info = %+v, %v; want DCGMSupported No", lost, err)
	}
	if _, err := dcgm.GetDeviceInfo(7); err == nil {
		t.Error("GetDeviceInfo of an unknown GPU succeeded")
	}
	if _, err := dcgm.GetDeviceTopology(2); err == nil {
		t.Error("topology of a lost GPU succeeded")
	}
}

func TestNvLinkLinkStatus(t *testing.T) {
	initDCGM(t, programState())
	links, err := dcgm.GetNvLinkLinkStatus()
	if err != nil {
		t.Fatal(err)
	}
	up := map[uint]int{}
	for _, l := range links {
		if l.ParentType != dcgm.FE_GPU {
			t.Errorf("link %+v of a non-GPU parent; the fake has no NvSwitch", l)
		}
		if l.State == dcgm.LS_UP {
			up[l.ParentId]++
		}
	}
	if up[0] != 18 || up[1] != 18 || up[2] != 0 {
		t.Errorf("links up by GPU = %v, want 18, 18 and none on the lost GPU", up)
	}
}

func TestEntityGroupEntities(t *testing.T) {
	initDCGM(t, programState())
	for _, tc := range []struct {
		group dcgm.Field_Entity_Group
		want  []uint
	}{
		{dcgm.FE_GPU, []uint{0, 1, 2}},
		{dcgm.FE_GPU_I, []uint{3}},
		{dcgm.FE_GPU_CI, []uint{9}},
		{dcgm.FE_SWITCH, []uint{}},
	} {
		got, err := dcgm.GetEntityGroupEntities(tc.group)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("GetEntityGroupEntities(%v) = %v, %v; want %v", tc.group, got, err, tc.want)
		}
	}
}

// TestVersionMismatch: a struct with a version the API does not know is
// refused with DCGM_ST_VER_MISMATCH before the connection is looked at.
func TestVersionMismatch(t *testing.T) {
	initDCGM(t, programState())
	for _, tc := range []struct {
		sym      string
		takesGPU bool
	}{
		{"dcgmGetDeviceAttributes", true},
		{"dcgmGetDeviceTopology", true},
		{"dcgmGetNvLinkLinkStatus", false},
	} {
		for _, version := range []uint32{0, 3<<24 | 12, 9<<24 | 1024} {
			rc, err := fakedcgm.CallVersioned(tc.sym, tc.takesGPU, version)
			if err != nil || rc != dcgm.DCGM_ST_VER_MISMATCH {
				t.Errorf("%s(version %#x) = %d, %v; want DCGM_ST_VER_MISMATCH", tc.sym, version, rc, err)
			}
		}
	}
}

// TestMIGReadsFollowEntityLevel: a GPU-level field read on a GPU instance or
// compute instance is the parent GPU's value; instance-level fields are the
// instance's own; values come back in the field's type.
func TestMIGReadsFollowEntityLevel(t *testing.T) {
	initDCGM(t, programState())
	pairs := []dcgm.GroupEntityPair{
		{EntityGroupId: dcgm.FE_GPU, EntityId: 0},
		{EntityGroupId: dcgm.FE_GPU_I, EntityId: 3},
		{EntityGroupId: dcgm.FE_GPU_CI, EntityId: 9},
	}
	vals, err := dcgm.EntitiesGetLatestValues(pairs, []dcgm.Short{150, 252, 1005, 155}, dcgm.DCGM_FV_FLAG_LIVE_DATA)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		group dcgm.Field_Entity_Group
		field dcgm.Short
	}
	got := map[key]dcgm.FieldValue_v2{}
	for _, v := range vals {
		got[key{v.EntityGroupId, v.FieldID}] = v
	}
	for _, tc := range []struct {
		group dcgm.Field_Entity_Group
		field dcgm.Short
		want  float64
	}{
		{dcgm.FE_GPU, 150, 61},
		{dcgm.FE_GPU_I, 150, 61}, // GPU level: the parent's value, not the instance's 99
		{dcgm.FE_GPU_CI, 150, 61},
		{dcgm.FE_GPU, 252, 30000},
		{dcgm.FE_GPU_I, 252, 4200}, // compute-instance level: the instance's own
		{dcgm.FE_GPU_I, 1005, 0.25},
		{dcgm.FE_GPU_CI, 1005, 0.25}, // GPU-instance level: the compute instance's GPU instance
		{dcgm.FE_GPU_I, 155, 312},
	} {
		v, ok := got[key{tc.group, tc.field}]
		if !ok || v.Status != 0 {
			t.Errorf("%v field %d: missing or status %d", tc.group, tc.field, v.Status)
			continue
		}
		var x float64
		switch v.FieldType {
		case dcgm.DCGM_FT_INT64:
			x = float64(v.Int64())
		case dcgm.DCGM_FT_DOUBLE:
			x = v.Float64()
		}
		if x != tc.want {
			t.Errorf("%v field %d = %v, want %v", tc.group, tc.field, x, tc.want)
		}
	}
	if v := got[key{dcgm.FE_GPU, 155}]; v.FieldType != dcgm.DCGM_FT_DOUBLE {
		t.Errorf("power usage type %q, want DCGM_FT_DOUBLE as DCGM's field table says", rune(v.FieldType))
	}
	if v := got[key{dcgm.FE_GPU_CI, 150}]; v.EntityID != 9 {
		t.Errorf("value answers for entity %d, want the entity asked for (9)", v.EntityID)
	}
}
