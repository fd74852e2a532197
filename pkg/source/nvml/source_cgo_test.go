//go:build cgo && linux

package nvml

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

const (
	uuid0 = "GPU-00000000-1111-2222-3333-444444444444"
	uuid1 = "GPU-11111111-1111-2222-3333-444444444444"
	uuid2 = "GPU-22222222-1111-2222-3333-444444444444"
	migA  = "MIG-aaaaaaaa-1111-2222-3333-444444444444"
	migB  = "MIG-bbbbbbbb-1111-2222-3333-444444444444"
	migC  = "MIG-cccccccc-1111-2222-3333-444444444444"
	migD  = "MIG-dddddddd-1111-2222-3333-444444444444"
)

// h100 answers every call.
func h100() *fakeGPU {
	return &fakeGPU{
		uuid: uuid0, name: "NVIDIA H100 80GB HBM3", bus: "00000000:3B:00.0", minor: 0,
		memTotal: 81559<<20 + 4095, memFree: 80023<<20 + 17, memUsed: 1024<<20 + 1, memReserved: 512 << 20,
		smMHz: 1980, memMHz: 2619, reasons: 0x4 | 0x20,
		temp: 45, slowdown: 87, shutdown: 92,
		powerMW: 251500, limitMW: 700999, enforcedMW: 650000,
		replays: 3, util: 87, memUtil: 41, enc: 5, dec: 7, retiredSBE: 2,
		fv: map[uint32]nvml.FieldValue{
			nvml.FI_DEV_MEMORY_TEMP:              ui(51),
			nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION: ull(123456789),
			nvml.FI_DEV_PERF_POLICY_POWER:        ull(1500),
			nvml.FI_DEV_PERF_POLICY_THERMAL:      ull(250),
			nvml.FI_DEV_ECC_SBE_VOL_TOTAL:        ull(10),
			nvml.FI_DEV_ECC_DBE_VOL_TOTAL:        ull(1),
			nvml.FI_DEV_ECC_SBE_AGG_TOTAL:        ull(100),
			nvml.FI_DEV_ECC_DBE_AGG_TOTAL:        ull(2),
			nvml.FI_DEV_RETIRED_DBE:              ull(1),
			nvml.FI_DEV_RETIRED_PENDING:          ull(1),
			nvml.FI_DEV_REMAPPED_UNC:             ull(1),
			nvml.FI_DEV_REMAPPED_COR:             ull(4),
			nvml.FI_DEV_REMAPPED_FAILURE:         ull(0),
			nvml.FI_DEV_REMAPPED_PENDING:         ull(1),
			nvml.FI_DEV_GET_GPU_RECOVERY_ACTION:  ui(2),
		},
	}
}

// a100 is an A100 whose driver refuses several calls.
func a100() *fakeGPU {
	return &fakeGPU{
		uuid: uuid1, name: "NVIDIA A100-SXM4-40GB", bus: "00000000:5E:00.0", minor: 3,
		memTotal: 40960 << 20, memFree: 40000 << 20, memUsed: 960 << 20,
		temp: 38, smMHz: 1410, util: 12,
		fail: map[string]nvml.Return{
			"GetPowerUsage":         nvml.ERROR_NOT_SUPPORTED,
			"GetEncoderUtilization": nvml.ERROR_NO_PERMISSION,
			"GetPcieReplayCounter":  nvml.ERROR_UNKNOWN,
		},
		fv: map[uint32]nvml.FieldValue{nvml.FI_DEV_MEMORY_TEMP: ui(1000)}, // bogus: above 200 °C
	}
}

// withMIG puts a GPU in MIG mode with a 3g.20gb and a 1g.5gb instance.
func withMIG(g *fakeGPU) *fakeGPU {
	g.migs = []fakeMIG{
		{uuid: migB, name: g.name + " MIG 1g.5gb", gi: 2, ci: 0, slices: 1, placement: 0, memTotal: 4864 << 20, memFree: 4736 << 20, memUsed: 128 << 20},
		{uuid: migA, name: g.name + " MIG 3g.20gb", gi: 1, ci: 0, slices: 3, placement: 4, memTotal: 19968 << 20, memFree: 19456 << 20, memUsed: 512 << 20},
	}
	g.fail["GetUtilizationRates"] = nvml.ERROR_NOT_SUPPORTED // not in MIG mode
	return g
}

func testConfig() Config { return Config{CallTimeout: 2 * time.Second} }

func catalogFields(t testing.TB, names ...string) []fields.Field {
	t.Helper()
	cat := fields.MustNew()
	if len(names) == 0 {
		return cat.All()
	}
	var out []fields.Field
	for _, n := range names {
		f, ok := cat.Lookup(n)
		if !ok {
			t.Fatalf("unknown field %s", n)
		}
		out = append(out, f)
	}
	return out
}

func watch(t testing.TB, src *Source, names ...string) {
	t.Helper()
	if err := src.Watch(context.Background(), catalogFields(t, names...)); err != nil {
		t.Fatalf("Watch: %v", err)
	}
}

// freezeClock stops src's clock at now and returns what moves it on by d.
func freezeClock(src *Source) (advance func(d time.Duration)) {
	clock := time.Now()
	src.mu.Lock()
	src.now = func() time.Time { return clock }
	src.mu.Unlock()
	return func(d time.Duration) {
		src.mu.Lock()
		clock = clock.Add(d)
		src.mu.Unlock()
	}
}

func read(t testing.TB, src *Source) *source.Sample {
	t.Helper()
	s, err := src.Read(context.Background())
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return s
}

// value returns the sample's value for an entity key and a field id.
func value(t testing.TB, s *source.Sample, key string, id uint16) source.Value {
	t.Helper()
	for e := range s.Inventory.Entities {
		if s.Inventory.Entities[e].Key() != key {
			continue
		}
		for f := range s.Fields {
			if s.Fields[f].ID == id {
				return s.At(e, f)
			}
		}
		t.Fatalf("field %d not in sample", id)
	}
	t.Fatalf("entity %s not in sample", key)
	return source.Value{}
}

func keys(inv *source.Inventory) []string {
	var out []string
	for _, e := range inv.Entities {
		out = append(out, e.Key())
	}
	return out
}

func TestReadValuesAndUnits(t *testing.T) {
	t.Parallel()
	src, _ := open(t, newFakeNode(h100(), a100()), testConfig())
	watch(t, src) // the whole catalog
	s := read(t, src)

	cases := []struct {
		name   string
		entity string
		field  uint16
		want   source.Value
	}{
		{"SM clock MHz", "gpu:0", 100, source.IntValue(1980)},
		{"memory clock MHz", "gpu:0", 101, source.IntValue(2619)},
		{"clock event bits", "gpu:0", 112, source.IntValue(0x24)},
		{"memory temperature °C", "gpu:0", 140, source.IntValue(51)},
		{"GPU temperature °C", "gpu:0", 150, source.IntValue(45)},
		{"slowdown temperature °C", "gpu:0", 158, source.IntValue(87)},
		{"shutdown temperature °C", "gpu:0", 159, source.IntValue(92)},
		{"power mW to W", "gpu:0", 155, source.FloatValue(251.5)},
		{"energy mJ", "gpu:0", 156, source.IntValue(123456789)},
		{"power limit mW to whole W", "gpu:0", 160, source.FloatValue(700)},
		{"enforced limit mW to W", "gpu:0", 164, source.FloatValue(650)},
		{"PCIe replays", "gpu:0", 202, source.IntValue(3)},
		{"GPU utilization %", "gpu:0", 203, source.IntValue(87)},
		{"memory copy utilization %", "gpu:0", 204, source.IntValue(41)},
		{"encoder %", "gpu:0", 206, source.IntValue(5)},
		{"decoder %", "gpu:0", 207, source.IntValue(7)},
		{"no XID yet", "gpu:0", 230, source.IntValue(0)},
		{"power violation", "gpu:0", 240, source.IntValue(1500)},
		{"thermal violation", "gpu:0", 241, source.IntValue(250)},
		{"FB total bytes to MiB", "gpu:0", 250, source.IntValue(81559)},
		{"FB free bytes to MiB", "gpu:0", 251, source.IntValue(80023)},
		{"FB used bytes to MiB", "gpu:0", 252, source.IntValue(1024)},
		{"FB reserved bytes to MiB", "gpu:0", 253, source.IntValue(512)},
		{"ECC SBE volatile", "gpu:0", 310, source.IntValue(10)},
		{"ECC DBE volatile", "gpu:0", 311, source.IntValue(1)},
		{"ECC SBE aggregate", "gpu:0", 312, source.IntValue(100)},
		{"ECC DBE aggregate", "gpu:0", 313, source.IntValue(2)},
		{"retired SBE pages", "gpu:0", 390, source.IntValue(2)},
		{"retired DBE pages", "gpu:0", 391, source.IntValue(1)},
		{"retirement pending", "gpu:0", 392, source.IntValue(1)},
		{"uncorrectable remapped rows", "gpu:0", 393, source.IntValue(1)},
		{"correctable remapped rows", "gpu:0", 394, source.IntValue(4)},
		{"row remap failure", "gpu:0", 395, source.IntValue(0)},
		{"row remap pending", "gpu:0", 396, source.IntValue(1)},
		{"recovery action: node reboot", "gpu:0", 1523, source.IntValue(2)},
		{"NVLink counter", "gpu:0", 449, source.Value{}},
		{"profiling: graphics engine", "gpu:0", 1001, source.Value{}},
		{"profiling: SM active", "gpu:0", 1002, source.Value{}},
		{"profiling: PCIe TX", "gpu:0", 1009, source.Value{}},
		{"profiling: NVLink RX", "gpu:0", 1012, source.Value{}},

		{"other GPU reads", "gpu:1", 150, source.IntValue(38)},
		{"NOT_SUPPORTED is Blank", "gpu:1", 155, source.Value{}},
		{"NO_PERMISSION is Blank", "gpu:1", 206, source.Value{}},
		{"any error is Blank", "gpu:1", 202, source.Value{}},
		{"unsupported field value is Blank", "gpu:1", 156, source.Value{}},
		{"bogus memory temperature is Blank", "gpu:1", 140, source.Value{}},
		{"no v2 reserved is still read", "gpu:1", 253, source.IntValue(0)},
		{"other calls still read", "gpu:1", 203, source.IntValue(12)},
	}
	for _, tc := range cases {
		if got := value(t, s, tc.entity, tc.field); got != tc.want {
			t.Errorf("%s: %s field %d = %+v, want %+v", tc.name, tc.entity, tc.field, got, tc.want)
		}
	}
}

func TestInventory(t *testing.T) {
	t.Parallel()
	src, _ := open(t, newFakeNode(h100(), withMIG(a100())), testConfig())
	inv, err := src.Inventory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h := source.Entity{Kind: source.GPU, GPU: 0, UUID: uuid0, Device: "nvidia0", Model: "NVIDIA H100 80GB HBM3",
		PCIBusID: "00000000:3B:00.0", MemoryBytes: 81559 << 20}
	a := source.Entity{Kind: source.GPU, GPU: 1, UUID: uuid1, Device: "nvidia3", Model: "NVIDIA A100-SXM4-40GB",
		PCIBusID: "00000000:5E:00.0", MemoryBytes: 40960 << 20}
	gi1 := a
	gi1.Kind, gi1.MemoryBytes, gi1.GPUInstance, gi1.ComputeInstance, gi1.MIGProfile, gi1.MIGUUID =
		source.GPUInstance, 19968<<20, 1, 0, "3g.20gb", migA
	gi2 := a
	gi2.Kind, gi2.MemoryBytes, gi2.GPUInstance, gi2.ComputeInstance, gi2.MIGProfile, gi2.MIGUUID =
		source.GPUInstance, 4864<<20, 2, 0, "1g.5gb", migB
	// The fake's placements (nvmlGpuInstanceInfo_t.placement.start).
	gi1.MIGPlacementStart, gi1.MIGPlacementKnown = 4, true
	gi2.MIGPlacementStart, gi2.MIGPlacementKnown = 0, true
	want := &source.Inventory{DriverVersion: "550.54.15", Entities: []source.Entity{h, a, gi1, gi2},
		MIGDevices: []source.MIGDevice{
			{GPU: 1, GPUInstance: 1, ComputeInstance: 0, Profile: "3g.20gb", UUID: migA},
			{GPU: 1, GPUInstance: 2, ComputeInstance: 0, Profile: "1g.5gb", UUID: migB},
		}}
	if !reflect.DeepEqual(inv, want) {
		t.Errorf("inventory =\n%+v\nwant\n%+v", inv, want)
	}

	// Unchanged hardware keeps the pointer, through reads and re-watches.
	watch(t, src, "DCGM_FI_DEV_GPU_TEMP")
	s := read(t, src)
	watch(t, src, "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED")
	s2 := read(t, src)
	again, _ := src.Inventory(context.Background())
	if s.Inventory != inv || s2.Inventory != inv || again != inv {
		t.Error("inventory pointer changed without a change")
	}
}

func TestMIG(t *testing.T) {
	t.Parallel()
	n := newFakeNode(h100(), withMIG(a100()))
	src, logs := open(t, n, testConfig())
	watch(t, src, "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_TEMP")
	s := read(t, src)
	cases := []struct {
		entity string
		field  uint16
		want   source.Value
	}{
		{"gi:1:1", 250, source.IntValue(19968)},
		{"gi:1:1", 251, source.IntValue(19456)},
		{"gi:1:1", 252, source.IntValue(512)},
		{"gi:1:2", 250, source.IntValue(4864)},
		{"gi:1:2", 251, source.IntValue(4736)},
		{"gi:1:2", 252, source.IntValue(128)},
		{"gi:1:1", 1001, source.Value{}},       // profiling: not through NVML
		{"gi:1:1", 150, source.Value{}},        // a GPU-only field
		{"gi:1:2", 203, source.Value{}},        // GPU-only
		{"gpu:1", 203, source.Value{}},         // no whole-GPU utilization in MIG mode
		{"gpu:1", 250, source.IntValue(40960)}, // the parent's memory
		{"gpu:1", 252, source.IntValue(960)},
		{"gpu:1", 150, source.IntValue(38)},
		{"gpu:0", 203, source.IntValue(87)}, // the other GPU is not in MIG mode
		{"gpu:0", 1001, source.Value{}},
	}
	for _, tc := range cases {
		if got := value(t, s, tc.entity, tc.field); got != tc.want {
			t.Errorf("%s field %d = %+v, want %+v", tc.entity, tc.field, got, tc.want)
		}
	}

	// Each GPU instance carries its placement start, which NVIDIA's DRA
	// driver names dynamic-MIG devices by.
	for _, e := range s.Inventory.Entities {
		want := map[string]int{"gi:1:1": 4, "gi:1:2": 0}
		if w, ok := want[e.Key()]; ok && (!e.MIGPlacementKnown || e.MIGPlacementStart != w) {
			t.Errorf("%s placement %d known %v, want %d", e.Key(), e.MIGPlacementStart, e.MIGPlacementKnown, w)
		}
	}

	// Reconfiguration: GPU instance 2 is made again, split into two compute
	// instances (new MIG devices, new UUIDs); the inventory changes.
	n.update(func() {
		g := n.gpus[1]
		g.migs = []fakeMIG{
			g.migs[1], // GI 1 unchanged
			{uuid: migD, name: g.name + " MIG 1c.2g.10gb", gi: 2, ci: 1, slices: 2, memTotal: 9856 << 20},
			{uuid: migC, name: g.name + " MIG 1c.2g.10gb", gi: 2, ci: 0, slices: 2, memTotal: 9856 << 20},
		}
	})
	s2 := read(t, src)
	if s2.Inventory == s.Inventory {
		t.Fatal("MIG reconfiguration kept the inventory pointer")
	}
	gi2 := s2.Inventory.Entities[3]
	if gi2.Key() != "gi:1:2" || gi2.ComputeInstance != -1 || gi2.MIGProfile != "2g.10gb" || gi2.MIGUUID != "" ||
		gi2.MemoryBytes != 9856<<20 {
		t.Errorf("split instance = %+v, want GI 2 as a whole, 2g.10gb, no MIG UUID of its own", gi2)
	}
	// Each compute instance is a MIG device with its own UUID (issue 30:
	// the second one's pod was unknown_gpu), and answers for the row.
	wantDevs := []source.MIGDevice{
		{GPU: 1, GPUInstance: 1, ComputeInstance: 0, Profile: "3g.20gb", UUID: migA},
		{GPU: 1, GPUInstance: 2, ComputeInstance: 0, Profile: "1c.2g.10gb", UUID: migC},
		{GPU: 1, GPUInstance: 2, ComputeInstance: 1, Profile: "1c.2g.10gb", UUID: migD},
	}
	if !reflect.DeepEqual(s2.Inventory.MIGDevices, wantDevs) {
		t.Errorf("MIG devices = %+v, want %+v", s2.Inventory.MIGDevices, wantDevs)
	}
	var heldAs []string
	for _, v := range s2.Inventory.HeldAs(&gi2) {
		heldAs = append(heldAs, v.MIGUUID+"/"+strconv.Itoa(v.ComputeInstance))
	}
	if want := []string{migC + "/0", migD + "/1"}; !reflect.DeepEqual(heldAs, want) {
		t.Errorf("split instance held as %v, want %v", heldAs, want)
	}
	if n := logs.count("nvml inventory changed"); n != 1 {
		t.Errorf("%d 'inventory changed' lines, want 1", n)
	}

	// MIG mode off: the instances go, the GPU stays.
	n.update(func() { n.gpus[1].migs = nil })
	s3 := read(t, src)
	if got, want := keys(s3.Inventory), []string{"gpu:0", "gpu:1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("entities after MIG off = %v, want %v", got, want)
	}
	if len(src.LostGPUs()) != 0 {
		t.Errorf("LostGPUs = %v, want none", src.LostGPUs())
	}
}

func TestGPULost(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		lose func(n *fakeNode)
	}{
		{"a value call reports lost", func(n *fakeNode) { n.gpus[1].fail["GetTemperature"] = nvml.ERROR_GPU_IS_LOST }},
		{"a MIG instance reports lost", func(n *fakeNode) { n.gpus[1].fail["MIG.GetMemoryInfo_v2"] = nvml.ERROR_GPU_IS_LOST }},
		{"every call reports lost", func(n *fakeNode) { n.gpus[1].lost = true }},
		{"its event set reports lost", func(n *fakeNode) { n.gpus[1].waitLost = true }},
		{"fell off the bus", func(n *fakeNode) { n.gpus = n.gpus[:1] }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := newFakeNode(h100(), withMIG(a100()))
			src, logs := open(t, n, testConfig())
			watch(t, src, "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED")
			first := read(t, src)
			if len(first.Inventory.Entities) != 4 {
				t.Fatalf("entities = %v", keys(first.Inventory))
			}

			// The Read that meets the loss already leaves the GPU out.
			n.update(func() { tc.lose(n) })
			s := read(t, src)
			if got, want := keys(s.Inventory), []string{"gpu:0"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("entities after loss = %v, want %v", got, want)
			}
			if s.Inventory == first.Inventory {
				t.Error("inventory pointer kept after a loss")
			}
			if got := value(t, s, "gpu:0", 150); got != source.IntValue(45) {
				t.Errorf("remaining GPU = %+v, want 45", got)
			}
			gone := src.LostGPUs()
			if len(gone) != 1 || gone[0].GPU != 1 || gone[0].UUID != uuid1 || gone[0].Since.IsZero() {
				t.Errorf("LostGPUs = %+v, want GPU 1", gone)
			}
			if logs.count("gpu lost") != 1 {
				t.Errorf("want one 'gpu lost' line:\n%s", logs)
			}

			// Later reads keep serving the other GPU without a new inventory.
			s2 := read(t, src)
			if s2.Inventory != s.Inventory {
				t.Error("inventory pointer changed again")
			}
			if got := value(t, s2, "gpu:0", 150); got != source.IntValue(45) {
				t.Errorf("remaining GPU later = %+v, want 45", got)
			}
		})
	}
}

func TestLostGPUBackAfterReinit(t *testing.T) {
	t.Parallel()
	n := newFakeNode(h100(), a100())
	src, logs := open(t, n, testConfig())
	watch(t, src, "DCGM_FI_DEV_GPU_TEMP")
	read(t, src)
	n.update(func() { n.gpus[1].lost = true })
	if s := read(t, src); s.Inventory.GPUs() != 1 {
		t.Fatalf("GPUs = %d, want 1", s.Inventory.GPUs())
	}
	// The GPU is reset, which fails NVML as a whole for a while: the source
	// initialises NVML again and sees the GPU back.
	n.update(func() { n.gpus[1].lost = false; n.countRet = nvml.ERROR_DRIVER_NOT_LOADED })
	if _, err := src.Read(context.Background()); !errors.Is(err, source.ErrUnavailable) {
		t.Fatalf("Read with NVML failing = %v, want ErrUnavailable", err)
	}
	n.update(func() { n.countRet = nvml.SUCCESS })
	var s *source.Sample
	poll.Until(t, "reinitialisation", func() bool {
		var err error
		s, err = src.Read(context.Background())
		return err == nil
	})
	if s.Inventory.GPUs() != 2 || len(src.LostGPUs()) != 0 {
		t.Errorf("after reinit: %d GPUs, lost %v; want 2 and none", s.Inventory.GPUs(), src.LostGPUs())
	}
	if logs.count("gpu back") != 1 || n.inits.Load() < 2 {
		t.Errorf("want one 'gpu back' line and a second Init (%d):\n%s", n.inits.Load(), logs)
	}
}

func TestXIDEvents(t *testing.T) {
	t.Parallel()
	noEvents := a100()
	noEvents.noXID = true
	n := newFakeNode(h100(), noEvents, withMIG(&fakeGPU{uuid: uuid2, name: "NVIDIA A30", minor: 2, fail: map[string]nvml.Return{}}))
	src, logs := open(t, n, testConfig())
	watch(t, src, "DCGM_FI_DEV_XID_ERRORS")
	s := read(t, src)
	if len(s.XIDs) != 0 {
		t.Fatalf("XIDs before any = %+v", s.XIDs)
	}
	if got := value(t, s, "gpu:1", 230); got.Kind != source.Blank {
		t.Errorf("last XID on a GPU without XID events = %+v, want Blank", got)
	}

	n.update(func() {
		n.gpus[0].xids = []uint64{79, 13}
		n.gpus[2].xids = []uint64{48}
	})
	s = read(t, src)
	want := []source.XIDEvent{
		{Entity: 0, XID: 79, Time: s.Time},
		{Entity: 0, XID: 13, Time: s.Time},
		{Entity: 2, XID: 48, Time: s.Time},
	}
	if !reflect.DeepEqual(s.XIDs, want) {
		t.Errorf("XIDs = %+v, want %+v", s.XIDs, want)
	}
	for _, tc := range []struct {
		entity string
		want   source.Value
	}{{"gpu:0", source.IntValue(13)}, {"gpu:1", source.Value{}}, {"gpu:2", source.IntValue(48)}} {
		if got := value(t, s, tc.entity, 230); got != tc.want {
			t.Errorf("last XID of %s = %+v, want %+v", tc.entity, got, tc.want)
		}
	}

	// Drained once: the next read has no events and keeps the last value.
	s = read(t, src)
	if len(s.XIDs) != 0 {
		t.Errorf("XIDs reported twice: %+v", s.XIDs)
	}
	if got := value(t, s, "gpu:0", 230); got != source.IntValue(13) {
		t.Errorf("last XID after drain = %+v, want 13", got)
	}
	if n := logs.count("nvml XID events unavailable"); n != 1 {
		t.Errorf("%d 'XID events unavailable' lines, want 1", n)
	}
	// Events are drained even when the field is not watched.
	watch(t, src, "DCGM_FI_DEV_GPU_TEMP")
	n.update(func() { n.gpus[2].xids = []uint64{94} })
	if s := read(t, src); len(s.XIDs) != 1 || s.XIDs[0].XID != 94 || s.XIDs[0].Entity != 2 {
		t.Errorf("XIDs = %+v, want one 94 on GPU 2", s.XIDs)
	}
}

func TestEventSetsFreed(t *testing.T) {
	t.Parallel()
	n := newFakeNode(h100(), a100())
	src, err := New(Config{Library: n.lib, CallTimeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	watch(t, src, "DCGM_FI_DEV_GPU_TEMP")
	read(t, src)
	n.update(func() { n.gpus = n.gpus[:1] })
	read(t, src)
	if got := n.freed.Load(); got != 1 {
		t.Errorf("%d event sets freed after a GPU left, want 1", got)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if got := n.freed.Load(); got != 2 {
		t.Errorf("%d event sets freed after Close, want 2", got)
	}
	if _, err := src.Read(context.Background()); !errors.Is(err, cgocall.ErrClosed) {
		t.Errorf("Read after Close = %v, want cgocall.ErrClosed", err)
	}
}

func TestHungCall(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	n := newFakeNode(h100(), a100())
	src, _ := open(t, n, Config{CallTimeout: timeout})
	watch(t, src, "DCGM_FI_DEV_GPU_TEMP")
	read(t, src)

	release := n.hangOn("GetTemperature")
	begin := time.Now()
	_, err := src.Read(context.Background())
	if elapsed := time.Since(begin); elapsed > timeout+time.Second {
		t.Errorf("Read took %s with a hung call, want about %s", elapsed, timeout)
	}
	var ce *cgocall.CallError
	if !errors.Is(err, source.ErrUnavailable) || !errors.As(err, &ce) {
		t.Fatalf("Read = %v, want a call timeout wrapping ErrUnavailable", err)
	}
	poll.Until(t, "the hung call to start", func() bool { return n.inFlight.Load() == 1 })

	goroutines := runtime.NumGoroutine()
	for range 50 {
		begin := time.Now()
		if _, err := src.Read(context.Background()); !errors.Is(err, source.ErrUnavailable) {
			t.Fatalf("Read while hung = %v, want ErrUnavailable", err)
		}
		if elapsed := time.Since(begin); elapsed > timeout/2 {
			t.Fatalf("Read while hung took %s, want a fast failure", elapsed)
		}
		if _, err := src.Inventory(context.Background()); !errors.Is(err, source.ErrUnavailable) {
			t.Fatalf("Inventory while hung = %v, want ErrUnavailable", err)
		}
	}
	if now := runtime.NumGoroutine(); now > goroutines {
		t.Errorf("goroutines grew from %d to %d while a call hung", goroutines, now)
	}
	if n.inFlight.Load() != 1 {
		t.Errorf("%d calls blocked, want only the first", n.inFlight.Load())
	}

	// The call returns; the source initialises NVML again and reads.
	inits := n.inits.Load()
	release()
	var s *source.Sample
	poll.Until(t, "recovery", func() bool {
		var err error
		s, err = src.Read(context.Background())
		return err == nil
	})
	if got := value(t, s, "gpu:0", 150); got != source.IntValue(45) {
		t.Errorf("after recovery: %+v, want 45", got)
	}
	if n.inits.Load() == inits {
		t.Error("NVML not initialised again after a hung call")
	}
}

func TestReadHonoursContext(t *testing.T) {
	t.Parallel()
	n := newFakeNode(h100())
	src, _ := open(t, n, Config{CallTimeout: time.Minute})
	watch(t, src, "DCGM_FI_DEV_GPU_TEMP")
	release := n.hangOn("GetTemperature")
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := src.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Read = %v, want context.DeadlineExceeded", err)
	}
}

func TestInitFailure(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		ret     nvml.Return
		want    string
		missing bool
	}{
		{"library missing", nvml.ERROR_LIBRARY_NOT_FOUND, "NVML library libnvidia-ml.so.1 not found: install the NVIDIA driver or use --source=dcgm/sim", true},
		{"driver not loaded", nvml.ERROR_DRIVER_NOT_LOADED, "NVIDIA driver not loaded (ERROR_DRIVER_NOT_LOADED)", false},
		{"no permission", nvml.ERROR_NO_PERMISSION, "no permission to open the NVIDIA device files", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n := newFakeNode(h100())
			n.initRet = tc.ret
			src, logs := open(t, n, testConfig())
			_, err := src.Inventory(context.Background())
			if !errors.Is(err, source.ErrUnavailable) || errors.Is(err, ErrLibraryNotFound) != tc.missing ||
				!strings.Contains(err.Error(), tc.want) {
				t.Errorf("Inventory = %v, want ErrUnavailable saying %q", err, tc.want)
			}
			if err := src.Watch(context.Background(), catalogFields(t, "DCGM_FI_DEV_GPU_TEMP")); !errors.Is(err, source.ErrUnavailable) {
				t.Errorf("Watch = %v, want ErrUnavailable", err)
			}
			if logs.count("nvml unavailable") != 1 {
				t.Errorf("want one 'nvml unavailable' line:\n%s", logs)
			}

			err = available(context.Background(), n.lib)
			if tc.missing && (err == nil || err.Error() != tc.want) {
				t.Errorf("available = %v, want exactly %q", err, tc.want)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("available = %v, want %q", err, tc.want)
			}

			// The driver comes back: the set given while down is applied.
			n.update(func() { n.initRet = nvml.SUCCESS })
			var s *source.Sample
			poll.Until(t, "initialisation", func() bool {
				var err error
				s, err = src.Read(context.Background())
				return err == nil
			})
			if got := value(t, s, "gpu:0", 150); got != source.IntValue(45) {
				t.Errorf("value = %+v, want 45", got)
			}
		})
	}
}

func TestAvailable(t *testing.T) {
	t.Parallel()
	if err := available(context.Background(), newFakeNode(h100()).lib); err != nil {
		t.Errorf("available with a GPU = %v", err)
	}
	if err := available(context.Background(), newFakeNode().lib); err == nil || !strings.Contains(err.Error(), "no NVIDIA GPU") {
		t.Errorf("available without GPUs = %v, want an error", err)
	}
	hung := newFakeNode(h100())
	release := hung.hangOn("DeviceGetCount")
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := available(ctx, hung.lib); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("available with a hung driver = %v, want a deadline error", err)
	}
}

func TestDeviceSelection(t *testing.T) {
	t.Parallel()
	third := h100()
	third.uuid = uuid2
	n := newFakeNode(h100(), withMIG(a100()), third)
	src, logs := open(t, n, Config{GPUs: []int{1, 5}})
	watch(t, src, "DCGM_FI_DEV_GPU_TEMP")
	s := read(t, src)
	if got, want := keys(s.Inventory), []string{"gpu:1", "gi:1:1", "gi:1:2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("entities = %v, want %v", got, want)
	}
	if n := logs.count("selected GPU not present"); n != 1 {
		t.Errorf("%d 'selected GPU not present' lines, want 1", n)
	}
}

func TestProcesses(t *testing.T) {
	t.Parallel()
	g0 := h100()
	g0.procs = []nvml.ProcessInfo{
		{Pid: 100, UsedGpuMemory: 512 << 20, GpuInstanceId: math.MaxUint32, ComputeInstanceId: math.MaxUint32},
		{Pid: 101, UsedGpuMemory: math.MaxUint64, GpuInstanceId: math.MaxUint32, ComputeInstanceId: math.MaxUint32},
	}
	g1 := withMIG(a100())
	g1.procs = []nvml.ProcessInfo{{Pid: 200, UsedGpuMemory: 64 << 20, GpuInstanceId: 2, ComputeInstanceId: 0}}
	n := newFakeNode(g0, g1)

	off, _ := open(t, n, testConfig())
	read(t, off)
	if got := off.Processes(); got != nil {
		t.Errorf("Processes without Config.Processes = %+v, want nil", got)
	}

	on, _ := open(t, n, Config{Processes: true})
	read(t, on)
	want := []Process{
		{GPU: 0, UUID: uuid0, GPUInstance: -1, ComputeInstance: -1, PID: 100, UsedBytes: 512 << 20, UsedKnown: true},
		{GPU: 0, UUID: uuid0, GPUInstance: -1, ComputeInstance: -1, PID: 101},
		{GPU: 1, UUID: uuid1, GPUInstance: 2, ComputeInstance: 0, PID: 200, UsedBytes: 64 << 20, UsedKnown: true},
	}
	if got := on.Processes(); !reflect.DeepEqual(got, want) {
		t.Errorf("Processes = %+v, want %+v", got, want)
	}
}

func TestWatchNothingProvided(t *testing.T) {
	t.Parallel()
	src, logs := open(t, newFakeNode(h100()), testConfig())
	err := src.Watch(context.Background(), catalogFields(t, "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"))
	if err == nil || !strings.Contains(err.Error(), "none of the 2 fields") {
		t.Errorf("Watch(profiling only) = %v, want an error", err)
	}
	watch(t, src, "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_GPU_TEMP")
	if n := logs.count("field dropped"); n != 2 {
		t.Errorf("%d 'field dropped' lines, want 2 (once per field)", n)
	}
	if err := src.Watch(context.Background(), nil); err != nil {
		t.Errorf("Watch(nothing) = %v", err)
	}
}

func TestOldDriverCalls(t *testing.T) {
	t.Parallel()
	n := newFakeNode(h100())
	n.noSyms = true
	n.gpus[0].fail = map[string]nvml.Return{
		// Calling these on a driver without them would crash: the test
		// fails if the source does.
		"GetMemoryInfo_v2":             nvml.ERROR_FUNCTION_NOT_FOUND,
		"GetCurrentClocksEventReasons": nvml.ERROR_FUNCTION_NOT_FOUND,
	}
	src, _ := open(t, n, testConfig())
	watch(t, src, "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS")
	s := read(t, src)
	for _, tc := range []struct {
		field uint16
		want  source.Value
	}{{252, source.IntValue(1024)}, {253, source.Value{}}, {112, source.IntValue(0x24)}} {
		if got := value(t, s, "gpu:0", tc.field); got != tc.want {
			t.Errorf("field %d = %+v, want %+v", tc.field, got, tc.want)
		}
	}
	if calls := len(n.devs[0].GetMemoryInfo_v2Calls()) + len(n.devs[0].GetCurrentClocksEventReasonsCalls()); calls != 0 {
		t.Errorf("%d calls to entry points the driver lacks", calls)
	}
}

func TestClockEventReasonBits(t *testing.T) {
	t.Parallel()
	// NVML's nvmlClocksEventReason* bits must be the catalog's (DCGM's)
	// DCGM_CLOCKS_EVENT_REASON_* bits, since the mask is passed on as is.
	nvmlBits := map[string]uint64{
		"gpu_idle":       nvml.ClocksEventReasonGpuIdle,
		"clocks_setting": nvml.ClocksEventReasonApplicationsClocksSetting,
		"sw_power_cap":   nvml.ClocksEventReasonSwPowerCap,
		"hw_slowdown":    nvml.ClocksThrottleReasonHwSlowdown,
		"sync_boost":     nvml.ClocksEventReasonSyncBoost,
		"sw_thermal":     nvml.ClocksEventReasonSwThermalSlowdown,
		"hw_thermal":     nvml.ClocksThrottleReasonHwThermalSlowdown,
		"hw_power_brake": nvml.ClocksThrottleReasonHwPowerBrakeSlowdown,
		"display_clocks": nvml.ClocksEventReasonDisplayClockSetting,
	}
	f, _ := fields.MustNew().ByID(112)
	if len(f.Reasons) != len(nvmlBits) {
		t.Fatalf("catalog has %d reasons, test knows %d", len(f.Reasons), len(nvmlBits))
	}
	for _, r := range f.Reasons {
		if nvmlBits[r.Name] != r.Bit {
			t.Errorf("reason %s: catalog bit %#x, NVML bit %#x", r.Name, r.Bit, nvmlBits[r.Name])
		}
	}
}

func TestDecodeFieldValue(t *testing.T) {
	t.Parallel()
	typed := func(vt nvml.ValueType, payload uint64) nvml.FieldValue {
		fv := nvml.FieldValue{ValueType: uint32(vt), Timestamp: 1}
		binary.LittleEndian.PutUint64(fv.Value[:], payload)
		return fv
	}
	uninitialised := typed(nvml.VALUE_TYPE_DOUBLE, 7)
	uninitialised.Timestamp = 0
	cases := []struct {
		name string
		fv   nvml.FieldValue
		kind fvKind
		want source.Value
	}{
		{"unsigned int", typed(nvml.VALUE_TYPE_UNSIGNED_INT, 0xffffffff00000005), fvPlain, source.IntValue(5)},
		{"unsigned long long", typed(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, 1<<40), fvPlain, source.IntValue(1 << 40)},
		{"signed long long", typed(nvml.VALUE_TYPE_SIGNED_LONG_LONG, uint64(1<<64-3)), fvPlain, source.IntValue(-3)},
		{"signed int", typed(nvml.VALUE_TYPE_SIGNED_INT, 0xfffffffe), fvPlain, source.IntValue(-2)},
		{"unsigned short", typed(nvml.VALUE_TYPE_UNSIGNED_SHORT, 0x10007), fvPlain, source.IntValue(7)},
		{"double truncated", typed(nvml.VALUE_TYPE_DOUBLE, math.Float64bits(12.9)), fvPlain, source.IntValue(12)},
		{"NaN", typed(nvml.VALUE_TYPE_DOUBLE, math.Float64bits(math.NaN())), fvPlain, source.Value{}},
		{"unknown type", typed(nvml.VALUE_TYPE_COUNT, 1), fvPlain, source.Value{}},
		{"ECC counter without a type", typed(nvml.VALUE_TYPE_DOUBLE, 9), fvECC, source.IntValue(9)},
		{"ECC off leaves it uninitialised", uninitialised, fvECC, source.Value{}},
		{"retired pages uninitialised", uninitialised, fvRetired, source.Value{}},
		{"retired pages", typed(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, 3), fvRetired, source.IntValue(3)},
		{"memory temperature", typed(nvml.VALUE_TYPE_DOUBLE, 55), fvMemoryTemp, source.IntValue(55)},
		{"memory temperature at the bogus limit", typed(nvml.VALUE_TYPE_UNSIGNED_INT, 200), fvMemoryTemp, source.IntValue(200)},
		{"bogus memory temperature", typed(nvml.VALUE_TYPE_UNSIGNED_INT, 201), fvMemoryTemp, source.Value{}},
	}
	for _, tc := range cases {
		if got := decodeFieldValue(&tc.fv, tc.kind); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestPlanCoversCatalog(t *testing.T) {
	t.Parallel()
	// Every catalog field NVML is expected to give has a call behind it;
	// the rest are the profiling fields, the NVLink counter, and the fabric
	// fields NVML has no call for (NVSwitches, per-link bandwidth).
	p := makePlan(fields.MustNew().All())
	dropped := map[uint16]bool{}
	profiling := 0
	for _, f := range p.dropped {
		dropped[f.ID] = true
		if f.Profiling {
			profiling++
		}
		// The vGPU licence (526, nvmlDeviceGetGridLicensableFeatures in
		// DCGM) and link 0's counter (440) have no call here yet.
		if !f.Profiling && f.ID != 449 && f.ID != 440 && f.ID != 526 && !f.Fabric {
			t.Errorf("field %s (%d) has no NVML call", f.DCGMName, f.ID)
		}
	}
	if profiling != 12 || !dropped[449] {
		t.Errorf("dropped %v, want the 12 profiling fields and 449 among them", p.dropped)
	}
	// NVML's NVLink error counters and fabric info.
	for _, id := range []uint16{409, 419, 429, 439, 170, 171} {
		if dropped[id] {
			t.Errorf("field %d dropped; NVML gives it", id)
		}
	}
	if p.xidCol < 0 || len(p.gi) != 1 || p.gi[0].what != "GetMemoryInfo" {
		t.Errorf("plan: xid column %d, instance steps %+v", p.xidCol, p.gi)
	}
}

func BenchmarkRead(b *testing.B) {
	gpus := make([]*fakeGPU, 8)
	for i := range gpus {
		gpus[i] = h100()
		gpus[i].uuid = fmt.Sprintf("GPU-%08d-1111-2222-3333-444444444444", i)
		gpus[i].minor = i
	}
	n := newFakeNode(gpus...)
	src, _ := open(b, n, testConfig())
	watch(b, src, "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL",
		"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK",
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := src.Read(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// A GPU whose handle NVML refuses with NO_PERMISSION (a container given
// only some of the node's GPUs' device nodes) is left out of the inventory
// as a state of the deployment: one info line naming the GPUs, again only
// when the set changes, and no warning. Process accounting treats it alike.
func TestGPUWithoutPermissionLeftOut(t *testing.T) {
	t.Parallel()
	const line = "GPUs left out: this process has no permission to talk to them (NVML NO_PERMISSION)"
	g0, g1 := h100(), h100()
	g1.uuid, g1.bus, g1.minor = "GPU-11111111-2222-3333-4444-555555555555", "00000000:5E:00.0", 1
	g1.fail = map[string]nvml.Return{"DeviceGetHandleByIndex": nvml.ERROR_NO_PERMISSION}
	n := newFakeNode(g0, g1)
	src, logs := open(t, n, testConfig())
	steps := []struct {
		name   string
		before func()
		keys   []string
		lines  int // info lines so far
	}{
		{"GPU 1 refused", func() {}, []string{"gpu:0"}, 1},
		{"still refused", func() {}, []string{"gpu:0"}, 1},
		{"allowed", func() { n.update(func() { g1.fail = nil }) }, []string{"gpu:0", "gpu:1"}, 1},
		{"refused again", func() {
			n.update(func() { g1.fail = map[string]nvml.Return{"DeviceGetHandleByIndex": nvml.ERROR_NO_PERMISSION} })
		}, []string{"gpu:0"}, 2},
	}
	for _, st := range steps {
		st.before()
		s := read(t, src)
		if got := keys(s.Inventory); !slices.Equal(got, st.keys) {
			t.Errorf("%s: entities %v, want %v", st.name, got, st.keys)
		}
		if got := logs.count(line); got != st.lines {
			t.Errorf("%s: %d info lines, want %d:\n%s", st.name, got, st.lines, logs)
		}
	}
	if text := logs.String(); !strings.Contains(text, `level=INFO msg="`+line+`" source=nvml gpus=[1]`) || strings.Contains(text, "nvml GPU query failed") {
		t.Errorf("want the info line naming GPU 1 and no warning:\n%s", text)
	}
}

// Without permission to read GPU instances (nvmlDeviceGetGpuInstanceById
// answers ERROR_NO_PERMISSION) the instances are still listed, with their
// placement unknown.
func TestMIGPlacementRefused(t *testing.T) {
	t.Parallel()
	g := withMIG(a100())
	g.fail["GetGpuInstanceById"] = nvml.ERROR_NO_PERMISSION
	src, _ := open(t, newFakeNode(g), testConfig())
	watch(t, src, "DCGM_FI_DEV_FB_USED")
	s := read(t, src)
	instances := 0
	for _, e := range s.Inventory.Entities {
		if e.Kind != source.GPUInstance {
			continue
		}
		instances++
		if e.MIGPlacementKnown {
			t.Errorf("%s placement known (%d) though NVML refused", e.Key(), e.MIGPlacementStart)
		}
	}
	if instances != 2 {
		t.Errorf("%d GPU instances, want 2", instances)
	}
}
