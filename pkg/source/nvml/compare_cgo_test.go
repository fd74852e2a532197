//go:build cgo && linux

package nvml_test

// The acceptance test of the NVML source: one simulated GPU state, served
// once by the fake libdcgm (tests/fakedcgm) through the real go-dcgm and the
// DCGM source, and once by go-nvml's mock through the NVML source, must give
// the same exposition — family names, types, label sets and values — for
// every field both sources can give, in both namings.
//
// go-dcgm holds one connection per process and the fake is configured
// through the environment (t.Setenv), so this test is not parallel; it is
// the only DCGM user in this test binary.

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/dcgm"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/nvml"
	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

// gpuState is one GPU in DCGM's units; each source gets it in its own API's
// units (NVML: bytes, mW) with remainders DCGM truncates away.
type gpuState struct {
	uuid, name, bus string
	minor           int
	fb              [4]int64 // total, free, used, reserved MiB
	smMHz, memMHz   int64
	reasons         int64
	tempC, memTempC int64
	slowC, shutC    int64
	powerW          float64
	limitW          int64
	enforcedW       int64
	energyMJ        int64
	replays         int64
	util            [4]int64 // GPU, memory copy, encoder, decoder %
	violation       [6]int64 // power, thermal, sync boost, board limit, low utilization, reliability, as NVML reports them
	ecc             [4]int64 // SBE, DBE volatile; SBE, DBE aggregate
	retired         [3]int64 // SBE, DBE pages; pending
	remap           [4]int64 // uncorrectable, correctable, failure, pending
	recovery        int64    // driver's recovery action (nvmlDeviceGpuRecoveryAction_t)
	xids            []int64
	migs            []migState
}

type migState struct {
	uuid, profile   string
	gi, entityID    int
	slices          uint32
	fb              [3]int64 // total, free, used MiB
	computeEntityID int
}

func node() []gpuState {
	return []gpuState{
		{
			uuid: "GPU-00000000-1111-2222-3333-444444444444", name: "NVIDIA H100 80GB HBM3", bus: "00000000:3B:00.0", minor: 0,
			fb: [4]int64{81559, 80023, 1024, 512}, smMHz: 1980, memMHz: 2619, reasons: 0x4 | 0x20 | 0x100,
			tempC: 45, memTempC: 51, slowC: 87, shutC: 92, powerW: 251.5, limitW: 700, enforcedW: 650,
			energyMJ: 123456789, replays: 3, util: [4]int64{87, 41, 5, 7}, violation: [6]int64{1500, 250, 0, 40, 9000, 0},
			ecc: [4]int64{10, 1, 100, 2}, retired: [3]int64{2, 1, 1}, remap: [4]int64{1, 4, 0, 1}, recovery: 1, xids: []int64{79},
		},
		{
			uuid: "GPU-11111111-1111-2222-3333-444444444444", name: "NVIDIA A100-SXM4-40GB", bus: "00000000:5E:00.0", minor: 3,
			fb: [4]int64{40960, 40000, 960, 0}, smMHz: 1410, memMHz: 1215, reasons: 0x1,
			tempC: 38, memTempC: 40, slowC: 90, shutC: 95, powerW: 61.25, limitW: 400, enforcedW: 400,
			energyMJ: 987654, replays: 0, util: [4]int64{0, 0, 0, 0}, violation: [6]int64{0, 0, 0, 0, 0, 0},
			migs: []migState{
				{uuid: "MIG-aaaaaaaa-1111-2222-3333-444444444444", profile: "3g.20gb", gi: 1, entityID: 7, slices: 3,
					fb: [3]int64{19968, 19456, 512}, computeEntityID: 20},
				{uuid: "MIG-bbbbbbbb-1111-2222-3333-444444444444", profile: "1g.5gb", gi: 2, entityID: 8, slices: 1,
					fb: [3]int64{4864, 4736, 128}, computeEntityID: 21},
			},
		},
	}
}

// dcgmState is the state as the fake libdcgm serves it; XID events are
// left out when xidTime is zero.
func dcgmState(gpus []gpuState, xidTime time.Time) fakedcgm.State {
	st := fakedcgm.State{Driver: "550.54.15"}
	for i, g := range gpus {
		st.GPUs = append(st.GPUs, fakedcgm.GPU{ID: i, UUID: g.uuid, Name: g.name, BusID: g.bus, Minor: g.minor, FBMiB: g.fb[0]})
		ints := map[int]int64{
			250: g.fb[0], 251: g.fb[1], 252: g.fb[2], 253: g.fb[3],
			100: g.smMHz, 101: g.memMHz, 112: g.reasons, 150: g.tempC, 140: g.memTempC, 158: g.slowC, 159: g.shutC,
			156: g.energyMJ, 202: g.replays, 203: g.util[0], 204: g.util[1], 206: g.util[2], 207: g.util[3],
			240: g.violation[0], 241: g.violation[1], 242: g.violation[2], 243: g.violation[3], 244: g.violation[4], 245: g.violation[5],
			310: g.ecc[0], 311: g.ecc[1], 312: g.ecc[2], 313: g.ecc[3],
			390: g.retired[0], 391: g.retired[1], 392: g.retired[2],
			393: g.remap[0], 394: g.remap[1], 395: g.remap[2], 396: g.remap[3],
			1523: g.recovery,
		}
		if len(g.xids) == 0 {
			// DCGM reports 0 before any XID; the fake leaves the field
			// empty unless told.
			ints[230] = 0
		}
		for id, v := range ints {
			st.Values = append(st.Values, fakedcgm.Int(fakedcgm.EntityGPU, i, id, v))
		}
		// DCGM's power fields are doubles.
		st.Values = append(st.Values,
			fakedcgm.Float(fakedcgm.EntityGPU, i, 155, g.powerW),
			fakedcgm.Float(fakedcgm.EntityGPU, i, 160, float64(g.limitW)),
			fakedcgm.Float(fakedcgm.EntityGPU, i, 164, float64(g.enforcedW)))
		for k, x := range g.xids {
			if xidTime.IsZero() {
				break
			}
			st.XIDs = append(st.XIDs, fakedcgm.XID{GPU: i, Code: x, Time: xidTime.Add(time.Duration(k) * time.Millisecond)})
		}
		for _, m := range g.migs {
			st.Instances = append(st.Instances, fakedcgm.Instance{EntityID: m.entityID, GPU: i, Instance: m.gi,
				Profile: m.profile, Slices: int(m.slices), UUID: m.uuid, FBMiB: m.fb[0]})
			st.ComputeInstances = append(st.ComputeInstances, fakedcgm.ComputeInstance{EntityID: m.computeEntityID,
				GI: m.entityID, UUID: m.uuid})
			for k, id := range []int{250, 251, 252} {
				st.Values = append(st.Values, fakedcgm.Int(fakedcgm.EntityGI, m.entityID, id, m.fb[k]))
			}
			st.Values = append(st.Values, fakedcgm.Int(fakedcgm.EntityGI, m.entityID, 253, 0))
		}
	}
	return st
}

// nvmlLibrary is the state as go-nvml's mock serves it: bytes and mW, with
// remainders below DCGM's units.
func nvmlLibrary(gpus []gpuState) gonvml.Interface {
	bytesOf := func(mib int64) uint64 { return uint64(mib)<<20 + 4095 }
	var mocks []nvml.MockGPU
	for _, g := range gpus {
		m := nvml.MockGPU{
			UUID: g.uuid, Name: g.name, BusID: g.bus, Minor: g.minor,
			MemTotal: bytesOf(g.fb[0]), MemFree: bytesOf(g.fb[1]), MemUsed: bytesOf(g.fb[2]), MemReserved: bytesOf(g.fb[3]),
			SMClockMHz: uint32(g.smMHz), MemClockMHz: uint32(g.memMHz), ClockEventReasons: uint64(g.reasons),
			TempC: uint32(g.tempC), SlowdownC: uint32(g.slowC), ShutdownC: uint32(g.shutC),
			PowerMW: uint32(g.powerW * 1000), PowerLimitMW: uint32(g.limitW*1000 + 999), EnforcedLimitMW: uint32(g.enforcedW*1000 + 500),
			PCIeReplays: int(g.replays), UtilPercent: uint32(g.util[0]), MemUtilPercent: uint32(g.util[1]),
			EncoderPercent: uint32(g.util[2]), DecoderPercent: uint32(g.util[3]), RetiredSBE: int(g.retired[0]),
			FieldValues: map[uint32]uint64{
				gonvml.FI_DEV_MEMORY_TEMP:                 uint64(g.memTempC),
				gonvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION:    uint64(g.energyMJ),
				gonvml.FI_DEV_PERF_POLICY_POWER:           uint64(g.violation[0]),
				gonvml.FI_DEV_PERF_POLICY_THERMAL:         uint64(g.violation[1]),
				gonvml.FI_DEV_PERF_POLICY_SYNC_BOOST:      uint64(g.violation[2]),
				gonvml.FI_DEV_PERF_POLICY_BOARD_LIMIT:     uint64(g.violation[3]),
				gonvml.FI_DEV_PERF_POLICY_LOW_UTILIZATION: uint64(g.violation[4]),
				gonvml.FI_DEV_PERF_POLICY_RELIABILITY:     uint64(g.violation[5]),
				gonvml.FI_DEV_ECC_SBE_VOL_TOTAL:           uint64(g.ecc[0]),
				gonvml.FI_DEV_ECC_DBE_VOL_TOTAL:           uint64(g.ecc[1]),
				gonvml.FI_DEV_ECC_SBE_AGG_TOTAL:           uint64(g.ecc[2]),
				gonvml.FI_DEV_ECC_DBE_AGG_TOTAL:           uint64(g.ecc[3]),
				gonvml.FI_DEV_RETIRED_DBE:                 uint64(g.retired[1]),
				gonvml.FI_DEV_RETIRED_PENDING:             uint64(g.retired[2]),
				gonvml.FI_DEV_REMAPPED_UNC:                uint64(g.remap[0]),
				gonvml.FI_DEV_REMAPPED_COR:                uint64(g.remap[1]),
				gonvml.FI_DEV_REMAPPED_FAILURE:            uint64(g.remap[2]),
				gonvml.FI_DEV_REMAPPED_PENDING:            uint64(g.remap[3]),
				gonvml.FI_DEV_GET_GPU_RECOVERY_ACTION:     uint64(g.recovery),
			},
		}
		for _, x := range g.xids {
			m.XIDs = append(m.XIDs, uint64(x))
		}
		for _, mg := range g.migs {
			m.MIG = append(m.MIG, nvml.MockMIG{UUID: mg.uuid, Name: g.name + " MIG " + mg.profile, GPUInstance: mg.gi,
				Slices: mg.slices, MemTotal: bytesOf(mg.fb[0]), MemFree: bytesOf(mg.fb[1]), MemUsed: bytesOf(mg.fb[2])})
		}
		mocks = append(mocks, m)
	}
	return nvml.NewMockLibrary(mocks...)
}

// comparable returns the catalog fields the NVML source gives.
func comparableFields() []fields.Field {
	var set []fields.Field
	for _, f := range fields.MustNew().All() {
		// Fabric fields: the GPUs here have no NVLink fabric. The NVML
		// source has no call for the vGPU licence (526) or link 0's
		// counter (440).
		if !f.Profiling && f.ID != 449 && f.ID != 440 && f.ID != 526 && !f.Fabric {
			set = append(set, f)
		}
	}
	return set
}

func TestSameExpositionAsDCGM(t *testing.T) {
	fakedcgm.Load(t)
	gpus := node()
	env := fakedcgm.NewEnv(t, dcgmState(gpus, time.Time{}))
	env.Setenv(t)
	ctx := context.Background()
	set := comparableFields()

	dsrc, err := dcgm.New(dcgm.Config{Interval: time.Second, CallTimeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dsrc.Close() })
	nsrc, err := nvml.New(nvml.Config{Library: nvmlLibrary(gpus), CallTimeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nsrc.Close() })
	for _, src := range []source.Source{dsrc, nsrc} {
		if err := src.Watch(ctx, set); err != nil {
			t.Fatalf("%s Watch: %v", src.Name(), err)
		}
	}
	// DCGM reports XIDs newer than its watch.
	env.Write(t, dcgmState(gpus, time.Now().Add(time.Millisecond)))

	var samples [2]*source.Sample
	for i, src := range []source.Source{dsrc, nsrc} {
		s, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("%s Read: %v", src.Name(), err)
		}
		samples[i] = s
	}

	namings := []struct {
		name string
		opts exposition.Options
		// families the page must have, so that equal pages are not
		// equally empty
		want []string
	}{
		{"prometheus", exposition.Options{}, append([]string{"gpu_info", "gpu_mig_instance_info"}, names(set)...)},
		{"dcgm", exposition.Options{Naming: exposition.NamingDCGM, DCGM: exposition.DCGMOptions{Hostname: "node-1"}}, nil},
	}
	for _, nm := range namings {
		dcgmPage := families(t, render(samples[0], nm.opts))
		nvmlPage := families(t, render(samples[1], nm.opts))
		for _, name := range nm.want {
			if _, ok := nvmlPage[name]; !ok {
				t.Errorf("%s naming: family %s missing from the NVML page", nm.name, name)
			}
		}
		if len(nvmlPage) < len(set) {
			t.Errorf("%s naming: %d families on the NVML page, want at least %d", nm.name, len(nvmlPage), len(set))
		}
		for name := range union(dcgmPage, nvmlPage) {
			if dcgmPage[name] != nvmlPage[name] {
				t.Errorf("%s naming: family %s differs\n--- DCGM source:\n%s--- NVML source:\n%s", nm.name, name, dcgmPage[name], nvmlPage[name])
			}
		}
	}

	var xids [2][]string
	for i, s := range samples {
		for _, x := range s.XIDs {
			xids[i] = append(xids[i], fmt.Sprintf("%s xid %d", s.Inventory.Entities[x.Entity].Key(), x.XID))
		}
	}
	if !slices.Equal(xids[0], xids[1]) || len(xids[1]) != 1 {
		t.Errorf("XID events: DCGM %v, NVML %v; want the same one", xids[0], xids[1])
	}
}

func render(s *source.Sample, opts exposition.Options) []byte {
	targets := make([]exposition.Holding, len(s.Inventory.Entities))
	for i := range targets {
		targets[i] = exposition.Holding{Entity: i}
	}
	return exposition.NewRenderer(opts).Render(exposition.Input{Sample: s, Holdings: targets}).Text
}

// families parses a text page into one canonical text per family: type,
// then its series sorted, each as labels and value.
func families(t *testing.T, text []byte) map[string]string {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("page does not parse: %v\n%s", err, text)
	}
	out := map[string]string{}
	for name, mf := range mfs {
		var series []string
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			series = append(series, fmt.Sprintf("{%s} %g", strings.Join(labels, ","), metricValue(m)))
		}
		sort.Strings(series)
		out[name] = mf.GetType().String() + "\n" + strings.Join(series, "\n") + "\n"
	}
	return out
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

func names(set []fields.Field) []string {
	var out []string
	for _, f := range set {
		out = append(out, f.Name)
	}
	return out
}

func union(a, b map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
