//go:build cgo && linux

package processes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// NVMLLibrary is the NVML API the sampler calls: go-nvml's nvml.Interface.
type NVMLLibrary = nvml.Interface

// NVMLSampler samples processes through NVML. Every NVML call of one
// Sample runs as one job on its own worker goroutine, with a deadline, so
// a hung driver call never blocks the collector for longer than
// CallTimeout.
//
// NVML counts initialisations: nvmlInit and nvmlShutdown may be called
// by several users of one process, and the library shuts down when the
// count reaches zero (NVML API reference, nvmlInit_v2, nvmlShutdown). The
// sampler therefore has its own Init beside the NVML or DCGM source.
type NVMLSampler struct {
	cfg    NVMLConfig
	lib    nvml.Interface
	w      *cgocall.Worker
	now    func() time.Time
	inited bool // touched by worker jobs only
	// hasMPS: the library has nvmlDeviceGetMPSComputeRunningProcesses
	// (in one of its versions). go-nvml calls the symbols it resolved
	// lazily, so calling one the driver lacks would crash the process; it
	// is looked up at each Init.
	hasMPS bool
	devs   []nvmlDevice
	// scanned is when devs was listed.
	scanned time.Time
	// lastSeen is, per device UUID, the newest utilization sample read:
	// the next read asks for newer ones only.
	lastSeen map[string]uint64
	// initErr is the last failed Init (wrapping ErrUnavailable), returned
	// without calling Init again until retryAt; initWait is the wait that
	// led to retryAt. All three are touched by worker jobs only.
	initErr  error
	retryAt  time.Time
	initWait time.Duration
	// denied are the GPU indices whose handle NVML refused
	// (NO_PERMISSION) at the last scan, logged when the set changes;
	// touched by worker jobs only.
	denied []int
	log    *slog.Logger
}

// nvmlDevice is a device listed by the last scan.
type nvmlDevice struct {
	handle nvml.Device
	info   Device // without processes
}

// NVMLConfig configures an NVMLSampler.
type NVMLConfig struct {
	// Library is the NVML API; nil means the driver's library (go-nvml's
	// nvml.New()). Tests pass go-nvml's mock.
	Library NVMLLibrary
	// CallTimeout bounds one Sample's NVML calls; default 10s.
	CallTimeout time.Duration
	// Rescan is how often the GPUs and MIG devices are listed again;
	// default one minute. A failed call rescans at the next Sample.
	Rescan time.Duration
	// Logger says which GPUs this process may not talk to; nil discards.
	Logger *slog.Logger
}

// NewNVML returns a sampler; NVML is initialised on the first Sample, and
// again after a failure of the whole library. While initialisation fails,
// Sample returns an error wrapping ErrUnavailable and retries with
// back-off.
func NewNVML(cfg NVMLConfig) (*NVMLSampler, error) {
	if cfg.CallTimeout < 0 || cfg.Rescan < 0 {
		return nil, errors.New("processes: NVML call timeout and rescan interval must not be negative")
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = cgocall.DefaultCallTimeout
	}
	if cfg.Rescan == 0 {
		cfg.Rescan = time.Minute
	}
	lib := cfg.Library
	if lib == nil {
		lib = nvml.New()
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &NVMLSampler{cfg: cfg, lib: lib, now: time.Now, lastSeen: map[string]uint64{}, log: logger}
	s.w = cgocall.NewWorker("nvml processes", cfg.CallTimeout, s.shutdown)
	return s, nil
}

// Sample lists the processes of every device. A device whose calls fail
// is left out and named in the returned error (a DeviceError each, see
// DeviceErrors), which then comes with the devices that could be read.
// Only a failure of the whole library (the device count, an
// uninitialised library) returns no devices.
func (s *NVMLSampler) Sample(ctx context.Context) ([]Device, error) {
	var (
		devs []Device
		err  error
	)
	if werr := s.w.Do(ctx, "process sampling", func() { devs, err = s.sample() }); werr != nil {
		return nil, werr
	}
	return devs, err
}

// Close stops the worker; NVML is shut down once no call is blocked.
func (s *NVMLSampler) Close() error {
	s.w.Close(s.cfg.CallTimeout)
	return nil
}

func (s *NVMLSampler) shutdown() {
	if s.inited {
		_ = s.lib.Shutdown() // nothing to do about a failure at exit
		s.inited = false
	}
}

// sample runs on the worker.
func (s *NVMLSampler) sample() ([]Device, error) {
	now := s.now()
	if !s.inited {
		if err := s.init(now); err != nil {
			return nil, err
		}
	}
	var errs []error
	if s.devs == nil || now.Sub(s.scanned) >= s.cfg.Rescan {
		devs, denied, gpuErrs, err := s.scan()
		if err == nil {
			// A GPU answering that the library is not initialised or
			// the driver not loaded says so of the library: every GPU
			// would, and NVML must be initialised again.
			if e := errors.Join(gpuErrs...); errors.Is(e, nvml.ERROR_UNINITIALIZED) || errors.Is(e, nvml.ERROR_DRIVER_NOT_LOADED) {
				err = e
			}
		}
		if err != nil {
			s.devs = nil
			if errors.Is(err, nvml.ERROR_UNINITIALIZED) || errors.Is(err, nvml.ERROR_DRIVER_NOT_LOADED) {
				s.inited = false
			}
			return nil, err
		}
		s.devs, s.scanned = devs, now
		errs = gpuErrs
		s.deniedGPUs(denied)
	}
	out := make([]Device, 0, len(s.devs))
	// failedGI are the GPU instances one of whose MIG devices failed: they
	// are left out whole, as joinInstances would otherwise report the
	// instance with part of its processes.
	var failedGI map[instanceKey]bool
	for i := range s.devs {
		d, err := s.read(&s.devs[i])
		if err != nil {
			info := s.devs[i].info
			errs = append(errs, deviceError(info, err))
			if info.GPUInstance >= 0 {
				if failedGI == nil {
					failedGI = map[instanceKey]bool{}
				}
				failedGI[instanceKey{info.UUID, info.GPUInstance}] = true
			}
			continue
		}
		out = append(out, d)
	}
	if failedGI != nil {
		out = slices.DeleteFunc(out, func(d Device) bool { return failedGI[instanceKey{d.UUID, d.GPUInstance}] })
	}
	if len(errs) > 0 {
		s.devs = nil // a device may be gone or reconfigured: list them again
	}
	return out, errors.Join(errs...)
}

// instanceKey is a GPU instance: its GPU's UUID and its id.
type instanceKey struct {
	uuid string
	gi   int
}

// deviceError names the device d in err.
func deviceError(d Device, err error) *DeviceError {
	return &DeviceError{GPU: d.GPU, UUID: d.UUID, MIGUUID: d.MIGUUID, Err: err}
}

// init initialises NVML, or returns why it cannot, wrapping
// ErrUnavailable. go-nvml's Init answers ERROR_LIBRARY_NOT_FOUND when
// libnvidia-ml.so.1 cannot be opened (go-nvml v0.13 pkg/nvml/init.go,
// library.Init); nvmlInit_v2 answers DRIVER_NOT_LOADED without a running
// driver, NO_PERMISSION without access to it, UNKNOWN otherwise (NVML API
// reference, Initialization and Cleanup). Each is a state of the host
// that one more call per collection would not change: the next attempt
// waits UnavailableRetry, doubling up to UnavailableRetryMax.
func (s *NVMLSampler) init(now time.Time) error {
	if s.initErr != nil && now.Before(s.retryAt) {
		return s.initErr
	}
	ret := s.lib.Init()
	if ret == nvml.SUCCESS {
		s.inited, s.initErr, s.initWait = true, nil, 0
		s.devs = nil
		s.hasMPS = hasSymbol(s.lib, "nvmlDeviceGetMPSComputeRunningProcesses")
		return nil
	}
	s.initWait = min(max(2*s.initWait, UnavailableRetry), UnavailableRetryMax)
	s.retryAt = now.Add(s.initWait)
	if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
		s.initErr = fmt.Errorf("%w: nvml init: %w: libnvidia-ml.so.1, which process accounting reads beside any source, cannot be loaded", ErrUnavailable, ret)
	} else {
		s.initErr = fmt.Errorf("%w: nvml init: %w", ErrUnavailable, ret)
	}
	return s.initErr
}

// scan lists the GPUs and, for GPUs in MIG mode, their MIG devices in
// place of the GPU. A GPU that cannot be listed (fallen off the bus: its
// handle, UUID or MIG calls answer GPU_IS_LOST, nvml.h) is left out with a
// DeviceError in gpuErrs, and the others are listed; err is a failure of
// the device count, which leaves nothing to list. A GPU whose handle NVML
// refuses with NO_PERMISSION ("the user doesn't have permission to talk to
// this device", nvml.h, nvmlDeviceGetHandleByIndex_v2, in NVIDIA/go-nvml;
// nvmlDeviceGetCount_v2 counts such GPUs too) is in denied, not an error:
// a container given only some of the node's GPUs' device nodes is
// configured so, and no later call would change it.
func (s *NVMLSampler) scan() (devs []nvmlDevice, denied []int, gpuErrs []error, err error) {
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, nil, nil, fmt.Errorf("nvml DeviceGetCount: %w", ret)
	}
	for i := range n {
		gpu := Device{GPU: i, GPUInstance: -1}
		h, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret == nvml.ERROR_NO_PERMISSION {
			denied = append(denied, i)
			continue
		}
		if ret != nvml.SUCCESS {
			gpuErrs = append(gpuErrs, deviceError(gpu, fmt.Errorf("nvml DeviceGetHandleByIndex: %w", ret)))
			continue
		}
		uuid, ret := h.GetUUID()
		if ret != nvml.SUCCESS {
			gpuErrs = append(gpuErrs, deviceError(gpu, fmt.Errorf("nvml GetUUID: %w", ret)))
			continue
		}
		gpu.UUID = validText(uuid)
		// NOT_SUPPORTED: a GPU without MIG.
		mode, _, ret := h.GetMigMode()
		if ret != nvml.SUCCESS || mode != nvml.DEVICE_MIG_ENABLE {
			devs = append(devs, nvmlDevice{handle: h, info: gpu})
			continue
		}
		migs, err := scanMIGDevices(h, gpu)
		if err != nil {
			gpuErrs = append(gpuErrs, deviceError(gpu, err))
			continue
		}
		devs = append(devs, migs...)
	}
	return devs, denied, gpuErrs, nil
}

// deniedGPUs logs the GPUs NVML does not let this process talk to when
// that set changes: once at start, then only on a change.
func (s *NVMLSampler) deniedGPUs(denied []int) {
	if slices.Equal(denied, s.denied) {
		return
	}
	s.denied = denied
	if len(denied) == 0 {
		s.log.Info("GPU process accounting may talk to every GPU again")
		return
	}
	s.log.Info("GPU process accounting leaves out GPUs this process has no permission to talk to (NVML NO_PERMISSION); their processes are not accounted",
		"gpus", fmt.Sprint(denied))
}

// scanMIGDevices lists the MIG devices of a GPU in MIG mode.
func scanMIGDevices(h nvml.Device, gpu Device) ([]nvmlDevice, error) {
	n, ret := h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml GetMaxMigDeviceCount: %w", ret)
	}
	var devs []nvmlDevice
	for j := range n {
		m, ret := h.GetMigDeviceHandleByIndex(j)
		if ret == nvml.ERROR_NOT_FOUND {
			continue // an empty slot
		}
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml GetMigDeviceHandleByIndex(%d): %w", j, ret)
		}
		uuid, ret := m.GetUUID()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml MIG device %d GetUUID: %w", j, ret)
		}
		gi, ret := m.GetGpuInstanceId()
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("nvml MIG device %d GetGpuInstanceId: %w", j, ret)
		}
		d := gpu
		d.MIGUUID, d.GPUInstance = validText(uuid), gi
		devs = append(devs, nvmlDevice{handle: m, info: d})
	}
	return devs, nil
}

// hasSymbol reports whether the library has symbol in one of the versions
// go-nvml falls back through (_v3, _v2, unversioned).
func hasSymbol(lib nvml.Interface, symbol string) bool {
	ext := lib.Extensions()
	if ext == nil {
		return false
	}
	for _, v := range []string{symbol + "_v3", symbol + "_v2", symbol} {
		if ext.LookupSymbol(v) == nil {
			return true
		}
	}
	return false
}

// processUtilization calls go-nvml's GetProcessUtilization, which sizes
// its buffer with a first call and slices it to the count the second one
// returns (go-nvml v0.13, device.go): when samples arrive between the two,
// NVML answers INSUFFICIENT_SIZE with the larger count (the size query,
// nvmlDeviceGetProcessUtilization) and the slice panics. DCGM's cache
// manager calls again in that case; here ok is false and the device's
// utilization is unknown for this read, instead of the panic failing every
// device's.
func processUtilization(h nvml.Device, last uint64) (samples []nvml.ProcessUtilizationSample, ret nvml.Return, ok bool) {
	defer func() {
		if recover() != nil {
			samples, ret, ok = nil, nvml.ERROR_INSUFFICIENT_SIZE, false
		}
	}()
	samples, ret = h.GetProcessUtilization(last)
	return samples, ret, true
}

// listings are the three process lists of a device. A device without
// graphics or MPS answers NOT_SUPPORTED, which is no process.
var listings = []struct {
	typ  ProcessType
	name string
	call func(nvml.Device) ([]nvml.ProcessInfo, nvml.Return)
}{
	{Compute, "GetComputeRunningProcesses", nvml.Device.GetComputeRunningProcesses},
	{Graphics, "GetGraphicsRunningProcesses", nvml.Device.GetGraphicsRunningProcesses},
	{MPS, "GetMPSComputeRunningProcesses", nvml.Device.GetMPSComputeRunningProcesses},
}

// read lists the processes of one device and their utilization since the
// previous read.
func (s *NVMLSampler) read(nd *nvmlDevice) (Device, error) {
	d := nd.info
	name := d.UUID // the key of lastSeen
	if d.MIGUUID != "" {
		name = d.MIGUUID
	}
	for _, l := range listings {
		if l.typ == MPS && !s.hasMPS {
			continue // a driver older than the MPS listing
		}
		infos, ret := l.call(nd.handle)
		if ret == nvml.ERROR_NOT_SUPPORTED {
			continue
		}
		if ret != nvml.SUCCESS {
			return Device{}, fmt.Errorf("nvml %s: %w", l.name, ret)
		}
		for _, pi := range infos {
			// usedGpuMemory is NVML_VALUE_NOT_AVAILABLE when the driver
			// cannot tell (nvmlProcessInfo_t).
			known := pi.UsedGpuMemory != ^uint64(0)
			d.addProcess(pi.Pid, l.typ, pi.UsedGpuMemory, known)
		}
	}
	// The first read of a device has no previous read: lastSeenTimeStamp 0
	// reads "all the samples maintained by the driver's internal sample
	// buffer" (nvmlDeviceGetProcessUtilization), over a window nobody
	// knows and with PIDs long gone (and perhaps reused). It only sets
	// the starting point: utilization is known from the second read on.
	last, primed := s.lastSeen[name]
	samples, ret, ok := processUtilization(nd.handle, last)
	if !ok {
		// Unknown this time; lastSeen stays, so the next read has them.
		return d, nil
	}
	switch ret {
	case nvml.SUCCESS, nvml.ERROR_INSUFFICIENT_SIZE:
		// INSUFFICIENT_SIZE with no samples: go-nvml's size query found none.
		us := make([]UtilizationSample, 0, len(samples))
		for _, x := range samples {
			us = append(us, UtilizationSample{PID: x.Pid, Time: x.TimeStamp, SM: x.SmUtil, Memory: x.MemUtil, Encoder: x.EncUtil, Decoder: x.DecUtil})
			last = max(last, x.TimeStamp)
		}
		s.lastSeen[name] = last
		if primed {
			d.Utilization = true
			d.merge(us)
		}
	case nvml.ERROR_NOT_FOUND:
		// No sample since lastSeen: every process was idle
		// (nvmlDeviceGetProcessUtilization).
		s.lastSeen[name] = last
		d.Utilization = primed
	case nvml.ERROR_NOT_SUPPORTED:
		// MIG devices and older GPUs: memory and counts only.
	default:
		return Device{}, fmt.Errorf("nvml GetProcessUtilization: %w", ret)
	}
	return d, nil
}
