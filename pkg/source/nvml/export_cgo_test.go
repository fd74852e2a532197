//go:build cgo && linux

package nvml

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// MockGPU is the state of one mocked GPU in NVML's own units, for the tests
// of package nvml_test, which NewMockLibrary serves through go-nvml's mock.
type MockGPU struct {
	UUID, Name, BusID string
	Minor             int
	// Framebuffer memory in bytes.
	MemTotal, MemFree, MemUsed, MemReserved uint64
	SMClockMHz, MemClockMHz                 uint32
	ClockEventReasons                       uint64
	TempC, SlowdownC, ShutdownC             uint32
	PowerMW, PowerLimitMW, EnforcedLimitMW  uint32
	PCIeReplays                             int
	UtilPercent, MemUtilPercent             uint32
	EncoderPercent, DecoderPercent          uint32
	RetiredSBE                              int
	// FieldValues answer nvmlDeviceGetFieldValues (as unsigned long long),
	// by NVML field id; other ids are not supported.
	FieldValues map[uint32]uint64
	// MIG devices; the GPU is in MIG mode when there are some.
	MIG []MockMIG
	// XIDs are pending XID events.
	XIDs []uint64
}

// MockMIG is one MIG device (compute instance).
type MockMIG struct {
	UUID, Name                   string
	GPUInstance, ComputeInstance int
	Slices                       uint32
	MemTotal, MemFree, MemUsed   uint64 // bytes
}

// NewMockLibrary returns go-nvml's mock serving the GPUs.
func NewMockLibrary(gpus ...MockGPU) nvml.Interface {
	var fakes []*fakeGPU
	for _, g := range gpus {
		f := &fakeGPU{
			uuid: g.UUID, name: g.Name, bus: g.BusID, minor: g.Minor,
			memTotal: g.MemTotal, memFree: g.MemFree, memUsed: g.MemUsed, memReserved: g.MemReserved,
			smMHz: g.SMClockMHz, memMHz: g.MemClockMHz, reasons: g.ClockEventReasons,
			temp: g.TempC, slowdown: g.SlowdownC, shutdown: g.ShutdownC,
			powerMW: g.PowerMW, limitMW: g.PowerLimitMW, enforcedMW: g.EnforcedLimitMW,
			replays: g.PCIeReplays, util: g.UtilPercent, memUtil: g.MemUtilPercent,
			enc: g.EncoderPercent, dec: g.DecoderPercent, retiredSBE: g.RetiredSBE,
			fv: map[uint32]nvml.FieldValue{}, xids: g.XIDs,
		}
		for id, v := range g.FieldValues {
			f.fv[id] = ull(v)
		}
		for _, m := range g.MIG {
			f.migs = append(f.migs, fakeMIG{uuid: m.UUID, name: m.Name, gi: m.GPUInstance, ci: m.ComputeInstance,
				slices: m.Slices, memTotal: m.MemTotal, memFree: m.MemFree, memUsed: m.MemUsed})
		}
		fakes = append(fakes, f)
	}
	return newFakeNode(fakes...).lib
}
