//go:build cgo && linux

package dcgm

import (
	"slices"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

// fabricNode is a small HGX-like node: two GPUs with two NVLinks each,
// link l of GPU g wired to port g of NVSwitch l, GPU 1's link 1 down;
// switch ports report their far end (DCGM's switch-link fields 871-876).
func fabricNode() fakedcgm.State {
	s := fakedcgm.State{
		Driver: "550.54.15",
		GPUs: []fakedcgm.GPU{
			{ID: 0, UUID: uuid0, Name: "NVIDIA H100 80GB HBM3", BusID: "00000000:18:00.0", FBMiB: 81559, NVLinks: 2},
			{ID: 1, UUID: uuid1, Name: "NVIDIA H100 80GB HBM3", BusID: "00000000:2A:00.0", Minor: 1, FBMiB: 81559, NVLinks: 2},
		},
		Switches:   []fakedcgm.NVSwitch{{ID: 0, BusID: "00000000:05:00.0", Links: 2}, {ID: 1, BusID: "00000000:06:00.0", Links: 2}},
		LinkStates: []fakedcgm.LinkState{{Parent: 1, Index: 1, State: "down"}},
		Values: []fakedcgm.Value{
			fakedcgm.Int(fakedcgm.EntityGPU, 0, 150, 40),
			fakedcgm.Int(fakedcgm.EntityGPU, 1, 409, 77),
			fakedcgm.Int(fakedcgm.EntityLink, fakedcgm.GPULink(1, 1), 409, 1234),
			fakedcgm.Int(fakedcgm.EntitySwitch, 1, 858, 51),
			fakedcgm.Int(fakedcgm.EntityLink, fakedcgm.SwitchLink(1, 1), 870, 3),
		},
	}
	// Switch sw's port p serves link sw of GPU p.
	buses := []int64{0x18, 0x2A}
	for sw := range 2 {
		for p := range 2 {
			id := fakedcgm.SwitchLink(sw, p)
			s.Values = append(s.Values,
				fakedcgm.Int(fakedcgm.EntityLink, id, 871, 1), fakedcgm.Int(fakedcgm.EntityLink, id, 872, 0),
				fakedcgm.Int(fakedcgm.EntityLink, id, 873, buses[p]), fakedcgm.Int(fakedcgm.EntityLink, id, 874, 0),
				fakedcgm.Int(fakedcgm.EntityLink, id, 875, 0), fakedcgm.Int(fakedcgm.EntityLink, id, 876, int64(sw)))
		}
	}
	return s
}

func fabricConfig() Config {
	c := testConfig()
	c.FabricInterval = 20 * time.Millisecond
	return c
}

// fabricSteps stops the source's clock as if the fabric had just been
// read and returns next, which writes state and reads once the clock has
// moved on by interval, so that every call reads the fabric again.
func (h *harness) fabricSteps(interval time.Duration) (next func(fakedcgm.State) *source.Sample) {
	h.t.Helper()
	clock := time.Now()
	h.src.mu.Lock()
	h.src.now = func() time.Time { return clock }
	h.src.fabricReadAt, h.src.fabric.at = clock, clock
	h.src.mu.Unlock()
	return func(state fakedcgm.State) *source.Sample {
		h.t.Helper()
		h.env.Write(h.t, state)
		h.src.mu.Lock()
		clock = clock.Add(interval)
		h.src.mu.Unlock()
		return h.read()
	}
}

func keys(inv *source.Inventory) []string {
	var out []string
	for _, e := range inv.Entities {
		out = append(out, e.Key())
	}
	return out
}

// The inventory holds each GPU's links, the switches and their ports; the
// switches' port fields give every link its far end.
func TestFabricInventory(t *testing.T) {
	h := start(t, fabricNode(), fabricConfig())
	h.watch("DCGM_FI_DEV_GPU_TEMP")
	inv := h.read().Inventory
	want := []string{"gpu:0", "gpu:1", "link:0:0", "link:0:1", "link:1:0", "link:1:1", "switch:0", "switch:1",
		"swlink:0:0", "swlink:0:1", "swlink:1:0", "swlink:1:1"}
	if got := keys(inv); !slices.Equal(got, want) {
		t.Fatalf("entities %v\nwant %v", got, want)
	}
	byKey := map[string]source.Entity{}
	for _, e := range inv.Entities {
		byKey[e.Key()] = e
	}
	cases := []struct {
		key, peerType, peer string
	}{
		{"link:0:1", source.PeerNVSwitch, "1"},
		{"link:1:0", source.PeerNVSwitch, "0"},
		{"swlink:1:0", source.PeerGPU, "0"},
		{"swlink:0:1", source.PeerGPU, "1"},
	}
	for _, tc := range cases {
		if e := byKey[tc.key]; e.PeerType != tc.peerType || e.Peer != tc.peer {
			t.Errorf("%s peer %q %q, want %q %q", tc.key, e.PeerType, e.Peer, tc.peerType, tc.peer)
		}
	}
	if l := byKey["link:1:1"]; l.UUID != uuid1 || l.Device != "nvidia1" || l.PCIBusID != "00000000:2A:00.0" {
		t.Errorf("GPU 1's link lacks its GPU's identity: %+v", l)
	}
	if sw := byKey["switch:1"]; sw.PCIBusID != "00000000:06:00.0" {
		t.Errorf("switch 1 PCI bus id %q", sw.PCIBusID)
	}
}

// Link and switch fields are read per link and switch in watches of their
// own, updated every FabricInterval; link states come with the sample.
func TestFabricReads(t *testing.T) {
	cfg := fabricConfig()
	h := start(t, fabricNode(), cfg)
	h.watch("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS",
		"DCGM_FI_DEV_NVSWITCH_LINK_STATUS")
	s := h.readUntil("fabric values", func(s *source.Sample) bool {
		_, ok := value(t, s, "link:1:1", 409).Number()
		return ok
	})
	cases := []struct {
		key  string
		id   uint16
		want source.Value
	}{
		{"gpu:0", 150, source.IntValue(40)},
		{"gpu:1", 409, source.IntValue(77)},
		{"link:1:1", 409, source.IntValue(1234)},
		{"switch:1", 858, source.IntValue(51)},
		{"swlink:1:1", 870, source.IntValue(3)},
		{"link:1:1", 870, source.Value{}}, // a switch-port field on a GPU link
		{"swlink:1:1", 409, source.Value{}},
	}
	for _, tc := range cases {
		if got := value(t, s, tc.key, tc.id); got != tc.want {
			t.Errorf("%s field %d = %+v, want %+v", tc.key, tc.id, got, tc.want)
		}
	}
	states := map[string]source.LinkState{}
	for e := range s.Inventory.Entities {
		states[s.Inventory.Entities[e].Key()] = s.LinkState(e)
	}
	for k, want := range map[string]source.LinkState{"link:0:0": source.LinkUp, "link:1:1": source.LinkDown, "swlink:0:1": source.LinkUp, "gpu:0": source.LinkUnknown} {
		if states[k] != want {
			t.Errorf("%s state %d, want %d", k, states[k], want)
		}
	}
	fabricFreq, gpuFreq := cfg.FabricInterval.Microseconds(), cfg.Interval.Microseconds()
	for _, w := range h.env.Calls(t).Watches {
		fabric := slices.ContainsFunc(w.Entities, func(e string) bool { return e[0] == '3' || e[0] == '6' }) ||
			slices.Contains(w.Fields, 409)
		switch {
		case fabric && w.FreqMicros != fabricFreq:
			t.Errorf("fabric watch %+v updates every %dus, want %dus", w, w.FreqMicros, fabricFreq)
		case !fabric && w.FreqMicros != gpuFreq:
			t.Errorf("GPU watch %+v updates every %dus, want %dus", w, w.FreqMicros, gpuFreq)
		case fabric && slices.Contains(w.Fields, 150):
			t.Errorf("watch %+v mixes GPU and fabric fields", w)
		}
	}
}

// Between two fabric intervals, samples repeat the links' and switches'
// last values without asking DCGM; GPU fields are read every time.
func TestFabricReadInterval(t *testing.T) {
	cfg := fabricConfig()
	h := start(t, fabricNode(), cfg)
	h.watch("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS")
	h.readUntil("switch temperature", func(s *source.Sample) bool {
		return value(t, s, "switch:1", 858) == source.IntValue(51)
	})
	clock := time.Now()
	h.src.mu.Lock()
	h.src.now = func() time.Time { return clock }
	h.src.fabricReadAt = clock
	h.src.mu.Unlock()

	next := fabricNode()
	next.Values = append(next.Values, fakedcgm.Int(fakedcgm.EntitySwitch, 1, 858, 70), fakedcgm.Int(fakedcgm.EntityGPU, 0, 150, 45))
	h.env.Write(t, next)
	s := h.read()
	if got := value(t, s, "gpu:0", 150); got != source.IntValue(45) {
		t.Errorf("GPU temperature %+v, want the new 45", got)
	}
	if got := value(t, s, "switch:1", 858); got != source.IntValue(51) {
		t.Errorf("switch temperature %+v before the fabric interval passed, want the last read 51", got)
	}
	h.src.mu.Lock()
	clock = clock.Add(cfg.FabricInterval)
	h.src.mu.Unlock()
	if got := value(t, h.read(), "switch:1", 858); got != source.IntValue(70) {
		t.Errorf("switch temperature %+v after the fabric interval, want the new 70", got)
	}
}

// A switch that disappears leaves the inventory with its ports at the next
// fabric look; reads go on.
func TestSwitchDisappears(t *testing.T) {
	h := start(t, fabricNode(), fabricConfig())
	h.watch("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS", "DCGM_FI_DEV_NVSWITCH_LINK_STATUS")
	if got := keys(h.read().Inventory); !slices.Contains(got, "switch:0") || !slices.Contains(got, "swlink:0:1") {
		t.Fatalf("entities %v lack switch 0", got)
	}
	gone := fabricNode()
	gone.Switches = gone.Switches[1:]
	h.env.Write(t, gone)
	s := h.readUntil("switch 0 gone", func(s *source.Sample) bool {
		return !slices.Contains(keys(s.Inventory), "switch:0")
	})
	got := keys(s.Inventory)
	for _, k := range []string{"swlink:0:0", "swlink:0:1"} {
		if slices.Contains(got, k) {
			t.Errorf("port %s of the vanished switch still in %v", k, got)
		}
	}
	if !slices.Contains(got, "switch:1") || !slices.Contains(got, "link:0:0") {
		t.Errorf("entities %v lost more than switch 0", got)
	}
	if v := value(t, s, "switch:1", 858); v != source.IntValue(51) {
		t.Errorf("switch 1 temperature %+v after switch 0 left, want 51", v)
	}
}

// DCGM's NVLink health watch (DCGM_HEALTH_WATCH_NVLINK) reaches the
// collector as subsystem "nvlink", the gpu_health_status label value.
func TestNVLinkHealth(t *testing.T) {
	cfg := fabricConfig()
	cfg.Health = true
	state := fabricNode()
	state.Health = []fakedcgm.HealthIncident{{GPU: 1, System: fakedcgm.HealthNVLink, Result: fakedcgm.ResultFail, Code: 14, Message: "link 1 down"}}
	h := start(t, state, cfg)
	h.watch("DCGM_FI_DEV_GPU_TEMP")
	got, err := h.src.HealthIncidents(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []source.HealthIncident{{GPU: 1, UUID: uuid1, Subsystem: "nvlink", Status: source.HealthFail, Code: 14, Message: "link 1 down"}}
	if !slices.Equal(got, want) {
		t.Errorf("incidents %+v, want %+v", got, want)
	}
}

// One failed dcgmGetNvLinkLinkStatus keeps the links in the inventory (the
// same inventory, so nothing is re-watched and their series stay) with
// fresh field values and no states, counts each failure once in the
// sample and logs at most once a minute; the next call that works brings
// the states back, and only a call that works and no longer lists a link
// drops it.
func TestLinkStatusFailureKeepsLinks(t *testing.T) {
	cfg := fabricConfig()
	h := start(t, fabricNode(), cfg)
	h.watch("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL")
	h.readUntil("link values", func(s *source.Sample) bool {
		_, ok := value(t, s, "link:1:1", 409).Number()
		return ok
	})
	next := h.fabricSteps(cfg.FabricInterval)
	stateOf := func(s *source.Sample, key string) source.LinkState {
		t.Helper()
		for e := range s.Inventory.Entities {
			if s.Inventory.Entities[e].Key() == key {
				return s.LinkState(e)
			}
		}
		t.Fatalf("entity %s not in sample", key)
		return source.LinkUnknown
	}
	const failed = "dcgm NVLink status read failed; the links stay, their last states for one more fabric interval"
	failing := func(crc int64) fakedcgm.State {
		s := fabricNode()
		s.Faults = []fakedcgm.Fault{{Func: "dcgmGetNvLinkLinkStatus", Code: fakedcgm.StNVMLError}}
		s.Values = append(s.Values, fakedcgm.Int(fakedcgm.EntityLink, fakedcgm.GPULink(1, 1), 409, crc))
		return s
	}
	recovered := fabricNode()
	recovered.LinkStates = nil // GPU 1's link 1 is up again

	ok := next(fabricNode())
	inv := ok.Inventory
	if ok.FabricErrors != 0 || stateOf(ok, "link:1:1") != source.LinkDown || stateOf(ok, "link:0:0") != source.LinkUp {
		t.Fatalf("before the failure: %d fabric errors, link 1:1 state %d, link 0:0 state %d",
			ok.FabricErrors, stateOf(ok, "link:1:1"), stateOf(ok, "link:0:0"))
	}
	steps := []struct {
		name   string
		sample func() *source.Sample
		errors int
		crc    int64
		states map[string]source.LinkState
		logs   int
	}{
		// One failed read: the last states stand, as read before it.
		{"first failure", func() *source.Sample { return next(failing(1300)) }, 1, 1300,
			map[string]source.LinkState{"link:0:0": source.LinkUp, "link:1:1": source.LinkDown, "swlink:0:1": source.LinkUp}, 1},
		{"before the next fabric interval", h.read, 0, 1300,
			map[string]source.LinkState{"link:1:1": source.LinkDown}, 1},
		// Two in a row: the states are out of date and withdrawn.
		{"second failure, not logged again within the minute", func() *source.Sample { return next(failing(1400)) }, 1, 1400,
			map[string]source.LinkState{"link:1:1": source.LinkUnknown}, 1},
		{"works again", func() *source.Sample { return next(recovered) }, 0, 1234,
			map[string]source.LinkState{"link:0:0": source.LinkUp, "link:1:1": source.LinkUp, "swlink:0:1": source.LinkUp}, 1},
	}
	for _, st := range steps {
		s := st.sample()
		if s.Inventory != inv {
			t.Errorf("%s: inventory changed to %v", st.name, keys(s.Inventory))
			inv = s.Inventory
		}
		if s.FabricErrors != st.errors {
			t.Errorf("%s: %d fabric errors in the sample, want %d", st.name, s.FabricErrors, st.errors)
		}
		if got := value(t, s, "link:1:1", 409); got != source.IntValue(st.crc) {
			t.Errorf("%s: link 1:1 CRC errors %+v, want the fresh %d", st.name, got, st.crc)
		}
		for k, want := range st.states {
			if got := stateOf(s, k); got != want {
				t.Errorf("%s: %s state %d, want %d", st.name, k, got, want)
			}
		}
		if n := h.log.count(failed); n != st.logs {
			t.Errorf("%s: %d lines %q, want %d", st.name, n, failed, st.logs)
		}
	}
	if n := h.log.count("dcgm NVLink status works again"); n != 1 {
		t.Errorf("%d lines saying the NVLink status works again, want 1", n)
	}

	fewer := fabricNode()
	fewer.GPUs[1].NVLinks = 1
	fewer.LinkStates = nil
	got := keys(next(fewer).Inventory)
	if slices.Contains(got, "link:1:1") || !slices.Contains(got, "link:1:0") {
		t.Errorf("after a status that lists no link 1 of GPU 1: entities %v", got)
	}
}

// A failed NVSwitch list, once DCGM listed switches, keeps the switches
// and their ports (the same inventory) and counts the failure; a node
// that never listed one (no NvSwitch module) counts nothing.
func TestSwitchListFailureKeepsSwitches(t *testing.T) {
	cases := []struct {
		name       string
		state      func() fakedcgm.State
		wantErrors int
	}{
		{"switches listed before", fabricNode, 1},
		{"no switch ever listed", func() fakedcgm.State {
			s := fabricNode()
			s.Switches = nil
			return s
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fabricConfig()
			h := start(t, tc.state(), cfg)
			h.watch("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS")
			next := h.fabricSteps(cfg.FabricInterval)
			inv := next(tc.state()).Inventory
			failing := tc.state()
			failing.Faults = []fakedcgm.Fault{{Func: "dcgmGetEntityGroupEntities", Code: fakedcgm.StNVMLError}}
			s := next(failing)
			if s.Inventory != inv {
				t.Errorf("inventory changed from %v to %v", keys(inv), keys(s.Inventory))
			}
			if s.FabricErrors != tc.wantErrors {
				t.Errorf("%d fabric errors, want %d", s.FabricErrors, tc.wantErrors)
			}
			if s = next(tc.state()); s.Inventory != inv || s.FabricErrors != 0 {
				t.Errorf("after it works again: inventory %v, %d fabric errors", keys(s.Inventory), s.FabricErrors)
			}
		})
	}
}
