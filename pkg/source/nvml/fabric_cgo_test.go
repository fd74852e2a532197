//go:build cgo && linux

package nvml

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// nvlinkNode is two GPUs: GPU 0's link 0 goes to GPU 1, its link 1 to an
// NVSwitch, its link 2 is down and index 3 is not a link; GPU 1 has one
// link back to GPU 0. Error counters are by nvml.NvLinkErrorCounter
// (replay, recovery, CRC flit, CRC data). The fabric manager is up on GPU 0, failed on GPU 1.
func nvlinkNode() *fakeNode {
	g0, g1 := h100(), h100()
	g1.uuid, g1.bus, g1.minor = "GPU-11111111-2222-3333-4444-555555555555", "00000000:5E:00.0", 1
	g0.links = []fakeLink{
		{active: true, remoteBus: g1.bus, remoteType: nvml.NVLINK_DEVICE_TYPE_GPU, errors: [4]uint64{1, 2, 30, 40}},
		{active: true, remoteBus: "00000000:05:00.0", remoteType: nvml.NVLINK_DEVICE_TYPE_SWITCH},
		{active: false, remoteBus: "00000000:06:00.0", remoteType: nvml.NVLINK_DEVICE_TYPE_SWITCH},
		{absent: true},
	}
	g1.links = []fakeLink{{active: true, remoteBus: g0.bus, remoteType: nvml.NVLINK_DEVICE_TYPE_GPU}}
	g0.fv[nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL] = ull(99)
	g0.fabric = &nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(nvml.SUCCESS)}
	g1.fabric = &nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(nvml.ERROR_UNKNOWN)}
	return newFakeNode(g0, g1)
}

// Where DCGM is absent, NVML's NVLink queries give the links of each GPU,
// their peers, states and error counters, and the fabric manager's state.
func TestNVLinks(t *testing.T) {
	t.Parallel()
	src, _ := open(t, nvlinkNode(), testConfig())
	watch(t, src, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
		"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_FABRIC_MANAGER_STATUS", "DCGM_FI_DEV_FABRIC_MANAGER_ERROR_CODE")
	s := read(t, src)
	ents := map[string]source.Entity{}
	state := map[string]source.LinkState{}
	for i, e := range s.Inventory.Entities {
		ents[e.Key()] = e
		state[e.Key()] = s.LinkState(i)
	}
	links := []struct {
		key, peerType, peer string
		state               source.LinkState
	}{
		{"link:0:0", source.PeerGPU, "1", source.LinkUp},
		{"link:0:1", source.PeerNVSwitch, "00000000:05:00.0", source.LinkUp},
		{"link:0:2", source.PeerNVSwitch, "00000000:06:00.0", source.LinkDown},
		{"link:1:0", source.PeerGPU, "0", source.LinkUp},
	}
	for _, l := range links {
		e, ok := ents[l.key]
		if !ok {
			t.Errorf("no entity %s", l.key)
			continue
		}
		if e.PeerType != l.peerType || e.Peer != l.peer || state[l.key] != l.state {
			t.Errorf("%s: peer %q %q state %d, want %q %q %d", l.key, e.PeerType, e.Peer, state[l.key], l.peerType, l.peer, l.state)
		}
	}
	if _, ok := ents["link:0:3"]; ok || len(s.Inventory.Entities) != 6 {
		t.Errorf("entities %v, want 2 GPUs and 4 links", s.Inventory.Entities)
	}
	values := []struct {
		key  string
		id   uint16
		want source.Value
	}{
		{"link:0:0", 409, source.IntValue(30)}, // NVLINK_ERROR_DL_CRC_FLIT
		{"link:0:0", 429, source.IntValue(1)},  // NVLINK_ERROR_DL_REPLAY
		{"link:0:0", 439, source.IntValue(2)},  // NVLINK_ERROR_DL_RECOVERY
		{"gpu:0", 409, source.IntValue(99)},    // the GPU's field value, over all links
		{"gpu:0", 170, source.IntValue(3)},     // success
		{"gpu:0", 171, source.IntValue(0)},
		{"gpu:1", 170, source.IntValue(4)}, // completed with an error: failure
		{"gpu:1", 171, source.IntValue(int64(nvml.ERROR_UNKNOWN))},
	}
	for _, v := range values {
		if got := value(t, s, v.key, v.id); got != v.want {
			t.Errorf("%s field %d = %+v, want %+v", v.key, v.id, got, v.want)
		}
	}
}

// NOT_SUPPORTED for one link index is that link's answer, not the GPU's:
// the links after it are still scanned, as DCGM scans every index
// (DcgmCacheManager::UpdateNvLinkLinkState).
func TestNVLinkNotSupportedPerLink(t *testing.T) {
	t.Parallel()
	g0, g1 := h100(), h100()
	g1.uuid, g1.bus, g1.minor = "GPU-11111111-2222-3333-4444-555555555555", "00000000:5E:00.0", 1
	g0.links = []fakeLink{
		{unsupported: true},
		{active: true, remoteBus: g1.bus, remoteType: nvml.NVLINK_DEVICE_TYPE_GPU},
		{unsupported: true},
		{active: false, remoteBus: g1.bus, remoteType: nvml.NVLINK_DEVICE_TYPE_GPU},
	}
	src, _ := open(t, newFakeNode(g0, g1), testConfig())
	watch(t, src, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL")
	s := read(t, src)
	var got []string
	for _, e := range s.Inventory.Entities {
		got = append(got, e.Key())
	}
	want := []string{"gpu:0", "gpu:1", "link:0:1", "link:0:3"}
	if !slices.Equal(got, want) {
		t.Errorf("entities %v, want %v", got, want)
	}
}

// The links' states and error counters, and the GPUs' fabric fields, are
// read once per FabricInterval, not on every Read: 8 GPUs of 18 links cost
// about 720 calls a read. Reads in between repeat the last values and
// states, as the DCGM source does, while the GPU fields stay current; a
// new field set is read at once.
func TestNVLinkReadsOncePerFabricInterval(t *testing.T) {
	t.Parallel()
	n := nvlinkNode()
	cfg := testConfig()
	cfg.FabricInterval = time.Minute
	src, _ := open(t, n, cfg)
	linkFields := []string{"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
		"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_FABRIC_MANAGER_STATUS"}
	watch(t, src, linkFields...)
	advance := freezeClock(src)
	// calls counts, over both GPUs, the calls go-nvml's mock recorded.
	type counts struct{ state, counter, fabricInfo, fieldValues int }
	calls := func() counts {
		var c counts
		n.mu.Lock()
		defer n.mu.Unlock()
		for _, d := range n.devs {
			c.state += len(d.GetNvLinkStateCalls())
			c.counter += len(d.GetNvLinkErrorCounterCalls())
			c.fabricInfo += len(d.GetGpuFabricInfoCalls())
			c.fieldValues += len(d.GetFieldValuesCalls())
		}
		return c
	}
	// nvlinkNode has 4 links; 2 error counters are watched per link; the
	// NVLink total (409) is a field value of each of the 2 GPUs.
	fabricRead := counts{state: 4, counter: 4 * 2, fabricInfo: 2, fieldValues: 2}
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
	// changed turns the node's fabric to its second state.
	changed := func() {
		n.update(func() {
			g0 := n.gpus[0]
			g0.temp = 60
			g0.links[0].errors[nvml.NVLINK_ERROR_DL_CRC_FLIT] = 31
			g0.links[2].active = true
			g0.fabric = &nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_IN_PROGRESS}
		})
	}
	type want struct {
		temp, crc, fm int64
		link2         source.LinkState
	}
	first, second := want{45, 30, 3, source.LinkDown}, want{60, 31, 2, source.LinkUp}
	steps := []struct {
		name   string
		before func()
		calls  counts
		want   want
	}{
		{"first read", func() {}, fabricRead, first},
		{"within the interval", func() { advance(time.Second) }, counts{}, first},
		{"the node changed, within the interval", func() { changed(); advance(30 * time.Second) }, counts{}, want{60, 30, 3, source.LinkDown}},
		{"just before the interval ends", func() { advance(28 * time.Second) }, counts{}, want{60, 30, 3, source.LinkDown}},
		{"the interval passed", func() { advance(time.Second) }, fabricRead, second},
		{"again within the interval", func() { advance(time.Second) }, counts{}, second},
		{"new field set", func() { watch(t, src, linkFields...) }, fabricRead, second},
	}
	for _, st := range steps {
		st.before()
		before := calls()
		s := read(t, src)
		after := calls()
		got := counts{after.state - before.state, after.counter - before.counter,
			after.fabricInfo - before.fabricInfo, after.fieldValues - before.fieldValues}
		if got != st.calls {
			t.Errorf("%s: calls %+v, want %+v", st.name, got, st.calls)
		}
		for _, v := range []struct {
			key  string
			id   uint16
			want int64
		}{
			{"gpu:0", 150, st.want.temp},
			{"link:0:0", 409, st.want.crc},
			{"gpu:0", 170, st.want.fm},
			{"gpu:0", 409, 99},
		} {
			if got := value(t, s, v.key, v.id); got != source.IntValue(v.want) {
				t.Errorf("%s: %s field %d = %+v, want %d", st.name, v.key, v.id, got, v.want)
			}
		}
		if got := stateOf(s, "link:0:2"); got != st.want.link2 {
			t.Errorf("%s: link 0:2 state %d, want %d", st.name, got, st.want.link2)
		}
		if got := stateOf(s, "link:0:0"); got != source.LinkUp {
			t.Errorf("%s: link 0:0 state %d, want up", st.name, got)
		}
	}
}

// Without a fabric interval the links are read on every Read.
func TestNVLinkReadsEveryReadWithoutInterval(t *testing.T) {
	t.Parallel()
	n := nvlinkNode()
	src, _ := open(t, n, testConfig())
	watch(t, src, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL")
	states := func() int {
		n.mu.Lock()
		defer n.mu.Unlock()
		c := 0
		for _, d := range n.devs {
			c += len(d.GetNvLinkStateCalls())
		}
		return c
	}
	read(t, src)
	before := states()
	const reads = 3
	for range reads {
		read(t, src)
	}
	if got := states() - before; got != reads*4 {
		t.Errorf("%d reads made %d link state calls, want %d", reads, got, reads*4)
	}
}

// BenchmarkReadHGX reads 8 GPUs of 18 NVLinks each, with the fabric read
// on every Read and once per 30s (so never again within the benchmark),
// and reports the NVLink calls per Read.
func BenchmarkReadHGX(b *testing.B) {
	for _, bc := range []struct {
		name     string
		interval time.Duration
	}{{"fabric every read", 0}, {"fabric every 30s", 30 * time.Second}} {
		b.Run(bc.name, func(b *testing.B) {
			gpus := make([]*fakeGPU, 8)
			for i := range gpus {
				gpus[i] = h100()
				gpus[i].uuid = fmt.Sprintf("GPU-%08d-1111-2222-3333-444444444444", i)
				gpus[i].bus = fmt.Sprintf("00000000:%02X:00.0", 0x10+i)
				gpus[i].minor = i
				for range 18 {
					gpus[i].links = append(gpus[i].links, fakeLink{active: true, remoteBus: "00000000:05:00.0", remoteType: nvml.NVLINK_DEVICE_TYPE_SWITCH})
				}
			}
			n := newFakeNode(gpus...)
			cfg := testConfig()
			cfg.FabricInterval = bc.interval
			src, _ := open(b, n, cfg)
			watch(b, src, "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL",
				"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
				"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
				"DCGM_FI_DEV_FABRIC_MANAGER_STATUS")
			linkCalls := func() int {
				n.mu.Lock()
				defer n.mu.Unlock()
				c := 0
				for _, d := range n.devs {
					c += len(d.GetNvLinkStateCalls()) + len(d.GetNvLinkErrorCounterCalls())
				}
				return c
			}
			if _, err := src.Read(context.Background()); err != nil {
				b.Fatal(err)
			}
			before := linkCalls()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := src.Read(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(linkCalls()-before)/float64(b.N), "nvlink-calls/op")
		})
	}
}

// A link call that fails (not a "no such link" answer) is a failed fabric
// read: counted once per fabric read in Sample.FabricErrors, as the DCGM
// source counts its one link status call per read, however many links
// fail, and logged naming the GPU and link. NOT_SUPPORTED and
// INVALID_ARGUMENT say the link or counter does not exist (nvml.h) and
// count nothing.
func TestNVLinkFailedReadsCounted(t *testing.T) {
	t.Parallel()
	const warning = "nvml NVLink read failed; the link's value is not reported until a read works"
	failLink := func(gpu, link int, call string, ret nvml.Return) func(n *fakeNode) {
		return func(n *fakeNode) { n.gpus[gpu].links[link].fail = map[string]nvml.Return{call: ret} }
	}
	cases := []struct {
		name      string
		fail      []func(n *fakeNode)
		errors    int
		logged    []string // substrings of the warning, naming GPU and link
		blankLink string   // a link whose counter reads Blank
		unknown   string   // a link whose state is unknown
	}{
		{name: "every link call works"},
		{
			name:    "one link's state read fails",
			fail:    []func(*fakeNode){failLink(0, 1, "GetNvLinkState", nvml.ERROR_UNKNOWN)},
			errors:  1,
			logged:  []string{"gpu=0", "link=1", "call=GetNvLinkState", "failed_calls=1"},
			unknown: "link:0:1",
		},
		{
			name: "error counters fail on links of both GPUs",
			fail: []func(*fakeNode){
				failLink(0, 0, "GetNvLinkErrorCounter", nvml.ERROR_TIMEOUT),
				failLink(1, 0, "GetNvLinkErrorCounter", nvml.ERROR_UNKNOWN),
			},
			errors:    1,
			logged:    []string{"gpu=0", "link=0", "call=GetNvLinkErrorCounter"},
			blankLink: "link:0:0",
		},
		{
			name:   "every link call of a GPU fails",
			fail:   []func(*fakeNode){func(n *fakeNode) { n.gpus[0].fail = map[string]nvml.Return{"GetNvLinkState": nvml.ERROR_UNKNOWN} }},
			errors: 1,
			logged: []string{"gpu=0", "link=0", "call=GetNvLinkState", "failed_calls=3"},
		},
		{
			name:      "a counter the SKU does not support",
			fail:      []func(*fakeNode){failLink(0, 0, "GetNvLinkErrorCounter", nvml.ERROR_NOT_SUPPORTED)},
			blankLink: "link:0:0",
		},
		{
			name:      "a link or counter NVML rejects as invalid",
			fail:      []func(*fakeNode){failLink(0, 0, "GetNvLinkErrorCounter", nvml.ERROR_INVALID_ARGUMENT)},
			blankLink: "link:0:0",
		},
		{
			name:    "a link state NVML no longer supports",
			fail:    []func(*fakeNode){failLink(0, 1, "GetNvLinkState", nvml.ERROR_NOT_SUPPORTED)},
			unknown: "link:0:1",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := nvlinkNode()
			src, logs := open(t, n, testConfig())
			watch(t, src, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL")
			n.update(func() {
				for _, f := range tc.fail {
					f(n)
				}
			})
			s := read(t, src)
			if s.FabricErrors != tc.errors {
				t.Errorf("FabricErrors = %d, want %d", s.FabricErrors, tc.errors)
			}
			if got, want := logs.count(warning) > 0, len(tc.logged) > 0; got != want {
				t.Errorf("warning %q logged: %v, want %v", warning, got, want)
			}
			for _, sub := range tc.logged {
				if !strings.Contains(logs.String(), sub) {
					t.Errorf("log does not name %s:\n%s", sub, logs)
				}
			}
			if tc.blankLink != "" && value(t, s, tc.blankLink, 409).Kind != source.Blank {
				t.Errorf("%s field 409 = %+v, want Blank", tc.blankLink, value(t, s, tc.blankLink, 409))
			}
			for e, ent := range s.Inventory.Entities {
				if ent.Key() == tc.unknown && s.LinkState(e) != source.LinkUnknown {
					t.Errorf("%s state %d, want unknown", tc.unknown, s.LinkState(e))
				}
			}
		})
	}
}

// Failed link calls are counted once per fabric read, not on the reads in
// between that repeat it; a fabric read that works again counts nothing
// and says so once.
func TestNVLinkFailedReadsCountedPerFabricInterval(t *testing.T) {
	t.Parallel()
	n := nvlinkNode()
	cfg := testConfig()
	cfg.FabricInterval = time.Minute
	src, logs := open(t, n, cfg)
	watch(t, src, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL")
	tick := freezeClock(src)
	advance := func(d time.Duration) func() { return func() { tick(d) } }
	setFail := func(ret nvml.Return) func() {
		return func() {
			n.update(func() { n.gpus[0].links[0].fail = map[string]nvml.Return{"GetNvLinkErrorCounter": ret} })
		}
	}
	steps := []struct {
		name   string
		before []func()
		errors int
		again  int // "works again" lines so far
	}{
		{"first read, counter fails", []func(){setFail(nvml.ERROR_UNKNOWN)}, 1, 0},
		{"within the interval", []func(){advance(time.Second)}, 0, 0},
		{"next fabric read, still failing", []func(){advance(time.Minute)}, 1, 0},
		{"repaired, within the interval", []func(){setFail(nvml.SUCCESS), advance(time.Second)}, 0, 0},
		{"next fabric read works", []func(){advance(time.Minute)}, 0, 1},
		{"and the one after", []func(){advance(time.Minute)}, 0, 1},
	}
	for _, st := range steps {
		for _, f := range st.before {
			f()
		}
		s := read(t, src)
		if s.FabricErrors != st.errors {
			t.Errorf("%s: FabricErrors = %d, want %d", st.name, s.FabricErrors, st.errors)
		}
		if got := logs.count("nvml NVLink reads work again"); got != st.again {
			t.Errorf("%s: %d lines saying the reads work again, want %d", st.name, got, st.again)
		}
	}
}

// A link whose state query fails with a real error when the links are
// listed is not "no such link": the failure is counted once per fabric read
// and logged naming GPU and link, and the link alone is asked again at each
// fabric read, joining the inventory once it answers. NOT_SUPPORTED and
// INVALID_ARGUMENT say the link does not exist (nvml.h) and count nothing.
func TestNVLinkFailedScanRetried(t *testing.T) {
	t.Parallel()
	const warning = "nvml NVLink state query failed; the link is left out of the inventory until it answers"
	cases := []struct {
		name    string
		ret     nvml.Return
		counted bool
	}{
		{"unknown error", nvml.ERROR_UNKNOWN, true},
		{"timeout", nvml.ERROR_TIMEOUT, true},
		{"not supported", nvml.ERROR_NOT_SUPPORTED, false},
		{"invalid argument", nvml.ERROR_INVALID_ARGUMENT, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := nvlinkNode()
			n.gpus[0].links[1].fail = map[string]nvml.Return{"GetNvLinkState": tc.ret}
			cfg := testConfig()
			cfg.FabricInterval = time.Minute
			src, logs := open(t, n, cfg)
			watch(t, src, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL")
			tick := freezeClock(src)
			advance := func(d time.Duration) func() { return func() { tick(d) } }
			repair := func() { n.update(func() { n.gpus[0].links[1].fail = nil }) }
			errs := 0
			if tc.counted {
				errs = 1
			}
			steps := []struct {
				name    string
				before  []func()
				errors  int
				present bool // link:0:1 is in the inventory
				logged  int  // warnings so far
			}{
				{"first read", nil, errs, false, errs},
				{"within the interval", []func(){advance(time.Second)}, 0, false, errs},
				{"next fabric read, still failing", []func(){advance(time.Minute)}, errs, false, errs},
				{"repaired, within the interval", []func(){repair, advance(time.Second)}, 0, false, errs},
				{"next fabric read", []func(){advance(time.Minute)}, 0, tc.counted, errs},
				{"and the one after", []func(){advance(time.Minute)}, 0, tc.counted, errs},
			}
			for _, st := range steps {
				for _, f := range st.before {
					f()
				}
				s := read(t, src)
				if s.FabricErrors != st.errors {
					t.Errorf("%s: FabricErrors = %d, want %d", st.name, s.FabricErrors, st.errors)
				}
				if got := slices.Contains(keys(s.Inventory), "link:0:1"); got != st.present {
					t.Errorf("%s: link:0:1 in the inventory: %v, want %v (%v)", st.name, got, st.present, keys(s.Inventory))
				}
				for _, k := range []string{"link:0:0", "link:0:2", "link:1:0"} {
					if !slices.Contains(keys(s.Inventory), k) {
						t.Errorf("%s: %s not in the inventory", st.name, k)
					}
				}
				if st.present {
					for e, ent := range s.Inventory.Entities {
						if ent.Key() == "link:0:1" && (s.LinkState(e) != source.LinkUp || ent.PeerType != source.PeerNVSwitch) {
							t.Errorf("%s: link:0:1 state %d peer %q, want up to an NVSwitch", st.name, s.LinkState(e), ent.PeerType)
						}
					}
				}
				if got := logs.count(warning); got != st.logged {
					t.Errorf("%s: %d warnings, want %d (one a minute at most)", st.name, got, st.logged)
				}
			}
			if tc.counted && (!strings.Contains(logs.String(), "gpu=0") || !strings.Contains(logs.String(), "link=1")) {
				t.Errorf("warning does not name GPU 0 link 1:\n%s", logs)
			}
			// Only the failed link is asked again: the links that answered
			// had their far end read once, when GPU 0 was first scanned.
			n.mu.Lock()
			calls := n.devs[0].GetNvLinkRemotePciInfoCalls()
			n.mu.Unlock()
			perLink := map[int]int{}
			for _, c := range calls {
				perLink[c.N]++
			}
			for _, l := range []int{0, 2} {
				if perLink[l] != 1 {
					t.Errorf("link %d far end read %d times, want 1", l, perLink[l])
				}
			}
		})
	}
}
