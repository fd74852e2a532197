//go:build cgo && linux

package nvml

// A node of mocked GPUs on go-nvml's mock package: every mock function reads
// the node's state under its lock when called, so a test changes the state
// between two reads. States are in NVML's own units (bytes, mW).

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// fakeGPU is one GPU. A call listed in fail returns that code; a field
// value missing from fv returns ERROR_NOT_SUPPORTED.
type fakeGPU struct {
	uuid, name, bus string
	minor           int
	memTotal        uint64 // bytes
	memFree         uint64
	memUsed         uint64
	memReserved     uint64
	smMHz, memMHz   uint32
	reasons         uint64
	temp            uint32
	slowdown        uint32
	shutdown        uint32
	powerMW         uint32
	limitMW         uint32
	enforcedMW      uint32
	replays         int
	util, memUtil   uint32
	enc, dec        uint32
	retiredSBE      int
	fv              map[uint32]nvml.FieldValue
	fail            map[string]nvml.Return
	lost            bool
	migs            []fakeMIG
	noXID           bool     // no XID events supported
	waitLost        bool     // its event set reports the GPU lost
	xids            []uint64 // pending XID events
	procs           []nvml.ProcessInfo
	// links are its NVLinks by index (none: NVLink not supported); fabric
	// its fabric manager info (nil: not supported).
	links  []fakeLink
	fabric *nvml.GpuFabricInfo
}

// fakeLink is one NVLink: active or not, its far end, its error counters
// by nvml.NvLinkErrorCounter. A link with absent set is an index NVML
// rejects (INVALID_ARGUMENT).
type fakeLink struct {
	absent     bool
	active     bool
	remoteBus  string
	remoteType nvml.IntNvLinkDeviceType
	errors     [4]uint64

	// unsupported: NVML answers NOT_SUPPORTED for this link alone; DCGM
	// expects it per link (DcgmCacheManager::UpdateNvLinkLinkState marks
	// that link NotSupported and goes on to the next).
	unsupported bool
	// fail: a call listed returns that code for this link alone.
	fail map[string]nvml.Return
}

// fakeMIG is one MIG device (compute instance) of a GPU in MIG mode.
type fakeMIG struct {
	uuid, name string
	gi, ci     int
	// placement is the GPU instance's placement start
	// (nvmlGpuInstanceInfo_t.placement.start).
	placement uint32
	slices    uint32
	memTotal  uint64 // bytes
	memFree   uint64
	memUsed   uint64
}

// ull is a field value of type unsigned long long.
func ull(v uint64) nvml.FieldValue {
	fv := nvml.FieldValue{ValueType: uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG), Timestamp: 1}
	binary.LittleEndian.PutUint64(fv.Value[:], v)
	return fv
}

// ui is a field value of type unsigned int.
func ui(v uint32) nvml.FieldValue {
	fv := nvml.FieldValue{ValueType: uint32(nvml.VALUE_TYPE_UNSIGNED_INT), Timestamp: 1}
	binary.LittleEndian.PutUint32(fv.Value[:], v)
	return fv
}

// fakeNode is a host with mocked GPUs.
type fakeNode struct {
	mu       sync.Mutex
	gpus     []*fakeGPU
	initRet  nvml.Return
	countRet nvml.Return // DeviceGetCount fails with it
	noSyms   bool        // LookupSymbol fails: the oldest calls are used
	hang     map[string]chan struct{}
	sets     map[*mock.EventSet]string // event set -> registered GPU UUID

	inFlight atomic.Int32 // calls blocked by a hang
	inits    atomic.Int32
	freed    atomic.Int32

	lib  *mock.Interface
	devs map[int]*mock.Device
	migs map[[2]int]*mock.Device
}

func newFakeNode(gpus ...*fakeGPU) *fakeNode {
	n := &fakeNode{gpus: gpus, hang: map[string]chan struct{}{}, sets: map[*mock.EventSet]string{},
		devs: map[int]*mock.Device{}, migs: map[[2]int]*mock.Device{}}
	n.lib = &mock.Interface{
		InitFunc: func() nvml.Return {
			n.inits.Add(1)
			n.mu.Lock()
			defer n.mu.Unlock()
			return n.initRet
		},
		ShutdownFunc: func() nvml.Return { return nvml.SUCCESS },
		ExtensionsFunc: func() nvml.ExtendedInterface {
			return &mock.ExtendedInterface{LookupSymbolFunc: func(string) error {
				n.mu.Lock()
				defer n.mu.Unlock()
				if n.noSyms {
					return nvml.ERROR_FUNCTION_NOT_FOUND
				}
				return nil
			}}
		},
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return "550.54.15", nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) {
			if ret := n.block("DeviceGetCount"); ret != nvml.SUCCESS {
				return 0, ret
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.countRet != nvml.SUCCESS {
				return 0, n.countRet
			}
			return len(n.gpus), nvml.SUCCESS
		},
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			var d nvml.Device
			ret := n.with(i, "DeviceGetHandleByIndex", func(*fakeGPU) { d = n.device(i) })
			return d, ret
		},
		EventSetCreateFunc: func() (nvml.EventSet, nvml.Return) {
			set := &mock.EventSet{}
			set.FreeFunc = func() nvml.Return { n.freed.Add(1); return nvml.SUCCESS }
			set.WaitFunc = func(uint32) (nvml.EventData, nvml.Return) { return n.wait(set) }
			n.mu.Lock()
			defer n.mu.Unlock()
			n.sets[set] = ""
			return set, nvml.SUCCESS
		},
	}
	return n
}

// block waits while a hang is set on call.
func (n *fakeNode) block(call string) nvml.Return {
	n.mu.Lock()
	ch := n.hang[call]
	n.mu.Unlock()
	if ch != nil {
		n.inFlight.Add(1)
		<-ch
		n.inFlight.Add(-1)
	}
	return nvml.SUCCESS
}

// hangOn makes calls named call block until release is called.
func (n *fakeNode) hangOn(call string) (release func()) {
	ch := make(chan struct{})
	n.mu.Lock()
	n.hang[call] = ch
	n.mu.Unlock()
	return func() {
		n.mu.Lock()
		delete(n.hang, call)
		n.mu.Unlock()
		close(ch)
	}
}

// update changes the state under the lock.
func (n *fakeNode) update(fn func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fn()
}

// with runs fn on GPU i's state, or returns the code the state asks for.
func (n *fakeNode) with(i int, call string, fn func(*fakeGPU)) nvml.Return {
	_ = n.block(call) // the hang itself is what the test injects
	n.mu.Lock()
	defer n.mu.Unlock()
	if i < 0 || i >= len(n.gpus) {
		return nvml.ERROR_INVALID_ARGUMENT
	}
	g := n.gpus[i]
	if g.lost {
		return nvml.ERROR_GPU_IS_LOST
	}
	if ret, ok := g.fail[call]; ok {
		return ret
	}
	fn(g)
	return nvml.SUCCESS
}

// withLink runs fn on link l of GPU i; *res is set when NVML would
// refuse the link.
func (n *fakeNode) withLink(i, l int, call string, res *nvml.Return, fn func(*fakeLink)) nvml.Return {
	return n.with(i, call, func(g *fakeGPU) {
		switch {
		case len(g.links) == 0:
			*res = nvml.ERROR_NOT_SUPPORTED
		case l < 0 || l >= len(g.links) || g.links[l].absent:
			*res = nvml.ERROR_INVALID_ARGUMENT
		case g.links[l].unsupported:
			*res = nvml.ERROR_NOT_SUPPORTED
		case g.links[l].fail[call] != nvml.SUCCESS:
			*res = g.links[l].fail[call]
		default:
			fn(&g.links[l])
		}
	})
}

// firstFailure is the first of two returns that is not SUCCESS.
func firstFailure(a, b nvml.Return) nvml.Return {
	if a != nvml.SUCCESS {
		return a
	}
	return b
}

// withMIG runs fn on MIG device j of GPU i.
func (n *fakeNode) withMIG(i, j int, call string, fn func(*fakeMIG)) nvml.Return {
	return n.with(i, call, func(g *fakeGPU) {
		if j < len(g.migs) {
			fn(&g.migs[j])
		}
	})
}

func (n *fakeNode) wait(set *mock.EventSet) (nvml.EventData, nvml.Return) {
	n.mu.Lock()
	defer n.mu.Unlock()
	uuid := n.sets[set]
	for _, g := range n.gpus {
		if g.uuid != uuid {
			continue
		}
		if g.lost || g.waitLost {
			return nvml.EventData{}, nvml.ERROR_GPU_IS_LOST
		}
		if len(g.xids) == 0 {
			return nvml.EventData{}, nvml.ERROR_TIMEOUT
		}
		x := g.xids[0]
		g.xids = g.xids[1:]
		return nvml.EventData{EventType: nvml.EventTypeXidCriticalError, EventData: x,
			GpuInstanceId: math.MaxUint32, ComputeInstanceId: math.MaxUint32}, nvml.SUCCESS
	}
	return nvml.EventData{}, nvml.ERROR_TIMEOUT
}

// device returns the mock of GPU index i (called with n.mu held).
func (n *fakeNode) device(i int) *mock.Device {
	if d, ok := n.devs[i]; ok {
		return d
	}
	d := &mock.Device{
		GetUUIDFunc: func() (v string, ret nvml.Return) {
			ret = n.with(i, "GetUUID", func(g *fakeGPU) { v = g.uuid })
			return v, ret
		},
		// nvml.h: NOT_SUPPORTED when the device has no NVLink,
		// INVALID_ARGUMENT for a link index it does not have.
		GetNvLinkStateFunc: func(l int) (v nvml.EnableState, ret nvml.Return) {
			res := nvml.SUCCESS
			ret = n.withLink(i, l, "GetNvLinkState", &res, func(k *fakeLink) {
				v = nvml.FEATURE_DISABLED
				if k.active {
					v = nvml.FEATURE_ENABLED
				}
			})
			return v, firstFailure(ret, res)
		},
		GetNvLinkRemotePciInfoFunc: func(l int) (v nvml.PciInfo, ret nvml.Return) {
			res := nvml.SUCCESS
			ret = n.withLink(i, l, "GetNvLinkRemotePciInfo", &res, func(k *fakeLink) {
				for c := range min(len(k.remoteBus), len(v.BusId)-1) {
					v.BusId[c] = int8(k.remoteBus[c])
				}
			})
			return v, firstFailure(ret, res)
		},
		GetNvLinkRemoteDeviceTypeFunc: func(l int) (v nvml.IntNvLinkDeviceType, ret nvml.Return) {
			res := nvml.SUCCESS
			ret = n.withLink(i, l, "GetNvLinkRemoteDeviceType", &res, func(k *fakeLink) { v = k.remoteType })
			return v, firstFailure(ret, res)
		},
		GetNvLinkErrorCounterFunc: func(l int, c nvml.NvLinkErrorCounter) (v uint64, ret nvml.Return) {
			res := nvml.SUCCESS
			ret = n.withLink(i, l, "GetNvLinkErrorCounter", &res, func(k *fakeLink) { v = k.errors[c] })
			return v, firstFailure(ret, res)
		},
		GetGpuFabricInfoFunc: func() (v nvml.GpuFabricInfo, ret nvml.Return) {
			res := nvml.SUCCESS
			ret = n.with(i, "GetGpuFabricInfo", func(g *fakeGPU) {
				if g.fabric == nil {
					res = nvml.ERROR_NOT_SUPPORTED
					return
				}
				v = *g.fabric
			})
			return v, firstFailure(ret, res)
		},
		GetNameFunc: func() (v string, ret nvml.Return) {
			ret = n.with(i, "GetName", func(g *fakeGPU) { v = g.name })
			return v, ret
		},
		GetPciInfoFunc: func() (v nvml.PciInfo, ret nvml.Return) {
			ret = n.with(i, "GetPciInfo", func(g *fakeGPU) {
				for k := range min(len(g.bus), len(v.BusId)-1) {
					v.BusId[k] = int8(g.bus[k])
				}
			})
			return v, ret
		},
		GetMinorNumberFunc: func() (v int, ret nvml.Return) {
			ret = n.with(i, "GetMinorNumber", func(g *fakeGPU) { v = g.minor })
			return v, ret
		},
		GetMemoryInfoFunc: func() (v nvml.Memory, ret nvml.Return) {
			ret = n.with(i, "GetMemoryInfo", func(g *fakeGPU) { v = nvml.Memory{Total: g.memTotal, Free: g.memFree, Used: g.memUsed} })
			return v, ret
		},
		GetMemoryInfo_v2Func: func() (v nvml.Memory_v2, ret nvml.Return) {
			ret = n.with(i, "GetMemoryInfo_v2", func(g *fakeGPU) {
				v = nvml.Memory_v2{Total: g.memTotal, Free: g.memFree, Used: g.memUsed, Reserved: g.memReserved}
			})
			return v, ret
		},
		GetMigModeFunc: func() (cur, pending int, ret nvml.Return) {
			ret = n.with(i, "GetMigMode", func(g *fakeGPU) {
				if len(g.migs) > 0 {
					cur, pending = nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE
				}
			})
			return cur, pending, ret
		},
		GetMaxMigDeviceCountFunc: func() (v int, ret nvml.Return) {
			ret = n.with(i, "GetMaxMigDeviceCount", func(*fakeGPU) { v = 7 })
			return v, ret
		},
		// nvmlDeviceGetGpuInstanceById: ERROR_NOT_FOUND for an id no GPU
		// instance has (nvml.h).
		GetGpuInstanceByIdFunc: func(id int) (nvml.GpuInstance, nvml.Return) {
			var gi nvml.GpuInstance
			ret := n.with(i, "GetGpuInstanceById", func(g *fakeGPU) {
				for _, m := range g.migs {
					if m.gi == id {
						info := nvml.GpuInstanceInfo{Id: uint32(id), Placement: nvml.GpuInstancePlacement{Start: m.placement, Size: m.slices}}
						gi = &mock.GpuInstance{GetInfoFunc: func() (nvml.GpuInstanceInfo, nvml.Return) { return info, nvml.SUCCESS }}
						return
					}
				}
			})
			if ret == nvml.SUCCESS && gi == nil {
				ret = nvml.ERROR_NOT_FOUND
			}
			return gi, ret
		},
		GetMigDeviceHandleByIndexFunc: func(j int) (nvml.Device, nvml.Return) {
			var d nvml.Device
			ret := n.with(i, "GetMigDeviceHandleByIndex", func(g *fakeGPU) {
				if j < len(g.migs) {
					d = n.migDevice(i, j)
				}
			})
			if ret == nvml.SUCCESS && d == nil {
				ret = nvml.ERROR_NOT_FOUND
			}
			return d, ret
		},
		GetClockInfoFunc: func(c nvml.ClockType) (v uint32, ret nvml.Return) {
			ret = n.with(i, "GetClockInfo", func(g *fakeGPU) {
				switch c {
				case nvml.CLOCK_SM:
					v = g.smMHz
				case nvml.CLOCK_MEM:
					v = g.memMHz
				}
			})
			return v, ret
		},
		GetCurrentClocksEventReasonsFunc: func() (v uint64, ret nvml.Return) {
			ret = n.with(i, "GetCurrentClocksEventReasons", func(g *fakeGPU) { v = g.reasons })
			return v, ret
		},
		GetCurrentClocksThrottleReasonsFunc: func() (v uint64, ret nvml.Return) {
			ret = n.with(i, "GetCurrentClocksThrottleReasons", func(g *fakeGPU) { v = g.reasons })
			return v, ret
		},
		GetTemperatureFunc: func(nvml.TemperatureSensors) (v uint32, ret nvml.Return) {
			ret = n.with(i, "GetTemperature", func(g *fakeGPU) { v = g.temp })
			return v, ret
		},
		GetTemperatureThresholdFunc: func(th nvml.TemperatureThresholds) (v uint32, ret nvml.Return) {
			ret = n.with(i, "GetTemperatureThreshold", func(g *fakeGPU) {
				v = g.shutdown
				if th == nvml.TEMPERATURE_THRESHOLD_SLOWDOWN {
					v = g.slowdown
				}
			})
			return v, ret
		},
		GetPowerUsageFunc: func() (v uint32, ret nvml.Return) {
			ret = n.with(i, "GetPowerUsage", func(g *fakeGPU) { v = g.powerMW })
			return v, ret
		},
		GetPowerManagementLimitFunc: func() (v uint32, ret nvml.Return) {
			ret = n.with(i, "GetPowerManagementLimit", func(g *fakeGPU) { v = g.limitMW })
			return v, ret
		},
		GetEnforcedPowerLimitFunc: func() (v uint32, ret nvml.Return) {
			ret = n.with(i, "GetEnforcedPowerLimit", func(g *fakeGPU) { v = g.enforcedMW })
			return v, ret
		},
		GetPcieReplayCounterFunc: func() (v int, ret nvml.Return) {
			ret = n.with(i, "GetPcieReplayCounter", func(g *fakeGPU) { v = g.replays })
			return v, ret
		},
		GetUtilizationRatesFunc: func() (v nvml.Utilization, ret nvml.Return) {
			ret = n.with(i, "GetUtilizationRates", func(g *fakeGPU) { v = nvml.Utilization{Gpu: g.util, Memory: g.memUtil} })
			return v, ret
		},
		GetEncoderUtilizationFunc: func() (v, period uint32, ret nvml.Return) {
			ret = n.with(i, "GetEncoderUtilization", func(g *fakeGPU) { v, period = g.enc, 167000 })
			return v, period, ret
		},
		GetDecoderUtilizationFunc: func() (v, period uint32, ret nvml.Return) {
			ret = n.with(i, "GetDecoderUtilization", func(g *fakeGPU) { v, period = g.dec, 167000 })
			return v, period, ret
		},
		GetRetiredPagesFunc: func(nvml.PageRetirementCause) (v []uint64, ret nvml.Return) {
			ret = n.with(i, "GetRetiredPages", func(g *fakeGPU) { v = make([]uint64, g.retiredSBE) })
			return v, ret
		},
		GetFieldValuesFunc: func(vals []nvml.FieldValue) nvml.Return {
			return n.with(i, "GetFieldValues", func(g *fakeGPU) {
				for k := range vals {
					fv, ok := g.fv[vals[k].FieldId]
					if !ok {
						vals[k].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
						continue
					}
					fv.FieldId = vals[k].FieldId
					vals[k] = fv
				}
			})
		},
		GetSupportedEventTypesFunc: func() (v uint64, ret nvml.Return) {
			ret = n.with(i, "GetSupportedEventTypes", func(g *fakeGPU) {
				v = nvml.EventTypeSingleBitEccError | nvml.EventTypeDoubleBitEccError
				if !g.noXID {
					v |= nvml.EventTypeXidCriticalError
				}
			})
			return v, ret
		},
		RegisterEventsFunc: func(_ uint64, set nvml.EventSet) nvml.Return {
			return n.with(i, "RegisterEvents", func(g *fakeGPU) { n.sets[set.(*mock.EventSet)] = g.uuid })
		},
		GetComputeRunningProcessesFunc: func() (v []nvml.ProcessInfo, ret nvml.Return) {
			ret = n.with(i, "GetComputeRunningProcesses", func(g *fakeGPU) { v = append(v, g.procs...) })
			return v, ret
		},
	}
	n.devs[i] = d
	return d
}

// migDevice returns the mock of MIG device j of GPU i (called with n.mu held).
func (n *fakeNode) migDevice(i, j int) *mock.Device {
	if d, ok := n.migs[[2]int{i, j}]; ok {
		return d
	}
	d := &mock.Device{
		GetUUIDFunc: func() (v string, ret nvml.Return) {
			ret = n.withMIG(i, j, "MIG.GetUUID", func(m *fakeMIG) { v = m.uuid })
			return v, ret
		},
		GetNameFunc: func() (v string, ret nvml.Return) {
			ret = n.withMIG(i, j, "MIG.GetName", func(m *fakeMIG) { v = m.name })
			return v, ret
		},
		GetGpuInstanceIdFunc: func() (v int, ret nvml.Return) {
			ret = n.withMIG(i, j, "MIG.GetGpuInstanceId", func(m *fakeMIG) { v = m.gi })
			return v, ret
		},
		GetComputeInstanceIdFunc: func() (v int, ret nvml.Return) {
			ret = n.withMIG(i, j, "MIG.GetComputeInstanceId", func(m *fakeMIG) { v = m.ci })
			return v, ret
		},
		GetAttributesFunc: func() (v nvml.DeviceAttributes, ret nvml.Return) {
			ret = n.withMIG(i, j, "MIG.GetAttributes", func(m *fakeMIG) {
				v = nvml.DeviceAttributes{GpuInstanceSliceCount: m.slices, ComputeInstanceSliceCount: m.slices, MemorySizeMB: m.memTotal >> 20}
			})
			return v, ret
		},
		GetMemoryInfoFunc: func() (v nvml.Memory, ret nvml.Return) {
			ret = n.withMIG(i, j, "MIG.GetMemoryInfo", func(m *fakeMIG) { v = nvml.Memory{Total: m.memTotal, Free: m.memFree, Used: m.memUsed} })
			return v, ret
		},
		GetMemoryInfo_v2Func: func() (v nvml.Memory_v2, ret nvml.Return) {
			ret = n.withMIG(i, j, "MIG.GetMemoryInfo_v2", func(m *fakeMIG) {
				v = nvml.Memory_v2{Total: m.memTotal, Free: m.memFree, Used: m.memUsed}
			})
			return v, ret
		},
	}
	n.migs[[2]int{i, j}] = d
	return d
}

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// count returns how many log lines carry msg.
func (l *logBuffer) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), "msg=\""+msg+"\"")
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func testLogger() (*slog.Logger, *logBuffer) {
	logs := &logBuffer{}
	return slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), logs
}

// open starts a Source on the node.
func open(t testing.TB, n *fakeNode, cfg Config) (*Source, *logBuffer) {
	t.Helper()
	cfg.Library = n.lib
	if cfg.BackoffMin == 0 {
		cfg.BackoffMin, cfg.BackoffMax = time.Millisecond, 5*time.Millisecond
	}
	logger, logs := testLogger()
	src, err := New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := src.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("source log:\n%s", logs)
		}
	})
	return src, logs
}
