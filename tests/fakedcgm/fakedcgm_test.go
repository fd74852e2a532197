//go:build cgo && linux

package fakedcgm_test

import (
	"testing"
	"time"

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

// TestThroughGoDCGM drives the fake with go-dcgm directly.
func TestThroughGoDCGM(t *testing.T) {
	fakedcgm.Load(t)
	state := fakedcgm.State{
		Driver: "550.54.15",
		GPUs: []fakedcgm.GPU{
			{ID: 0, UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", BusID: "00000000:3B:00.0", FBMiB: 81559, Profiling: []int{1002}},
			{ID: 1, UUID: "GPU-b", Name: "NVIDIA A100", Status: "lost"},
		},
		Instances:        []fakedcgm.Instance{{EntityID: 3, GPU: 0, Instance: 1, Profile: "1g.10gb", ProfileID: 19, Slices: 1, UUID: "MIG-x"}},
		ComputeInstances: []fakedcgm.ComputeInstance{{EntityID: 9, GI: 3, Instance: 0, UUID: "MIG-x"}},
		Values:           []fakedcgm.Value{fakedcgm.Int(fakedcgm.EntityGPU, 0, 150, 44), fakedcgm.Str(fakedcgm.EntityGI, 3, 50, "1g.10gb custom")},
		XIDs:             []fakedcgm.XID{{GPU: 0, Code: 79, Time: time.UnixMicro(1000)}, {GPU: 0, Code: 48, Time: time.UnixMicro(2000)}},
		Faults:           []fakedcgm.Fault{{Func: "dcgmGroupCreate", Code: fakedcgm.StGenericError, Count: 1}},
	}
	env := fakedcgm.NewEnv(t, state)
	env.Setenv(t)
	if _, err := dcgm.Init(dcgm.Embedded); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := dcgm.Shutdown(); err != nil {
			t.Error(err)
		}
	}()

	ids, err := dcgm.GetSupportedDevices()
	if err != nil || len(ids) != 1 || ids[0] != 0 {
		t.Errorf("supported devices = %v, %v; want [0] (GPU 1 is lost)", ids, err)
	}
	if st := dcgm.GetGPUStatus(1); st != dcgm.EntityStatusLost {
		t.Errorf("GPU 1 status = %v, want lost", st)
	}
	h, err := dcgm.GetGPUInstanceHierarchy()
	if err != nil || h.Count != 2 || h.EntityList[0].Entity.EntityId != 3 || h.EntityList[1].Parent.EntityId != 3 ||
		h.EntityList[0].Info.GpuUuid != "GPU-a" {
		t.Errorf("hierarchy = %d entries %+v, %v", h.Count, h.EntityList[:h.Count], err)
	}

	// Live data needs no watch; cached data does.
	pairs := []dcgm.GroupEntityPair{{EntityGroupId: dcgm.FE_GPU, EntityId: 0}, {EntityGroupId: dcgm.FE_GPU_I, EntityId: 3}}
	live, err := dcgm.EntitiesGetLatestValues(pairs, []dcgm.Short{50, 54}, dcgm.DCGM_FV_FLAG_LIVE_DATA)
	if err != nil || *live[0].StringValue != "NVIDIA H100 80GB HBM3" || *live[2].StringValue != "1g.10gb custom" || *live[3].StringValue != "MIG-x" {
		t.Errorf("live values = %v", err)
	}
	cached, err := dcgm.EntitiesGetLatestValues(pairs[:1], []dcgm.Short{150}, 0)
	if err != nil || cached[0].Status != fakedcgm.StNotWatched {
		t.Errorf("unwatched value status = %d, %v; want NOT_WATCHED", cached[0].Status, err)
	}

	// The first group create fails (n=1), the second works.
	if _, err := dcgm.CreateGroup("g"); err == nil {
		t.Error("injected failure did not happen")
	}
	group, err := dcgm.CreateGroup("g")
	if err != nil {
		t.Fatal(err)
	}
	if err := dcgm.AddEntityToGroup(group, dcgm.FE_GPU, 0); err != nil {
		t.Fatal(err)
	}
	fg, err := dcgm.FieldGroupCreate("f", []dcgm.Short{150, 230})
	if err != nil {
		t.Fatal(err)
	}
	if err := dcgm.WatchFieldsWithGroupEx(fg, group, 1e6, 30, 0); err != nil {
		t.Fatal(err)
	}
	cached, err = dcgm.EntitiesGetLatestValues(pairs[:1], []dcgm.Short{150}, 0)
	if err != nil || cached[0].Status != 0 || cached[0].Int64() != 44 {
		t.Errorf("watched value = %d status %d, %v; want 44", cached[0].Int64(), cached[0].Status, err)
	}
	xfg, err := dcgm.FieldGroupCreate("x", []dcgm.Short{230})
	if err != nil {
		t.Fatal(err)
	}
	vals, next, err := dcgm.GetValuesSince(group, xfg, time.UnixMicro(1500))
	if err != nil || len(vals) != 1 || vals[0].Int64() != 48 || next != time.UnixMicro(2001) {
		t.Errorf("values since = %d values, next %v, %v; want XID 48 and next 2001µs", len(vals), next, err)
	}

	// A profiling field the group's GPU lacks cannot be watched.
	pfg, err := dcgm.FieldGroupCreate("p", []dcgm.Short{1001})
	if err != nil {
		t.Fatal(err)
	}
	if err := dcgm.WatchFieldsWithGroupEx(pfg, group, 1e6, 30, 0); err == nil {
		t.Error("watching an unsupported profiling field succeeded")
	}

	calls := env.Calls(t)
	if calls.Count["dcgmGroupCreate"] != 2 || calls.Sessions != 1 || calls.ActiveWatches != 1 || calls.ActiveGroups != 1 ||
		calls.ActiveFieldGroups != 3 || len(calls.Watches) != 1 || calls.Watches[0].FreqMicros != 1e6 {
		t.Errorf("calls = %+v", calls)
	}

	// The hostengine going down breaks the connection for good.
	state.Down = true
	env.Write(t, state)
	if _, err := dcgm.GetSupportedDevices(); err == nil {
		t.Error("call succeeded with the hostengine down")
	}
	state.Down = false
	env.Write(t, state)
	if _, err := dcgm.GetSupportedDevices(); err == nil {
		t.Error("call succeeded on a connection broken earlier")
	}
}
