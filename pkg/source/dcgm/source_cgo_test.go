//go:build cgo && linux

package dcgm

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

func TestEntityGroupConstants(t *testing.T) {
	t.Parallel()
	if groupGPU != uint(godcgm.FE_GPU) || groupGPUI != uint(godcgm.FE_GPU_I) || groupGPUCI != uint(godcgm.FE_GPU_CI) ||
		groupSwitch != uint(godcgm.FE_SWITCH) || groupLink != uint(godcgm.FE_LINK) {
		t.Error("entity group constants differ from go-dcgm's")
	}
}

func TestInventory(t *testing.T) {
	h := start(t, node(), testConfig())
	inv, err := h.src.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h100 := source.Entity{Kind: source.GPU, GPU: 0, UUID: uuid0, Device: "nvidia0", Model: "NVIDIA H100 80GB HBM3",
		PCIBusID: "00000000:3B:00.0", MemoryBytes: 81559 << 20}
	a100 := source.Entity{Kind: source.GPU, GPU: 1, UUID: uuid1, Device: "nvidia3", Model: "NVIDIA A100-SXM4-40GB",
		PCIBusID: "00000000:5E:00.0", MemoryBytes: 40960 << 20}
	gi1 := a100
	gi1.Kind, gi1.MemoryBytes, gi1.GPUInstance, gi1.ComputeInstance, gi1.MIGProfile, gi1.MIGUUID =
		source.GPUInstance, 19968<<20, 1, -1, "3g.20gb", migA
	gi2 := a100
	gi2.Kind, gi2.MemoryBytes, gi2.GPUInstance, gi2.ComputeInstance, gi2.MIGProfile, gi2.MIGUUID =
		source.GPUInstance, 4864<<20, 2, -1, "1g.5gb", migB // UUID from its compute instance
	want := &source.Inventory{DriverVersion: "550.54.15", Entities: []source.Entity{h100, a100, gi1, gi2},
		MIGDevices: []source.MIGDevice{
			{GPU: 1, GPUInstance: 1, ComputeInstance: 0, Profile: "3g.20gb", UUID: migA}, // its GPU instance's UUID
			{GPU: 1, GPUInstance: 2, ComputeInstance: 0, Profile: "1g.5gb", UUID: migB},
		}}
	if !reflect.DeepEqual(inv, want) {
		t.Errorf("inventory =\n%+v\nwant\n%+v", inv, want)
	}

	// Unchanged hardware keeps the pointer, through reads and re-watches.
	h.watch("DCGM_FI_DEV_GPU_TEMP")
	s := h.read()
	again, _ := h.src.Inventory(context.Background())
	if s.Inventory != inv || again != inv {
		t.Error("inventory pointer changed without a change")
	}
}

// TestComputeInstances is issue 30's H200: GPU instance 2 (3g.71gb) split
// into compute instances 0 (1c.3g.71gb) and 1 (2c.3g.71gb), each a MIG
// device with its own UUID. The instance is one row, without a MIG UUID of
// its own, and both MIG devices are listed and answer for it; before the
// fix the second compute instance had no identity at all.
func TestComputeInstances(t *testing.T) {
	const (
		h200  = "GPU-2a2b3c4d-0000-1111-2222-333344445555"
		ciOne = "MIG-6e4d9b17-1d7b-5b2a-8a52-3a1f0c1d2e01"
		ciTwo = "MIG-6e4d9b17-1d7b-5b2a-8a52-3a1f0c1d2e02"
		whole = "MIG-6e4d9b17-1d7b-5b2a-8a52-3a1f0c1d2e03"
	)
	st := fakedcgm.State{
		Driver: "570.124.06",
		GPUs:   []fakedcgm.GPU{{ID: 0, UUID: h200, Name: "NVIDIA H200", BusID: "00000000:19:00.0", FBMiB: 143771}},
		Instances: []fakedcgm.Instance{
			{EntityID: 1, GPU: 0, Instance: 2, Profile: "3g.71gb", ProfileID: 2, Slices: 3, FBMiB: 71424},
			{EntityID: 2, GPU: 0, Instance: 1, Profile: "4g.71gb", ProfileID: 5, Slices: 4, FBMiB: 71424},
		},
		// dcgmi discovery -c lists them under their GPU instance as
		// "CI 0/1" entities (DCGM_FE_GPU_CI); profile ids are NVML's
		// NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE (0) and _2_SLICE (1).
		ComputeInstances: []fakedcgm.ComputeInstance{
			{EntityID: 10, GI: 1, Instance: 1, UUID: ciTwo, ProfileID: 1, Slices: 2},
			{EntityID: 11, GI: 1, Instance: 0, UUID: ciOne, ProfileID: 0, Slices: 1},
			{EntityID: 12, GI: 2, Instance: 0, UUID: whole, ProfileID: 0, Slices: 4},
		},
	}
	h := start(t, st, testConfig())
	inv, err := h.src.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(inv); !reflect.DeepEqual(got, []string{"gpu:0", "gi:0:1", "gi:0:2"}) {
		t.Fatalf("entities = %v", got)
	}
	split := inv.Entities[2]
	if split.ComputeInstance != -1 || split.MIGUUID != "" || split.MIGProfile != "3g.71gb" {
		t.Errorf("split instance = %+v, want a whole 3g.71gb without a MIG UUID", split)
	}
	if inv.Entities[1].MIGUUID != whole {
		t.Errorf("unsplit instance MIG UUID = %q, want %q", inv.Entities[1].MIGUUID, whole)
	}
	wantDevs := []source.MIGDevice{
		{GPU: 0, GPUInstance: 1, ComputeInstance: 0, Profile: "4g.71gb", UUID: whole},
		{GPU: 0, GPUInstance: 2, ComputeInstance: 0, Profile: "1c.3g.71gb", UUID: ciOne},
		{GPU: 0, GPUInstance: 2, ComputeInstance: 1, Profile: "2c.3g.71gb", UUID: ciTwo},
	}
	if !reflect.DeepEqual(inv.MIGDevices, wantDevs) {
		t.Errorf("MIG devices =\n%+v\nwant\n%+v", inv.MIGDevices, wantDevs)
	}
	var heldAs []string
	for _, v := range inv.HeldAs(&split) {
		heldAs = append(heldAs, v.MIGUUID)
	}
	if !reflect.DeepEqual(heldAs, []string{ciOne, ciTwo}) {
		t.Errorf("split instance held as %v, want both compute instances", heldAs)
	}
}

func TestInventoryMakesNoDCGMCall(t *testing.T) {
	h := start(t, node(), testConfig())
	h.watch("DCGM_FI_DEV_GPU_TEMP")
	h.read()
	before := h.env.Calls(t).Total()
	for range 10 {
		if _, err := h.src.Inventory(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if after := h.env.Calls(t).Total(); after != before {
		t.Errorf("Inventory made %d DCGM calls, want none", after-before)
	}
}

func TestReadValues(t *testing.T) {
	state := node()
	state.Values = []fakedcgm.Value{
		fakedcgm.Int("gpu", 0, 150, 45),        // °C
		fakedcgm.Float("gpu", 0, 155, 251.5),   // W
		fakedcgm.Int("gpu", 0, 203, 87),        // %
		fakedcgm.Int("gpu", 0, 252, 1024),      // MiB
		fakedcgm.Int("gpu", 0, 156, 123456789), // mJ
		fakedcgm.Int("gpu", 0, 112, 0x4|0x20),  // clock event bits
		fakedcgm.Float("gpu", 0, 1002, 0.75),   // ratio
		fakedcgm.Int("gpu", 1, 150, 38),        //
		fakedcgm.Int("gi", 7, 252, 512),        // MIG instance memory
		fakedcgm.Int("gi", 8, 252, 128),        //
		fakedcgm.Status("gpu", 1, 155, fakedcgm.StNoPermission),
	}
	h := start(t, state, testConfig())
	h.watch("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED",
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_PROF_SM_ACTIVE")
	s := h.read()

	cases := []struct {
		entity string
		field  uint16
		want   source.Value
	}{
		{"gpu:0", 150, source.IntValue(45)},
		{"gpu:0", 155, source.FloatValue(251.5)},
		{"gpu:0", 203, source.IntValue(87)},
		{"gpu:0", 252, source.IntValue(1024)},
		{"gpu:0", 156, source.IntValue(123456789)},
		{"gpu:0", 112, source.IntValue(0x24)},
		{"gpu:0", 1002, source.FloatValue(0.75)},
		{"gpu:1", 150, source.IntValue(38)},
		{"gpu:1", 155, source.Value{}},  // per-value error
		{"gpu:1", 203, source.Value{}},  // never sampled
		{"gpu:1", 1002, source.Value{}}, // no profiling on GPU 1
		{"gi:1:1", 252, source.IntValue(512)},
		{"gi:1:2", 252, source.IntValue(128)},
		{"gi:1:1", 150, source.Value{}}, // GPU-only field
	}
	for _, tc := range cases {
		if got := value(t, s, tc.entity, tc.field); got != tc.want {
			t.Errorf("%s field %d = %+v, want %+v", tc.entity, tc.field, got, tc.want)
		}
	}
	if len(s.XIDs) != 0 {
		t.Errorf("XIDs = %v, want none", s.XIDs)
	}

	// One latest-values call per level and collection.
	before := h.env.Calls(t).Count["dcgmEntitiesGetLatestValues"]
	h.read()
	if n := h.env.Calls(t).Count["dcgmEntitiesGetLatestValues"] - before; n != 2 {
		t.Errorf("latest-values calls per read = %d, want 2 (GPU and GPU instance levels)", n)
	}
}

func TestWatchParameters(t *testing.T) {
	cfg := testConfig()
	cfg.Interval = 5 * time.Second
	cfg.KeepAge = 40 * time.Second
	h := start(t, node(), cfg)
	h.watch("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED")
	calls := h.env.Calls(t)
	if len(calls.Watches) == 0 {
		t.Fatal("no watches")
	}
	var fieldSets [][]int
	for _, w := range calls.Watches {
		if w.FreqMicros != 5e6 || w.KeepAge != 40 || w.KeepSamples != 0 {
			t.Errorf("watch %+v: want 5s update, 40s keep age, unbounded samples", w)
		}
		fieldSets = append(fieldSets, w.Fields)
	}
	want := [][]int{{150, 252}, {252}, {230}}
	if !reflect.DeepEqual(fieldSets, want) {
		t.Errorf("watched field groups = %v, want %v (GPU level, GPU instance level, XID)", fieldSets, want)
	}
}

func TestBlankSentinels(t *testing.T) {
	h := start(t, node(), testConfig())
	h.watch("DCGM_FI_DEV_GPU_TEMP")
	for _, tc := range sentinelCases() {
		t.Run(tc.kind+"/"+tc.which, func(t *testing.T) {
			state := node()
			state.Values = []fakedcgm.Value{
				fakedcgm.Sentinel("gpu", 0, 150, tc.kind, tc.which),
				fakedcgm.Int("gpu", 1, 150, 40),
			}
			h.env.Write(t, state)
			s := h.read()
			if got := value(t, s, "gpu:0", 150); got.Kind != source.Blank {
				t.Errorf("%s:%s read as %+v, want Blank", tc.kind, tc.which, got)
			}
			if got := value(t, s, "gpu:1", 150); got != source.IntValue(40) {
				t.Errorf("other GPU = %+v, want 40", got)
			}
		})
	}
}

func TestProfilingUnsupportedDroppedOnce(t *testing.T) {
	state := node()
	state.Values = []fakedcgm.Value{fakedcgm.Float("gpu", 0, 1002, 0.5), fakedcgm.Float("gpu", 0, 1001, 0.25)}
	h := start(t, state, testConfig())
	h.watch("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES")
	calls := h.env.Calls(t)
	for range 5 {
		s := h.read()
		if got := value(t, s, "gpu:0", 1002); got != source.FloatValue(0.5) {
			t.Fatalf("GPU 0 SM active = %+v, want 0.5", got)
		}
		if got := value(t, s, "gpu:1", 1002); got.Kind != source.Blank {
			t.Fatalf("GPU 1 SM active = %+v, want Blank", got)
		}
		if got := value(t, s, "gi:1:1", 1001); got.Kind != source.Blank {
			t.Fatalf("MIG instance on GPU 1 graphics active = %+v, want Blank", got)
		}
	}
	after := h.env.Calls(t)
	for _, fn := range []string{"dcgmWatchFields", "dcgmProfGetSupportedMetricGroups"} {
		if after.Count[fn] != calls.Count[fn] {
			t.Errorf("%s called again during reads (%d -> %d)", fn, calls.Count[fn], after.Count[fn])
		}
	}
	// GR_ENGINE and SM_ACTIVE lack GPU 1; PCIE_TX_BYTES lacks every GPU.
	if n := h.log.count("field dropped"); n != 3 {
		t.Errorf("%d 'field dropped' log lines, want 3:\n%s", n, h.log)
	}
	for _, w := range after.Watches {
		if slices.Contains(w.Fields, 1002) && !reflect.DeepEqual(w.Entities, []string{"1:0"}) {
			t.Errorf("profiling watch on %v, want GPU 0 only", w.Entities)
		}
	}

	// A set of only unsupported fields cannot be provided at all.
	err := h.src.Watch(context.Background(), catalogFields(t, "DCGM_FI_PROF_PCIE_TX_BYTES"))
	if err == nil || !strings.Contains(err.Error(), "none of the 1 fields") {
		t.Errorf("Watch(unsupported only) = %v, want an error", err)
	}
}

func TestProfilingWatchRefused(t *testing.T) {
	state := node()
	state.Values = []fakedcgm.Value{fakedcgm.Int("gpu", 0, 150, 50), fakedcgm.Float("gpu", 0, 1002, 0.5)}
	state.Faults = []fakedcgm.Fault{{Func: fakedcgm.WatchProfiling, Code: fakedcgm.StProfilingMultiPass}}
	h := start(t, state, testConfig())
	h.watch("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_PROF_SM_ACTIVE")
	for range 3 {
		s := h.read()
		if got := value(t, s, "gpu:0", 150); got != source.IntValue(50) {
			t.Fatalf("plain field = %+v, want 50", got)
		}
		if got := value(t, s, "gpu:0", 1002); got.Kind != source.Blank {
			t.Fatalf("refused profiling field = %+v, want Blank", got)
		}
	}
	if n := h.env.Calls(t).Sessions; n != 1 {
		t.Errorf("%d connections: a refused profiling watch is no connection loss", n)
	}
	if n := h.log.count("profiling fields dropped"); n != 1 {
		t.Errorf("%d 'profiling fields dropped' lines, want 1:\n%s", n, h.log)
	}
}

func TestReconnect(t *testing.T) {
	cases := []struct {
		name     string
		mode     string
		address  string
		wantAddr string
		wantUnix int
	}{
		{name: "embedded", mode: ModeEmbedded, wantUnix: -1},
		{name: "remote tcp", mode: ModeRemote, address: "dcgm.example:5555", wantAddr: "dcgm.example:5555", wantUnix: 0},
		{name: "remote unix socket", mode: ModeRemote, address: "unix:///run/dcgm.sock", wantAddr: "/run/dcgm.sock", wantUnix: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state := node()
			state.Values = []fakedcgm.Value{fakedcgm.Int("gpu", 0, 150, 50)}
			cfg := testConfig()
			cfg.Mode, cfg.RemoteAddress = tc.mode, tc.address
			h := start(t, state, cfg)
			h.watch("DCGM_FI_DEV_GPU_TEMP")
			if got := value(t, h.read(), "gpu:0", 150); got != source.IntValue(50) {
				t.Fatalf("before: %+v", got)
			}
			calls := h.env.Calls(t)
			if calls.ConnectAddress != tc.wantAddr || calls.ConnectUnix != tc.wantUnix {
				t.Errorf("connected to %q unix=%d, want %q unix=%d", calls.ConnectAddress, calls.ConnectUnix, tc.wantAddr, tc.wantUnix)
			}

			down := state
			down.Down = true
			h.env.Write(t, down)
			if _, err := h.src.Read(context.Background()); !isUnavailable(err) {
				t.Fatalf("Read with hostengine down = %v, want ErrUnavailable", err)
			}
			if _, err := h.src.Inventory(context.Background()); !isUnavailable(err) {
				t.Errorf("Inventory with hostengine down = %v, want ErrUnavailable", err)
			}

			h.env.Write(t, state)
			s := h.readUntil("reconnect", func(*source.Sample) bool { return true })
			// The fake only returns watched fields: a value proves the
			// watches were re-created on the new connection.
			if got := value(t, s, "gpu:0", 150); got != source.IntValue(50) {
				t.Errorf("after reconnect: %+v, want 50", got)
			}
			after := h.env.Calls(t)
			if after.Sessions < 2 || after.ActiveWatches == 0 {
				t.Errorf("sessions %d, active watches %d: want a new connection with watches", after.Sessions, after.ActiveWatches)
			}
			if h.log.count("dcgm connection lost") != 1 {
				t.Errorf("want one 'connection lost' line:\n%s", h.log)
			}
		})
	}
}

func TestHostengineDownAtStart(t *testing.T) {
	state := node()
	state.Down = true
	h := start(t, state, testConfig())
	if _, err := h.src.Inventory(context.Background()); !isUnavailable(err) {
		t.Fatalf("Inventory = %v, want ErrUnavailable", err)
	}
	if err := h.src.Watch(context.Background(), catalogFields(t, "DCGM_FI_DEV_GPU_TEMP")); !isUnavailable(err) {
		t.Fatalf("Watch = %v, want ErrUnavailable", err)
	}
	state.Down = false
	state.Values = []fakedcgm.Value{fakedcgm.Int("gpu", 1, 150, 61)}
	h.env.Write(t, state)
	// The set given while down is applied on connect.
	s := h.readUntil("connect", func(*source.Sample) bool { return true })
	if got := value(t, s, "gpu:1", 150); got != source.IntValue(61) {
		t.Errorf("value = %+v, want 61", got)
	}
}

func TestHungCall(t *testing.T) {
	const timeout = 300 * time.Millisecond
	cfg := testConfig()
	cfg.CallTimeout = timeout
	state := node()
	state.Values = []fakedcgm.Value{fakedcgm.Int("gpu", 0, 150, 50)}
	h := start(t, state, cfg)
	h.watch("DCGM_FI_DEV_GPU_TEMP")
	h.read()

	hung := state
	hung.Faults = []fakedcgm.Fault{{Func: "dcgmEntitiesGetLatestValues", Hang: time.Minute}}
	h.env.Write(t, hung)
	begin := time.Now()
	_, err := h.src.Read(context.Background())
	if elapsed := time.Since(begin); elapsed > timeout+time.Second {
		t.Errorf("Read took %s with a hung call, want about %s", elapsed, timeout)
	}
	if !isUnavailable(err) {
		t.Fatalf("Read = %v, want ErrUnavailable", err)
	}
	h.eventually("the hung call to start", func() bool { return h.env.Calls(t).InFlight == 1 })

	goroutines := runtime.NumGoroutine()
	for range 50 {
		begin := time.Now()
		if _, err := h.src.Read(context.Background()); !isUnavailable(err) {
			t.Fatalf("Read while hung = %v, want ErrUnavailable", err)
		}
		if elapsed := time.Since(begin); elapsed > timeout {
			t.Fatalf("Read while hung took %s, want a fast failure", elapsed)
		}
		time.Sleep(time.Millisecond) // let the backoff elapse so reconnects are tried
	}
	if now := runtime.NumGoroutine(); now > goroutines {
		t.Errorf("goroutines grew from %d to %d while a call hung", goroutines, now)
	}

	// Rewriting the state ends the fake's hang; the source reconnects.
	h.env.Write(t, state)
	s := h.readUntil("recovery", func(*source.Sample) bool { return true })
	if got := value(t, s, "gpu:0", 150); got != source.IntValue(50) {
		t.Errorf("after recovery: %+v, want 50", got)
	}
	if h.env.Calls(t).Sessions < 2 {
		t.Error("no reconnect after the hung call")
	}
}

func TestGPULost(t *testing.T) {
	cases := []struct {
		name string
		lose func(*fakedcgm.State)
	}{
		{"marked lost", func(s *fakedcgm.State) { s.GPUs[1].Status = "lost" }},
		// Values report GPU_IS_LOST while the GPU is still listed: the
		// source asks DCGM for the GPU's status and drops it.
		{"lost but still listed", func(s *fakedcgm.State) { s.GPUs[1].Status, s.GPUs[1].Listed = "lost", true }},
		{"fell off the bus", func(s *fakedcgm.State) { s.GPUs = s.GPUs[:1]; s.Instances = nil; s.ComputeInstances = nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			state := node()
			state.Values = []fakedcgm.Value{fakedcgm.Int("gpu", 0, 150, 50), fakedcgm.Int("gpu", 1, 150, 51)}
			h := start(t, state, testConfig())
			h.watch("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED")
			first := h.read().Inventory

			lost := node()
			lost.Values = state.Values
			tc.lose(&lost)
			h.env.Write(t, lost)
			s := h.readUntil("inventory change", func(s *source.Sample) bool { return s.Inventory != first })
			if s.Inventory.GPUs() != 1 || len(s.Inventory.Entities) != 1 || s.Inventory.Entities[0].UUID != uuid0 {
				t.Errorf("inventory after loss = %+v, want GPU 0 only", s.Inventory.Entities)
			}
			if got := value(t, s, "gpu:0", 150); got != source.IntValue(50) {
				t.Errorf("remaining GPU = %+v, want 50", got)
			}
			gone := h.src.LostGPUs()
			if len(gone) != 1 || gone[0].GPU != 1 || gone[0].UUID != uuid1 || gone[0].Since.IsZero() {
				t.Errorf("LostGPUs = %+v, want GPU 1", gone)
			}
			if h.log.count("gpu lost") != 1 {
				t.Errorf("want one 'gpu lost' line:\n%s", h.log)
			}

			h.env.Write(t, state)
			h.readUntil("GPU back", func(s *source.Sample) bool { return s.Inventory.GPUs() == 2 })
			if gone := h.src.LostGPUs(); len(gone) != 0 {
				t.Errorf("LostGPUs after return = %+v, want none", gone)
			}
		})
	}
}

func TestXIDEvents(t *testing.T) {
	h := start(t, node(), testConfig())
	h.watch("DCGM_FI_DEV_XID_ERRORS")
	if s := h.read(); len(s.XIDs) != 0 {
		t.Fatalf("XIDs before any = %+v", s.XIDs)
	}

	now := time.Now().Add(time.Millisecond).Truncate(time.Microsecond)
	state := node()
	state.XIDs = []fakedcgm.XID{
		{GPU: 1, Code: 48, Time: now.Add(2 * time.Millisecond)},
		{GPU: 0, Code: 79, Time: now},
		{GPU: 0, Code: 13, Time: now.Add(time.Millisecond)},
	}
	h.env.Write(t, state)
	s := h.read()
	want := []source.XIDEvent{
		{Entity: 0, XID: 79, Time: now},
		{Entity: 0, XID: 13, Time: now.Add(time.Millisecond)},
		{Entity: 1, XID: 48, Time: now.Add(2 * time.Millisecond)},
	}
	if !reflect.DeepEqual(s.XIDs, want) {
		t.Errorf("XIDs = %+v, want %+v", s.XIDs, want)
	}
	// The last-value field still reads as the last XID.
	if got := value(t, s, "gpu:1", 230); got != source.IntValue(48) {
		t.Errorf("last XID of GPU 1 = %+v, want 48", got)
	}

	if s := h.read(); len(s.XIDs) != 0 {
		t.Errorf("XIDs reported twice: %+v", s.XIDs)
	}

	state.XIDs = append(state.XIDs, fakedcgm.XID{GPU: 1, Code: 94, Time: now.Add(10 * time.Millisecond)})
	h.env.Write(t, state)
	s = h.read()
	if len(s.XIDs) != 1 || s.XIDs[0].XID != 94 || s.XIDs[0].Entity != 1 {
		t.Errorf("new XIDs = %+v, want one 94 on GPU 1", s.XIDs)
	}
}

func TestDeviceSelection(t *testing.T) {
	cfg := testConfig()
	cfg.GPUs = []int{1, 5}
	state := node()
	state.GPUs = append(state.GPUs, fakedcgm.GPU{ID: 2, UUID: uuid2, Name: "NVIDIA H100 80GB HBM3", Minor: 2, FBMiB: 81559})
	h := start(t, state, cfg)
	h.watch("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED")
	inv, err := h.src.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range inv.Entities {
		keys = append(keys, e.Key())
	}
	if want := []string{"gpu:1", "gi:1:1", "gi:1:2"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("entities = %v, want %v", keys, want)
	}
	for _, w := range h.env.Calls(t).Watches {
		for _, e := range w.Entities {
			if strings.HasPrefix(e, "1:") && e != "1:1" {
				t.Errorf("watch on unselected GPU entity %s", e)
			}
		}
	}
	h.read()
	if n := h.log.count("selected GPU not present"); n != 1 {
		t.Errorf("%d 'selected GPU not present' lines, want 1", n)
	}
}

func TestPerEntityFallback(t *testing.T) {
	state := node()
	state.Values = []fakedcgm.Value{fakedcgm.Int("gpu", 0, 150, 50), fakedcgm.Int("gpu", 1, 150, 51)}
	h := start(t, state, testConfig())
	h.watch("DCGM_FI_DEV_GPU_TEMP")
	h.read()

	// The bulk call fails with a request error and the first per-entity
	// call fails too: only that entity is blank.
	broken := state
	broken.Faults = []fakedcgm.Fault{
		{Func: "dcgmEntitiesGetLatestValues", Code: fakedcgm.StNotSupported},
		{Func: "dcgmEntityGetLatestValues", Code: fakedcgm.StNotSupported, Count: 1},
	}
	h.env.Write(t, broken)
	s := h.read()
	if got := value(t, s, "gpu:0", 150); got.Kind != source.Blank {
		t.Errorf("failed entity = %+v, want Blank", got)
	}
	if got := value(t, s, "gpu:1", 150); got != source.IntValue(51) {
		t.Errorf("other entity = %+v, want 51", got)
	}
	if n := h.env.Calls(t).Sessions; n != 1 {
		t.Errorf("%d connections: a request error must not cause a reconnect", n)
	}
}

func TestConnectionErrorCode(t *testing.T) {
	state := node()
	state.Values = []fakedcgm.Value{fakedcgm.Int("gpu", 0, 150, 50)}
	h := start(t, state, testConfig())
	h.watch("DCGM_FI_DEV_GPU_TEMP")
	h.read()

	broken := state
	broken.Faults = []fakedcgm.Fault{{Func: "dcgmEntitiesGetLatestValues", Code: fakedcgm.StConnectionNotValid, Count: 1}}
	h.env.Write(t, broken)
	if _, err := h.src.Read(context.Background()); !isUnavailable(err) {
		t.Fatalf("Read = %v, want ErrUnavailable", err)
	}
	s := h.readUntil("reconnect", func(*source.Sample) bool { return true })
	if got := value(t, s, "gpu:0", 150); got != source.IntValue(50) {
		t.Errorf("after reconnect: %+v", got)
	}
	if n := h.env.Calls(t).Sessions; n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestHealth(t *testing.T) {
	cfg := testConfig()
	cfg.Health = true
	state := node()
	state.Health = []fakedcgm.HealthIncident{
		{GPU: 1, System: fakedcgm.HealthMemory, Result: fakedcgm.ResultFail, Code: 42, Message: "row remap failure"},
		{GPU: 0, System: fakedcgm.HealthThermal, Result: fakedcgm.ResultWarn, Code: 7, Message: "hot"},
	}
	h := start(t, state, cfg)
	h.watch("DCGM_FI_DEV_GPU_TEMP")
	report, err := h.src.Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := &HealthReport{Overall: HealthFail, Incidents: []Incident{
		{GPU: 1, UUID: uuid1, Subsystem: "memory", Status: HealthFail, Code: 42, Message: "row remap failure"},
		{GPU: 0, UUID: uuid0, Subsystem: "thermal", Status: HealthWarn, Code: 7, Message: "hot"},
	}}
	if !reflect.DeepEqual(report, want) {
		t.Errorf("health = %+v, want %+v", report, want)
	}
}

func TestHealthOff(t *testing.T) {
	h := start(t, node(), testConfig())
	if _, err := h.src.Health(context.Background()); err == nil {
		t.Error("Health without Config.Health succeeded")
	}
}

func TestOneSourcePerProcess(t *testing.T) {
	h := start(t, node(), testConfig())
	if _, err := New(testConfig(), nil); err == nil {
		t.Fatal("second New succeeded while a source is open")
	}
	if err := h.src.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.src.Read(context.Background()); !errors.Is(err, cgocall.ErrClosed) {
		t.Errorf("Read after Close = %v, want cgocall.ErrClosed", err)
	}
	again, err := New(testConfig(), nil)
	if err != nil {
		t.Fatalf("New after Close: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkFill(b *testing.B) {
	const gpus = 8
	set := catalogFields(b, "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL",
		"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK",
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE")
	inv := &source.Inventory{}
	var refs []entityRef
	for i := range gpus {
		inv.Entities = append(inv.Entities, source.Entity{Kind: source.GPU, GPU: i})
		refs = append(refs, entityRef{groupGPU, uint(i)})
	}
	prof := profSupport{}
	for i := range gpus {
		prof[i] = map[uint16]bool{1002: true, 1005: true}
	}
	s := &Source{plan: makePlan(inv, refs, set, prof)}
	spec := &s.plan.reads[0]
	vals := make([]godcgm.FieldValue_v2, 0, gpus*len(set))
	for _, e := range refs {
		for _, id := range spec.fieldIDs {
			v := godcgm.FieldValue_v2{EntityGroupId: godcgm.FE_GPU, EntityID: e.id, FieldID: godcgm.Short(id), FieldType: typeInt64}
			v.Value[0] = 42
			vals = append(vals, v)
		}
	}
	sample := source.NewSample(time.Now(), inv, set)
	b.ReportAllocs()
	for b.Loop() {
		s.fill(spec, sample, vals)
	}
}

// A hostengine older than the catalog refuses a field group holding a field
// it does not know (the GPU recovery action came with DCGM 4.5): the other
// fields are still watched and read, on the same connection, and the refused
// field is logged once and stays Blank.
func TestFieldUnknownToHostengine(t *testing.T) {
	state := node()
	state.Unknown = []int{1523}
	state.Values = []fakedcgm.Value{fakedcgm.Int("gpu", 0, 150, 50), fakedcgm.Int("gpu", 0, 203, 87), fakedcgm.Int("gpu", 0, 1523, 2)}
	h := start(t, state, testConfig())
	h.watch("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION", "DCGM_FI_DEV_GPU_UTIL")
	for range 3 {
		s := h.read()
		if got := value(t, s, "gpu:0", 150); got != source.IntValue(50) {
			t.Fatalf("temperature = %+v, want 50", got)
		}
		if got := value(t, s, "gpu:0", 203); got != source.IntValue(87) {
			t.Fatalf("utilization = %+v, want 87", got)
		}
		if got := value(t, s, "gpu:0", 1523); got.Kind != source.Blank {
			t.Fatalf("refused field = %+v, want Blank", got)
		}
	}
	if n := h.env.Calls(t).Sessions; n != 1 {
		t.Errorf("%d connections: a refused field is no connection loss", n)
	}
	if n := h.log.count("field dropped: the DCGM hostengine refuses to watch it (a DCGM release older than the field?)"); n != 1 {
		t.Errorf("%d 'field dropped' lines, want 1:\n%s", n, h.log)
	}
}
