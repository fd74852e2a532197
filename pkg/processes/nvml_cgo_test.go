//go:build cgo && linux

package processes

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// mockGPU is the state of one mocked device, in NVML's terms.
type mockGPU struct {
	uuid     string
	compute  []nvml.ProcessInfo
	graphics []nvml.ProcessInfo
	mps      []nvml.ProcessInfo
	// samples are the utilization samples the driver holds; the call
	// returns those newer than its lastSeen argument, as NVML does.
	samples []nvml.ProcessUtilizationSample
	// ring, when set, is the driver's utilization sample ring instead:
	// the call answers from it as nvml.h documents (nvmlAnswer).
	ring   []period
	noUtil bool        // GetProcessUtilization answers NOT_SUPPORTED
	grows  bool        // samples arrive between go-nvml's two calls (it panics)
	fail   nvml.Return // every listing call answers it
	// lost is how the GPU fell off the bus; NVML answers GPU_IS_LOST
	// then ("the target GPU has fallen off the bus or is otherwise
	// inaccessible", nvml.h, nvmlDeviceGetHandleByIndex_v2 and the calls
	// on a device).
	lost lostAt
	// denied: DeviceGetHandleByIndex answers NO_PERMISSION ("the user
	// doesn't have permission to talk to this device", nvml.h), as for a
	// container without the GPU's device node.
	denied bool
	// migListFail is what GetMigDeviceHandleByIndex answers, when set.
	migListFail nvml.Return
	migs        []*mockGPU // MIG devices: the GPU is in MIG mode
	gi          int        // GPU instance id of a MIG device
	seen        []uint64   // lastSeen arguments received
}

// lostAt is where a lost GPU's calls start to fail.
type lostAt uint8

const (
	notLost    lostAt = iota
	lostHandle        // DeviceGetHandleByIndex answers GPU_IS_LOST
	lostCalls         // the handle is given; every call on it answers GPU_IS_LOST
)

func (g *mockGPU) isLost(m *mockNVML, at lostAt) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return g.lost != notLost && g.lost <= at
}

type mockNVML struct {
	mu    sync.Mutex
	gpus  []*mockGPU
	inits int
	// missing are the symbols the driver's library lacks: go-nvml calls
	// them unchecked, and the process crashes (see NVMLSampler).
	missing []string
}

func (m *mockNVML) device(g *mockGPU) *mock.Device {
	list := func(pick func() []nvml.ProcessInfo) func() ([]nvml.ProcessInfo, nvml.Return) {
		return func() ([]nvml.ProcessInfo, nvml.Return) {
			if g.isLost(m, lostCalls) {
				return nil, nvml.ERROR_GPU_IS_LOST
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			if g.fail != nvml.SUCCESS {
				return nil, g.fail
			}
			return append([]nvml.ProcessInfo(nil), pick()...), nvml.SUCCESS
		}
	}
	d := &mock.Device{
		GetUUIDFunc: func() (string, nvml.Return) {
			if g.isLost(m, lostCalls) {
				return "", nvml.ERROR_GPU_IS_LOST
			}
			return g.uuid, nvml.SUCCESS
		},
		GetComputeRunningProcessesFunc:  list(func() []nvml.ProcessInfo { return g.compute }),
		GetGraphicsRunningProcessesFunc: list(func() []nvml.ProcessInfo { return g.graphics }),
		GetMPSComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			if m.lacks("nvmlDeviceGetMPSComputeRunningProcesses") {
				panic("nvmlDeviceGetMPSComputeRunningProcesses called on a library without it")
			}
			return list(func() []nvml.ProcessInfo { return g.mps })()
		},
		GetGpuInstanceIdFunc: func() (int, nvml.Return) { return g.gi, nvml.SUCCESS },
		GetMaxMigDeviceCountFunc: func() (int, nvml.Return) {
			if g.isLost(m, lostCalls) {
				return 0, nvml.ERROR_GPU_IS_LOST
			}
			return len(g.migs) + 1, nvml.SUCCESS
		},
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if g.isLost(m, lostCalls) {
				return 0, 0, nvml.ERROR_GPU_IS_LOST
			}
			if len(g.migs) > 0 {
				return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
			}
			return 0, 0, nvml.ERROR_NOT_SUPPORTED
		},
		GetProcessUtilizationFunc: func(last uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
			if g.isLost(m, lostCalls) {
				return nil, nvml.ERROR_GPU_IS_LOST
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			g.seen = append(g.seen, last)
			if g.grows {
				// go-nvml v0.13 GetProcessUtilization sizes its buffer with
				// a first call and slices it to the count of the second;
				// NVML answers INSUFFICIENT_SIZE with a larger count when
				// samples came in between, and the slice panics.
				buf := make([]nvml.ProcessUtilizationSample, 1)
				n := 2
				return buf[:n], nvml.ERROR_INSUFFICIENT_SIZE
			}
			if g.noUtil {
				return nil, nvml.ERROR_NOT_SUPPORTED
			}
			if g.ring != nil {
				if out := nvmlAnswer(g.ring, last); len(out) > 0 {
					return out, nvml.SUCCESS
				}
				return nil, nvml.ERROR_NOT_FOUND
			}
			var out []nvml.ProcessUtilizationSample
			for _, s := range g.samples {
				if s.TimeStamp > last {
					out = append(out, s)
				}
			}
			if len(out) == 0 {
				// "If no valid sample entries are found since the
				// lastSeenTimeStamp, NVML_ERROR_NOT_FOUND is returned."
				return nil, nvml.ERROR_NOT_FOUND
			}
			return out, nvml.SUCCESS
		},
	}
	d.GetMigDeviceHandleByIndexFunc = func(j int) (nvml.Device, nvml.Return) {
		m.mu.Lock()
		fail := g.migListFail
		m.mu.Unlock()
		if fail != nvml.SUCCESS {
			return nil, fail
		}
		if j >= len(g.migs) {
			return nil, nvml.ERROR_NOT_FOUND // an empty slot
		}
		return m.device(g.migs[j]), nvml.SUCCESS
	}
	return d
}

// lacks reports whether the library lacks every version of the symbol
// (go-nvml falls back from _v3 to _v2 to the unversioned one).
func (m *mockNVML) lacks(symbol string) bool {
	for _, v := range []string{symbol, symbol + "_v2", symbol + "_v3"} {
		if !slices.Contains(m.missing, v) {
			return false
		}
	}
	return true
}

func newMockNVML(gpus ...*mockGPU) *mockNVML {
	return &mockNVML{gpus: gpus}
}

func (m *mockNVML) lib() *mock.Interface {
	return &mock.Interface{
		InitFunc:     func() nvml.Return { m.mu.Lock(); m.inits++; m.mu.Unlock(); return nvml.SUCCESS },
		ShutdownFunc: func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) {
			return len(m.gpus), nvml.SUCCESS
		},
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if m.gpus[i].isLost(m, lostHandle) {
				return nil, nvml.ERROR_GPU_IS_LOST
			}
			m.mu.Lock()
			denied := m.gpus[i].denied
			m.mu.Unlock()
			if denied {
				return nil, nvml.ERROR_NO_PERMISSION
			}
			return m.device(m.gpus[i]), nvml.SUCCESS
		},
		ExtensionsFunc: func() nvml.ExtendedInterface {
			return &mock.ExtendedInterface{LookupSymbolFunc: func(sym string) error {
				if slices.Contains(m.missing, sym) {
					return errors.New("undefined symbol: " + sym)
				}
				return nil
			}}
		},
	}
}

func newTestSampler(t *testing.T, m *mockNVML) *NVMLSampler {
	t.Helper()
	s, err := NewNVML(NVMLConfig{Library: m.lib()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func pinfo(pid uint32, used uint64) nvml.ProcessInfo {
	return nvml.ProcessInfo{Pid: pid, UsedGpuMemory: used, GpuInstanceId: 0xFFFFFFFF, ComputeInstanceId: 0xFFFFFFFF}
}

// primeSampler makes the first read, which only sets where the next reads
// of utilization samples start, and returns its devices.
func primeSampler(t *testing.T, s *NVMLSampler) []Device {
	t.Helper()
	devs, err := s.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		if d.Utilization {
			t.Errorf("first read of %s reports utilization: it has no previous read", d.UUID)
		}
	}
	return devs
}

func TestNVMLSamplerListsAndMerges(t *testing.T) {
	t.Parallel()
	g := &mockGPU{
		uuid:     "GPU-0",
		compute:  []nvml.ProcessInfo{pinfo(10, 4<<30), pinfo(11, 1<<30)},
		graphics: []nvml.ProcessInfo{pinfo(10, 4<<30), pinfo(12, ^uint64(0))},
		// What the driver buffered before the exporter started.
		samples: []nvml.ProcessUtilizationSample{{Pid: 10, TimeStamp: 50, SmUtil: 99}},
	}
	m := newMockNVML(g)
	s := newTestSampler(t, m)
	devs := primeSampler(t, s)
	if len(devs) != 1 || len(devs[0].Processes) != 3 || devs[0].Processes[0].Sampled {
		t.Fatalf("first read = %+v; want the listed processes, without the buffered samples", devs)
	}
	m.mu.Lock()
	g.samples = append(g.samples,
		nvml.ProcessUtilizationSample{Pid: 10, TimeStamp: 100, SmUtil: 60, MemUtil: 30, EncUtil: 1, DecUtil: 2},
		nvml.ProcessUtilizationSample{Pid: 10, TimeStamp: 200, SmUtil: 80, MemUtil: 40},
		nvml.ProcessUtilizationSample{Pid: 13, TimeStamp: 150, SmUtil: 5}, // sampled, then exited
	)
	m.mu.Unlock()
	devs, err := s.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 || devs[0].UUID != "GPU-0" || devs[0].GPUInstance != -1 || !devs[0].Utilization {
		t.Fatalf("devices = %+v", devs)
	}
	want := map[uint32]Process{
		10: {PID: 10, Type: Compute | Graphics, UsedBytes: 4 << 30, UsedKnown: true, SM: 70, Memory: 35, Encoder: 0.5, Decoder: 1, Sampled: true},
		11: {PID: 11, Type: Compute, UsedBytes: 1 << 30, UsedKnown: true},
		12: {PID: 12, Type: Graphics, UsedBytes: ^uint64(0), UsedKnown: false},
		13: {PID: 13, SM: 5, Sampled: true, Unlisted: true},
	}
	if len(devs[0].Processes) != len(want) {
		t.Fatalf("processes = %+v", devs[0].Processes)
	}
	for _, p := range devs[0].Processes {
		if p != want[p.PID] {
			t.Errorf("process %d = %+v, want %+v", p.PID, p, want[p.PID])
		}
	}
	// The next read asks for samples newer than the newest seen; none
	// came, so every process was idle.
	devs, err = s.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(g.seen) != 3 || g.seen[0] != 0 || g.seen[1] != 50 || g.seen[2] != 200 {
		t.Errorf("lastSeen arguments = %v, want [0 50 200]", g.seen)
	}
	for _, p := range devs[0].Processes {
		if p.Sampled || p.SM != 0 {
			t.Errorf("second read: process %+v has utilization without a new sample", p)
		}
	}
	if !devs[0].Utilization {
		t.Error("NOT_FOUND (no new sample) read as no per-process utilization")
	}
}

func TestNVMLSamplerMPS(t *testing.T) {
	t.Parallel()
	// Under MPS the compute list holds the MPS server, the MPS list its
	// clients.
	g := &mockGPU{uuid: "GPU-0",
		compute: []nvml.ProcessInfo{pinfo(5, 300<<20)},
		mps:     []nvml.ProcessInfo{pinfo(20, 2<<30), pinfo(21, 3<<30)},
	}
	m := newMockNVML(g)
	s := newTestSampler(t, m)
	primeSampler(t, s)
	m.mu.Lock()
	g.samples = []nvml.ProcessUtilizationSample{{Pid: 20, TimeStamp: 1, SmUtil: 40}, {Pid: 21, TimeStamp: 1, SmUtil: 10}}
	m.mu.Unlock()
	devs, err := s.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint32]Process{}
	for _, p := range devs[0].Processes {
		got[p.PID] = p
	}
	if got[20].Type != MPS || got[20].UsedBytes != 2<<30 || got[20].SM != 40 || got[21].SM != 10 || got[5].Type != Compute {
		t.Errorf("processes = %+v", devs[0].Processes)
	}
}

func TestNVMLSamplerMIG(t *testing.T) {
	t.Parallel()
	g := &mockGPU{uuid: "GPU-0", compute: []nvml.ProcessInfo{pinfo(99, 1)}, migs: []*mockGPU{
		{uuid: "MIG-a", gi: 1, compute: []nvml.ProcessInfo{pinfo(30, 5<<30)}, noUtil: true},
		{uuid: "MIG-b", gi: 2, compute: []nvml.ProcessInfo{pinfo(31, 6<<30)}, noUtil: true},
	}}
	plain := &mockGPU{uuid: "GPU-1", compute: []nvml.ProcessInfo{pinfo(40, 1<<30)}}
	s := newTestSampler(t, newMockNVML(g, plain))
	primeSampler(t, s)
	devs, err := s.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 3 {
		t.Fatalf("devices = %+v; want the two MIG devices of GPU 0, then GPU 1", devs)
	}
	for i, w := range []struct {
		gpu, gi  int
		mig      string
		pid      uint32
		util     bool
		parentID string
	}{{0, 1, "MIG-a", 30, false, "GPU-0"}, {0, 2, "MIG-b", 31, false, "GPU-0"}, {1, -1, "", 40, true, "GPU-1"}} {
		d := devs[i]
		if d.GPU != w.gpu || d.GPUInstance != w.gi || d.MIGUUID != w.mig || d.UUID != w.parentID || d.Utilization != w.util ||
			len(d.Processes) != 1 || d.Processes[0].PID != w.pid {
			t.Errorf("device %d = %+v", i, d)
		}
	}
}

func TestNVMLSamplerDeviceFailure(t *testing.T) {
	t.Parallel()
	bad := &mockGPU{uuid: "GPU-0", fail: nvml.ERROR_UNKNOWN}
	good := &mockGPU{uuid: "GPU-1", compute: []nvml.ProcessInfo{pinfo(1, 1)}}
	m := newMockNVML(bad, good)
	s := newTestSampler(t, m)
	devs, err := s.Sample(context.Background())
	if !errors.Is(err, nvml.ERROR_UNKNOWN) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("error = %v, want the failing device's, not unavailability", err)
	}
	if len(devs) != 1 || devs[0].UUID != "GPU-1" {
		t.Fatalf("devices = %+v; want the readable GPU", devs)
	}
	m.mu.Lock()
	bad.fail = nvml.SUCCESS
	m.mu.Unlock()
	devs, err = s.Sample(context.Background())
	if err != nil || len(devs) != 2 {
		t.Fatalf("after recovery: %+v, %v", devs, err)
	}
	if m.inits != 1 {
		t.Errorf("NVML initialised %d times, want once", m.inits)
	}
}

// A GPU fallen off the bus fails alone: the other GPUs are listed and
// read, the lost one is left out and named (index, and UUID once read) in
// one DeviceError wrapping GPU_IS_LOST, at every Sample while it stays
// lost, and is back once it answers again. Only the device count fails
// the whole Sample.
func TestNVMLSamplerLostGPU(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		lose     func(*mockGPU)
		wantUUID string // in the DeviceError
		wantRet  nvml.Return
	}{
		{"handle by index", func(g *mockGPU) { g.lost = lostHandle }, "", nvml.ERROR_GPU_IS_LOST},
		{"calls on its handle", func(g *mockGPU) { g.lost = lostCalls }, "", nvml.ERROR_GPU_IS_LOST},
		{"process listing", func(g *mockGPU) { g.fail = nvml.ERROR_GPU_IS_LOST }, "GPU-1", nvml.ERROR_GPU_IS_LOST},
		{"MIG devices", func(g *mockGPU) {
			g.migs = []*mockGPU{{uuid: "MIG-1a", gi: 1, noUtil: true}}
			g.migListFail = nvml.ERROR_GPU_IS_LOST
		}, "GPU-1", nvml.ERROR_GPU_IS_LOST},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gpus := []*mockGPU{
				{uuid: "GPU-0", compute: []nvml.ProcessInfo{pinfo(10, 1<<30)}},
				{uuid: "GPU-1", compute: []nvml.ProcessInfo{pinfo(11, 1<<30)}},
				{uuid: "GPU-2", compute: []nvml.ProcessInfo{pinfo(12, 1<<30)}},
			}
			m := newMockNVML(gpus...)
			m.mu.Lock()
			tc.lose(gpus[1])
			m.mu.Unlock()
			s := newTestSampler(t, m)
			for range 2 { // and again while it stays lost (a rescan each time)
				devs, err := s.Sample(context.Background())
				if !errors.Is(err, tc.wantRet) || errors.Is(err, ErrUnavailable) {
					t.Fatalf("error = %v; want the lost GPU's %s", err, tc.wantRet)
				}
				des := DeviceErrors(err)
				if len(des) != 1 || des[0].GPU != 1 || des[0].UUID != tc.wantUUID || des[0].MIGUUID != "" {
					t.Fatalf("device errors = %+v; want one for GPU 1 (uuid %q)", des, tc.wantUUID)
				}
				var uuids []string
				for _, d := range devs {
					uuids = append(uuids, d.UUID)
					if len(d.Processes) != 1 {
						t.Errorf("device %s processes = %+v", d.UUID, d.Processes)
					}
				}
				if !slices.Equal(uuids, []string{"GPU-0", "GPU-2"}) {
					t.Fatalf("devices = %v; want the GPUs that answer, without the lost one", uuids)
				}
			}
			m.mu.Lock()
			gpus[1] = &mockGPU{uuid: "GPU-1", compute: []nvml.ProcessInfo{pinfo(11, 1<<30)}}
			m.mu.Unlock()
			devs, err := s.Sample(context.Background())
			if err != nil || len(devs) != 3 {
				t.Fatalf("after GPU 1 answered again: %+v, %v", devs, err)
			}
		})
	}
}

// A MIG device that fails takes its GPU instance out whole: the instance
// is one entity, and its other compute instances alone would be reported
// as all of it.
func TestNVMLSamplerMIGDeviceFailure(t *testing.T) {
	t.Parallel()
	g := &mockGPU{uuid: "GPU-0", migs: []*mockGPU{
		{uuid: "MIG-a", gi: 1, compute: []nvml.ProcessInfo{pinfo(30, 1<<30)}, noUtil: true},
		{uuid: "MIG-b", gi: 1, fail: nvml.ERROR_UNKNOWN, noUtil: true}, // a second compute instance of GI 1
		{uuid: "MIG-c", gi: 2, compute: []nvml.ProcessInfo{pinfo(31, 1<<30)}, noUtil: true},
	}}
	s := newTestSampler(t, newMockNVML(g))
	devs, err := s.Sample(context.Background())
	des := DeviceErrors(err)
	if len(des) != 1 || des[0].GPU != 0 || des[0].UUID != "GPU-0" || des[0].MIGUUID != "MIG-b" || !errors.Is(err, nvml.ERROR_UNKNOWN) {
		t.Fatalf("error = %v (%+v); want MIG-b's", err, des)
	}
	if len(devs) != 1 || devs[0].MIGUUID != "MIG-c" {
		t.Fatalf("devices = %+v; want GPU instance 2 alone", devs)
	}
}

// The device count failing leaves nothing to list: the Sample fails whole.
func TestNVMLSamplerDeviceCountFails(t *testing.T) {
	t.Parallel()
	lib := newMockNVML(&mockGPU{uuid: "GPU-0"}).lib()
	lib.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	s, err := NewNVML(NVMLConfig{Library: lib})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	devs, err := s.Sample(context.Background())
	if devs != nil || !errors.Is(err, nvml.ERROR_UNKNOWN) || len(DeviceErrors(err)) != 0 {
		t.Fatalf("Sample = %+v, %v; want no devices and the count's error, of no device", devs, err)
	}
}

// Process accounting with a lost GPU attributes the other GPUs' processes
// and returns the lost GPU's failure, a counted collection error with NVML
// available.
func TestAccountantLostGPU(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeProc(t, root, 10, 1, cgroupOf(busyUID, busyCID))
	writeProc(t, root, 12, 1, cgroupOf(busyUID, busyCID))
	m := newMockNVML(
		&mockGPU{uuid: "GPU-0", compute: []nvml.ProcessInfo{pinfo(10, 1<<30)}},
		&mockGPU{uuid: "GPU-1", compute: []nvml.ProcessInfo{pinfo(11, 1<<30)}, lost: lostHandle},
		&mockGPU{uuid: "GPU-2", compute: []nvml.ProcessInfo{pinfo(12, 2<<30)}},
	)
	a, reg, _ := newTestAccountant(t, root, newTestSampler(t, m), ModeContainer, names)
	got, err := a.Collect(context.Background())
	if !errors.Is(err, nvml.ERROR_GPU_IS_LOST) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Collect error = %v; want GPU 1's GPU_IS_LOST", err)
	}
	if v := gauge(t, reg, "gpu_exporter_process_accounting_available"); v != 1 {
		t.Errorf("gpu_exporter_process_accounting_available = %v, want 1", v)
	}
	if len(got) != 2 || got[0].UUID != "GPU-0" || got[1].UUID != "GPU-2" {
		t.Fatalf("usage = %+v; want GPU-0 and GPU-2", got)
	}
	for i, want := range []uint64{1 << 30, 2 << 30} {
		if c := got[i].Containers; len(c) != 1 || c[0].Pod != "busy" || c[0].MemoryBytes != want {
			t.Errorf("%s containers = %+v", got[i].UUID, c)
		}
	}
}

// testClock is a clock the test moves; the sampler reads it on its worker.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *testClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// initLib is a mocked NVML whose Init answers ret until the test clears
// it, and counts its calls.
type initLib struct {
	*mock.Interface
	ret   atomic.Int32
	calls atomic.Int32
}

func newInitLib(m *mockNVML, ret nvml.Return) *initLib {
	l := &initLib{Interface: m.lib()}
	l.ret.Store(int32(ret))
	l.InitFunc = func() nvml.Return {
		l.calls.Add(1)
		return nvml.Return(l.ret.Load())
	}
	return l
}

// A node without NVML (no libnvidia-ml.so.1: go-nvml's Init answers
// LIBRARY_NOT_FOUND), or where nvmlInit_v2 fails (no driver, no
// permission, NVML API reference: Initialization and Cleanup): Sample
// reports the sampler unavailable, calls Init again only after a back-off
// that doubles up to UnavailableRetryMax, and works once the driver is
// there.
func TestNVMLSamplerUnavailable(t *testing.T) {
	t.Parallel()
	for _, ret := range []nvml.Return{nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED, nvml.ERROR_NO_PERMISSION, nvml.ERROR_UNKNOWN} {
		t.Run(ret.String(), func(t *testing.T) {
			t.Parallel()
			lib := newInitLib(newMockNVML(&mockGPU{uuid: "GPU-0"}), ret)
			s, err := NewNVML(NVMLConfig{Library: lib})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			clock := newTestClock()
			s.now = clock.Now
			sample := func(wantCalls int32) {
				t.Helper()
				_, err := s.Sample(context.Background())
				if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ret) {
					t.Fatalf("error = %v; want it to wrap ErrUnavailable and %s", err, ret)
				}
				if got := lib.calls.Load(); got != wantCalls {
					t.Fatalf("Init called %d times, want %d", got, wantCalls)
				}
			}
			sample(1)
			calls := int32(1)
			for _, wait := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute} {
				clock.Advance(wait - time.Second)
				sample(calls) // within the back-off: no call
				clock.Advance(time.Second)
				calls++
				sample(calls)
			}
			lib.ret.Store(int32(nvml.SUCCESS)) // the driver is installed
			clock.Advance(UnavailableRetryMax)
			devs, err := s.Sample(context.Background())
			if err != nil || len(devs) != 1 {
				t.Fatalf("after the driver came: %+v, %v", devs, err)
			}
		})
	}
}

// A driver older than the MPS listing (nvmlDeviceGetMPSComputeRunningProcesses
// and its _v2, _v3) lacks the symbol: the sampler must not call it (go-nvml
// would call an unresolved symbol), and lists compute and graphics
// processes as usual.
func TestNVMLSamplerDriverWithoutMPSListing(t *testing.T) {
	t.Parallel()
	g := &mockGPU{uuid: "GPU-0", compute: []nvml.ProcessInfo{pinfo(10, 1<<30)}, mps: []nvml.ProcessInfo{pinfo(20, 1<<30)}}
	m := newMockNVML(g)
	m.missing = []string{"nvmlDeviceGetMPSComputeRunningProcesses", "nvmlDeviceGetMPSComputeRunningProcesses_v2", "nvmlDeviceGetMPSComputeRunningProcesses_v3"}
	s := newTestSampler(t, m)
	devs, err := s.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 1 || len(devs[0].Processes) != 1 || devs[0].Processes[0].PID != 10 {
		t.Errorf("devices = %+v; want GPU-0 with its compute process", devs)
	}
}

// go-nvml panics when samples arrive between its sizing call and its read:
// that device's utilization is unknown for one read (and its samples are
// read the next time); the other devices and the processes are unharmed.
func TestNVMLSamplerUtilizationGrowsBetweenCalls(t *testing.T) {
	t.Parallel()
	racing := &mockGPU{uuid: "GPU-0", compute: []nvml.ProcessInfo{pinfo(10, 1<<30)}}
	calm := &mockGPU{uuid: "GPU-1", compute: []nvml.ProcessInfo{pinfo(20, 1<<30)}}
	m := newMockNVML(racing, calm)
	s := newTestSampler(t, m)
	primeSampler(t, s)
	m.mu.Lock()
	racing.grows = true
	m.mu.Unlock()
	devs, err := s.Sample(context.Background())
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	if len(devs) != 2 || devs[0].Utilization || len(devs[0].Processes) != 1 || !devs[1].Utilization || len(devs[1].Processes) != 1 {
		t.Fatalf("devices = %+v; want both, GPU-0 without utilization this time", devs)
	}
	m.mu.Lock()
	racing.grows = false
	racing.samples = []nvml.ProcessUtilizationSample{{Pid: 10, TimeStamp: 5, SmUtil: 30}}
	m.mu.Unlock()
	devs, err = s.Sample(context.Background())
	if err != nil || !devs[0].Utilization || devs[0].Processes[0].SM != 30 {
		t.Fatalf("next read = %+v, %v; want GPU-0's samples", devs, err)
	}
}

// Process accounting on a node without NVML says so once and in its gauge,
// returns ErrUnavailable (which the collector does not count), and starts
// working when the driver comes: the GPU operator installs it after the
// exporter started.
func TestAccountantWithoutNVML(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	lib := newInitLib(newMockNVML(&mockGPU{uuid: "GPU-0"}), nvml.ERROR_LIBRARY_NOT_FOUND)
	s, err := NewNVML(NVMLConfig{Library: lib})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	clock := newTestClock()
	s.now = clock.Now
	a, reg, logs := newTestAccountant(t, root, s, ModeContainer, names)
	for range 3 {
		if _, err := a.Collect(context.Background()); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Collect: %v, want ErrUnavailable", err)
		}
		clock.Advance(10 * time.Second)
	}
	if v := gauge(t, reg, "gpu_exporter_process_accounting_available"); v != 0 {
		t.Errorf("gpu_exporter_process_accounting_available = %v, want 0", v)
	}
	if n := strings.Count(logs.String(), "GPU process accounting unavailable"); n != 1 || !strings.Contains(logs.String(), "--collect.processes=off") {
		t.Errorf("unavailability logged %d times, want once with how to turn it off:\n%s", n, logs)
	}
	lib.ret.Store(int32(nvml.SUCCESS))
	clock.Advance(UnavailableRetry)
	if devs, err := a.Collect(context.Background()); err != nil || len(devs) != 1 {
		t.Fatalf("after the driver came: %+v, %v", devs, err)
	}
	if v := gauge(t, reg, "gpu_exporter_process_accounting_available"); v != 1 {
		t.Errorf("gpu_exporter_process_accounting_available = %v after the driver came, want 1", v)
	}
	if !strings.Contains(logs.String(), "GPU process accounting available again") {
		t.Errorf("recovery not logged:\n%s", logs)
	}
}

// NVML that initialises but cannot list the GPUs (one fallen off the bus:
// nvmlDeviceGetHandleByIndex answers GPU_IS_LOST; NVML API reference,
// Device Queries) is there: the failure is a failed read, counted as a
// collection error, so the gauge says available from the first
// collection on, as it does when the same failure comes after a good one.
func TestAccountantNVMLListingFails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		fail func(*mock.Interface)
	}{
		{"GPU lost", func(l *mock.Interface) {
			l.DeviceGetHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.ERROR_GPU_IS_LOST }
		}},
		{"count fails", func(l *mock.Interface) {
			l.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lib := newMockNVML(&mockGPU{uuid: "GPU-0"}).lib()
			tc.fail(lib)
			s, err := NewNVML(NVMLConfig{Library: lib})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			a, reg, logs := newTestAccountant(t, t.TempDir(), s, ModeContainer, names)
			if _, err := a.Collect(context.Background()); err == nil || errors.Is(err, ErrUnavailable) {
				t.Fatalf("Collect: %v; want the listing's failure, not unavailability", err)
			}
			if v := gauge(t, reg, "gpu_exporter_process_accounting_available"); v != 1 {
				t.Errorf("gpu_exporter_process_accounting_available = %v with NVML initialised, want 1", v)
			}
			if strings.Contains(logs.String(), "unavailable") {
				t.Errorf("unavailability logged with NVML initialised:\n%s", logs)
			}
		})
	}
}

// A GPU whose handle NVML refuses with NO_PERMISSION (a container given
// only some of the node's GPUs' device nodes) is left out without an error:
// it is how the exporter was deployed, not a failed read. The set of such
// GPUs is logged at info once, and again only when it changes; a GPU
// fallen off the bus beside them is still a DeviceError.
func TestNVMLSamplerGPUWithoutPermission(t *testing.T) {
	t.Parallel()
	const line = "GPU process accounting leaves out GPUs this process has no permission to talk to"
	gpus := []*mockGPU{
		{uuid: "GPU-0", compute: []nvml.ProcessInfo{pinfo(10, 1<<30)}},
		{uuid: "GPU-1", compute: []nvml.ProcessInfo{pinfo(11, 1<<30)}, denied: true},
		{uuid: "GPU-2", compute: []nvml.ProcessInfo{pinfo(12, 1<<30)}},
	}
	m := newMockNVML(gpus...)
	var logs bytes.Buffer
	var logMu sync.Mutex
	s, err := NewNVML(NVMLConfig{Library: m.lib(), Rescan: time.Nanosecond, // a rescan at every Sample
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	set := func(f func()) func() {
		return func() { m.mu.Lock(); f(); m.mu.Unlock() }
	}
	steps := []struct {
		name    string
		before  func()
		devices []string
		lost    []int    // GPUs named in DeviceErrors
		logged  []string // the info lines' gpus so far
	}{
		{"GPU 1 refused", func() {}, []string{"GPU-0", "GPU-2"}, nil, []string{"[1]"}},
		{"still refused", func() {}, []string{"GPU-0", "GPU-2"}, nil, []string{"[1]"}},
		{"GPU 2 refused too", set(func() { gpus[2].denied = true }), []string{"GPU-0"}, nil, []string{"[1]", "[1 2]"}},
		{"GPU 0 lost beside them", set(func() { gpus[0].lost = lostHandle }), nil, []int{0}, []string{"[1]", "[1 2]"}},
		{"every GPU allowed", set(func() { gpus[0].lost, gpus[1].denied, gpus[2].denied = notLost, false, false }),
			[]string{"GPU-0", "GPU-1", "GPU-2"}, nil, []string{"[1]", "[1 2]"}},
	}
	for _, st := range steps {
		st.before()
		devs, err := s.Sample(context.Background())
		var lost []int
		for _, de := range DeviceErrors(err) {
			lost = append(lost, de.GPU)
		}
		if !slices.Equal(lost, st.lost) || (len(st.lost) == 0) != (err == nil) {
			t.Errorf("%s: error %v; want device errors for GPUs %v only", st.name, err, st.lost)
		}
		if errors.Is(err, nvml.ERROR_NO_PERMISSION) {
			t.Errorf("%s: error %v names a GPU without permission", st.name, err)
		}
		var uuids []string
		for _, d := range devs {
			uuids = append(uuids, d.UUID)
		}
		if !slices.Equal(uuids, st.devices) {
			t.Errorf("%s: devices %v, want %v", st.name, uuids, st.devices)
		}
		logMu.Lock()
		text := logs.String()
		logMu.Unlock()
		var got []string
		for l := range strings.Lines(text) {
			if strings.Contains(l, line) {
				if !strings.Contains(l, "level=INFO") {
					t.Errorf("%s: not at info: %s", st.name, l)
				}
				_, g, _ := strings.Cut(strings.TrimSpace(l), "gpus=")
				got = append(got, strings.Trim(g, `"`))
			}
		}
		if !slices.Equal(got, st.logged) {
			t.Errorf("%s: logged %q, want %q:\n%s", st.name, got, st.logged, text)
		}
	}
}

// lockedWriter serialises writes to a buffer the test reads.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
