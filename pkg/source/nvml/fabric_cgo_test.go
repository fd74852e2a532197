//go:build cgo && linux

package nvml

import (
	"slices"
	"testing"

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
