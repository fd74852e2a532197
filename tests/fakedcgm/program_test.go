//go:build cgo && linux

package fakedcgm_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

// The calls below are those dcgm-exporter makes beyond the exporter's own
// (internal/pkg/dcgmprovider/dcgm.go, tag 4.5.3-4.8.2: GetCPUHierarchy,
// GetGroupInfo, GetNvLinkP2PStatus); each goes through go-dcgm as a
// program written against real DCGM calls it.

// dcgmCode is the DCGM return code of a go-dcgm error, or 0.
func dcgmCode(err error) int {
	var e *dcgm.Error
	if errors.As(err, &e) {
		return int(e.Code)
	}
	return 0
}

func TestCPUHierarchy(t *testing.T) {
	initDCGM(t, programState())
	// No NVIDIA CPU: DCGM's sysmon module does not load.
	if _, err := dcgm.GetCPUHierarchy(); dcgmCode(err) != dcgm.DCGM_ST_MODULE_NOT_LOADED {
		t.Errorf("GetCPUHierarchy without NVIDIA CPUs: %v; want DCGM_ST_MODULE_NOT_LOADED", err)
	}

	s := programState()
	s.CPUs = []fakedcgm.CPU{{ID: 0, FirstCore: 0, LastCore: 71, Serial: "0x0a"}, {ID: 1, FirstCore: 72, LastCore: 143}}
	initDCGM(t, s)
	h, err := dcgm.GetCPUHierarchy()
	if err != nil {
		t.Fatal(err)
	}
	if h.NumCPUs != 2 || h.CPUs[0].CPUID != 0 || h.CPUs[1].CPUID != 1 {
		t.Fatalf("hierarchy = %+v", h)
	}
	if h.CPUs[0].OwnedCores[0] != ^uint64(0) || h.CPUs[0].OwnedCores[1] != 0xff || h.CPUs[1].OwnedCores[1] != ^uint64(0xff) ||
		h.CPUs[1].OwnedCores[2] != 0xffff {
		t.Errorf("owned cores = %x / %x, want 0-71 and 72-143", h.CPUs[0].OwnedCores[:3], h.CPUs[1].OwnedCores[:3])
	}
	h2, err := dcgm.GetCPUHierarchy_v2()
	if err != nil || h2.NumCPUs != 2 || h2.CPUs[0].Serial != "0x0a" || h2.CPUs[1].Serial != "" {
		t.Errorf("GetCPUHierarchy_v2 = %+v, %v", h2, err)
	}
}

func TestNvLinkP2PStatus(t *testing.T) {
	s := programState()
	s.P2P = []fakedcgm.P2P{{GPU: 1, Peer: 0, Status: 4}}
	initDCGM(t, s)
	p, err := dcgm.GetNvLinkP2PStatus()
	if err != nil {
		t.Fatal(err)
	}
	// Rows are GPU ids 0..2 (numGpus 0 asks for all); columns are peers.
	const ok, regkey, unsupported = 0, 4, 5
	want := [][]dcgm.Link_State{
		{unsupported, ok, unsupported},          // itself, GPU 1 over NvLink, the lost GPU
		{regkey, unsupported, unsupported},      // a p2p line
		{unsupported, unsupported, unsupported}, // a lost GPU's row
	}
	if len(p.Gpus) != len(want) {
		t.Fatalf("P2P status for %d GPUs, want %d: %v", len(p.Gpus), len(want), p.Gpus)
	}
	for i := range want {
		if !slices.Equal(p.Gpus[i], want[i]) {
			t.Errorf("GPU %d P2P = %v, want %v", i, p.Gpus[i], want[i])
		}
	}
}

func TestGroupGetInfo(t *testing.T) {
	initDCGM(t, programState())
	g, err := dcgm.CreateGroup("gpu_health_monitor_7")
	if err != nil {
		t.Fatal(err)
	}
	if err := dcgm.AddEntityToGroup(g, dcgm.FE_GPU, 1); err != nil {
		t.Fatal(err)
	}
	// A GPU link is a valid entity for any index DCGM's cache manager
	// accepts, up or not: GPU 0 has 18 links up, index 30 is not one.
	if err := dcgm.AddLinkEntityToGroup(g, 30, dcgm.FE_GPU, 0); err != nil {
		t.Errorf("adding GPU 0's link 30: %v", err)
	}
	if err := dcgm.AddLinkEntityToGroup(g, 2*36, dcgm.FE_GPU, 0); err == nil {
		t.Error("adding GPU 0's link 72 succeeded; DCGM refuses indices from 2*DCGM_NVLINK_MAX_LINKS_PER_GPU")
	}
	if err := dcgm.AddLinkEntityToGroup(g, 0, dcgm.FE_GPU, 7); err == nil {
		t.Error("adding a link of GPU 7, which does not exist, succeeded")
	}
	info, err := dcgm.GetGroupInfo(g)
	if err != nil {
		t.Fatal(err)
	}
	want := []dcgm.GroupEntityPair{
		{EntityGroupId: dcgm.FE_GPU, EntityId: 1},
		{EntityGroupId: dcgm.FE_LINK, EntityId: uint(fakedcgm.GPULink(0, 30))},
	}
	if info.GroupName != "gpu_health_monitor_7" || !slices.Equal(info.EntityList, want) {
		t.Errorf("GetGroupInfo = %+v, want the name and %v", info, want)
	}
	if err := dcgm.DestroyGroup(g); err != nil {
		t.Fatal(err)
	}
	if _, err := dcgm.GetGroupInfo(g); err == nil {
		t.Error("GetGroupInfo of a destroyed group succeeded")
	}
}

// TestGlobalFieldsOnInstances: the driver and NVML versions, global-scope
// fields, read the same on a GPU, a GPU instance and a compute instance.
func TestGlobalFieldsOnInstances(t *testing.T) {
	s := programState()
	s.Values = append(s.Values, fakedcgm.Str("none", 0, 2, "12.550.54.15"))
	initDCGM(t, s)
	pairs := []dcgm.GroupEntityPair{
		{EntityGroupId: dcgm.FE_GPU, EntityId: 0},
		{EntityGroupId: dcgm.FE_GPU_I, EntityId: 3},
		{EntityGroupId: dcgm.FE_GPU_CI, EntityId: 9},
	}
	vals, err := dcgm.EntitiesGetLatestValues(pairs, []dcgm.Short{1, 2}, dcgm.DCGM_FV_FLAG_LIVE_DATA)
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != 6 {
		t.Fatalf("%d values, want 6", len(vals))
	}
	for _, v := range vals {
		want := map[dcgm.Short]string{1: "550.54.15", 2: "12.550.54.15"}[v.FieldID]
		if v.Status != 0 || v.String() != want {
			t.Errorf("%v %d field %d = %q status %d, want %q", v.EntityGroupId, v.EntityID, v.FieldID, v.String(), v.Status, want)
		}
	}
}

// TestDeviceTopologyVersion1: a C program that asks for the version 1
// topology struct gets it, the path through TopologyPathToLegacy and the
// link mask cut to 32 bits.
func TestDeviceTopologyVersion1(t *testing.T) {
	lib := fakedcgm.Build(t)
	exe := fakedcgm.BuildProgram(t, lib, filepath.Join("testdata", "topology_v1.c"))
	env := fakedcgm.NewEnv(t, fakedcgm.State{
		Driver: "580.65.06",
		GPUs: []fakedcgm.GPU{
			{ID: 0, UUID: "GPU-a", Name: "NVIDIA GB200", NVLinks: 36},
			{ID: 1, UUID: "GPU-b", Name: "NVIDIA GB200", NVLinks: 36},
			{ID: 2, UUID: "GPU-c", Name: "NVIDIA GB200", NUMA: 1},
		},
	})
	cmd := exec.Command(exe, "0")
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+lib.Dir, "FAKEDCGM_STATE="+env.StatePath, "FAKEDCGM_CALLS="+env.CallsPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", exe, err, out)
	}
	// dcgm_structs.h: DCGM_TOPOLOGY_CPU 0x10, DCGM_TOPOLOGY_SYSTEM 0x20,
	// DCGM_TOPOLOGY_NVLINK18 0x2000000 (36 links become 18, the legacy
	// maximum); dcgmDeviceTopology_version1 0x10001c0
	// (dcgm_structs_internal.h).
	want := "rc 0 version 0x10001c0\n1 0x2000010 0xffffffff\n2 0x20 0\n"
	if got := strings.ReplaceAll(string(out), "0x0\n", "0\n"); got != want {
		t.Errorf("topology v1 of GPU 0:\n%s\nwant\n%s", got, want)
	}
}
