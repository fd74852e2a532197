//go:build cgo && linux

package fakedcgm_test

import (
	"slices"
	"testing"

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

// fabricState is an NVLink fabric: two GPUs with 4 links each, GPU 1's link
// 2 down, and two NVSwitches with 4 ports each, switch 1's port 3 disabled.
func fabricState() fakedcgm.State {
	return fakedcgm.State{
		Driver: "550.54.15",
		GPUs: []fakedcgm.GPU{
			{ID: 0, UUID: "GPU-a", Name: "NVIDIA H100 80GB HBM3", BusID: "00000000:18:00.0", FBMiB: 81559, NVLinks: 4},
			{ID: 1, UUID: "GPU-b", Name: "NVIDIA H100 80GB HBM3", BusID: "00000000:2A:00.0", FBMiB: 81559, NVLinks: 4},
		},
		Switches: []fakedcgm.NVSwitch{{ID: 0, BusID: "00000000:05:00.0", Links: 4}, {ID: 1, BusID: "00000000:06:00.0", Links: 4}},
		LinkStates: []fakedcgm.LinkState{
			{Parent: 1, Index: 2, State: "down"},
			{Switch: true, Parent: 1, Index: 3, State: "disabled"},
		},
		Values: []fakedcgm.Value{
			fakedcgm.Int(fakedcgm.EntityLink, fakedcgm.GPULink(1, 2), 409, 1234), // CRC flit errors of GPU 1 link 2
			fakedcgm.Int(fakedcgm.EntitySwitch, 1, 858, 51),                      // switch 1 temperature
			fakedcgm.Int(fakedcgm.EntityLink, fakedcgm.SwitchLink(1, 0), 870, 2), // switch 1 port 0 active
		},
	}
}

func TestFabricEntities(t *testing.T) {
	initDCGM(t, fabricState())
	ports := func(sw int, idx ...int) []uint {
		var out []uint
		for _, i := range idx {
			out = append(out, uint(fakedcgm.SwitchLink(sw, i)))
		}
		return out
	}
	for _, tc := range []struct {
		group dcgm.Field_Entity_Group
		want  []uint
	}{
		{dcgm.FE_SWITCH, []uint{0, 1}},
		// DCGM lists the links its NvSwitch module knows: the switches'
		// ports, not the GPUs' links (disabled ones included).
		{dcgm.FE_LINK, append(ports(0, 0, 1, 2, 3), ports(1, 0, 1, 2, 3)...)},
	} {
		got, err := dcgm.GetEntityGroupEntities(tc.group)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("GetEntityGroupEntities(%v) = %v, %v; want %v", tc.group, got, err, tc.want)
		}
	}
}

func TestFabricLinkStatus(t *testing.T) {
	initDCGM(t, fabricState())
	links, err := dcgm.GetNvLinkLinkStatus()
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		parent dcgm.Field_Entity_Group
		id     uint
		index  uint
	}
	got := map[key]dcgm.Link_State{}
	for _, l := range links {
		got[key{l.ParentType, l.ParentId, l.Index}] = l.State
	}
	for k, want := range map[key]dcgm.Link_State{
		{dcgm.FE_GPU, 0, 0}: dcgm.LS_UP, {dcgm.FE_GPU, 1, 1}: dcgm.LS_UP, {dcgm.FE_GPU, 1, 2}: dcgm.LS_DOWN,
		{dcgm.FE_GPU, 1, 4}: dcgm.LS_NOT_SUPPORTED, {dcgm.FE_SWITCH, 0, 3}: dcgm.LS_UP,
		{dcgm.FE_SWITCH, 1, 3}: dcgm.LS_DISABLED, {dcgm.FE_SWITCH, 1, 4}: dcgm.LS_NOT_SUPPORTED,
	} {
		if got[k] != want {
			t.Errorf("link %+v state %v, want %v", k, got[k], want)
		}
	}
}

// Values of links (a dcgm_link_t id, as go-dcgm builds it) and switches;
// a switch that disappears is no longer listed and its entities are
// refused.
func TestFabricValuesAndVanishingSwitch(t *testing.T) {
	env := initDCGM(t, fabricState())
	read := func(group dcgm.Field_Entity_Group, id uint, field dcgm.Short) (dcgm.FieldValue_v1, error) {
		t.Helper()
		vals, err := dcgm.EntityGetLatestValues(group, id, []dcgm.Short{field})
		if err != nil {
			return dcgm.FieldValue_v1{}, err
		}
		return vals[0], nil
	}
	live := func(pairs []dcgm.GroupEntityPair, field dcgm.Short) []dcgm.FieldValue_v2 {
		t.Helper()
		vals, err := dcgm.EntitiesGetLatestValues(pairs, []dcgm.Short{field}, dcgm.DCGM_FV_FLAG_LIVE_DATA)
		if err != nil {
			t.Fatal(err)
		}
		return vals
	}
	gpuLink, err := dcgm.LinkGetLatestValues(2, dcgm.FE_GPU, 1, []dcgm.Short{409})
	if err != nil {
		t.Fatal(err)
	}
	// Not watched: DCGM answers, per value, that the field is not watched.
	if gpuLink[0].Status != dcgm.DCGM_ST_NOT_WATCHED {
		t.Errorf("unwatched link value status %d, want DCGM_ST_NOT_WATCHED", gpuLink[0].Status)
	}
	v := live([]dcgm.GroupEntityPair{
		{EntityGroupId: dcgm.FE_LINK, EntityId: uint(fakedcgm.GPULink(1, 2))},
		{EntityGroupId: dcgm.FE_SWITCH, EntityId: 1},
		{EntityGroupId: dcgm.FE_LINK, EntityId: uint(fakedcgm.SwitchLink(1, 0))},
	}, 409)
	if v[0].Status != dcgm.DCGM_ST_OK || v[0].Int64() != 1234 {
		t.Errorf("GPU 1 link 2 CRC errors: status %d value %d, want 1234", v[0].Status, v[0].Int64())
	}
	if temp := live([]dcgm.GroupEntityPair{{EntityGroupId: dcgm.FE_SWITCH, EntityId: 1}}, 858); temp[0].Int64() != 51 {
		t.Errorf("switch 1 temperature %d, want 51", temp[0].Int64())
	}
	if bus := live([]dcgm.GroupEntityPair{{EntityGroupId: dcgm.FE_SWITCH, EntityId: 1}}, 867); bus[0].Int64() != 6 {
		t.Errorf("switch 1 PCIe bus %d, want 6", bus[0].Int64())
	}
	if st := live([]dcgm.GroupEntityPair{{EntityGroupId: dcgm.FE_LINK, EntityId: uint(fakedcgm.SwitchLink(1, 0))}}, 870); st[0].Int64() != 2 {
		t.Errorf("switch 1 port 0 status %d, want 2", st[0].Int64())
	}

	gone := fabricState()
	gone.Switches = gone.Switches[:1]
	env.Write(t, gone)
	if got, err := dcgm.GetEntityGroupEntities(dcgm.FE_SWITCH); err != nil || !slices.Equal(got, []uint{0}) {
		t.Errorf("after switch 1 left: switches %v, %v; want [0]", got, err)
	}
	for _, p := range []dcgm.GroupEntityPair{{EntityGroupId: dcgm.FE_SWITCH, EntityId: 1}, {EntityGroupId: dcgm.FE_LINK, EntityId: uint(fakedcgm.SwitchLink(1, 0))}} {
		if _, err := read(p.EntityGroupId, p.EntityId, 858); err == nil {
			t.Errorf("reading %v of a vanished switch succeeded", p)
		}
		if v := live([]dcgm.GroupEntityPair{p}, 858); v[0].Status != dcgm.DCGM_ST_BADPARAM {
			t.Errorf("live value of %v: status %d, want DCGM_ST_BADPARAM", p, v[0].Status)
		}
	}
}
