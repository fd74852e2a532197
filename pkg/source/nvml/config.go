// Package nvml is the NVML source, for hosts without DCGM: it reads GPU
// fields straight from the driver's libnvidia-ml.so.1 through go-nvml.
//
// Values are returned in DCGM's native units (MiB, W, mJ, MHz, °C, %), read
// through the same NVML calls DCGM makes for each field, so that the
// catalog's Scale gives the same exported values whichever source runs. NVML
// fields are read live on every Read: there are no watches to set up.
// Fields NVML cannot give (profiling/DCP fields, NVLink bandwidth, NVSwitch
// fields) stay Blank, and so does any field whose call fails on a GPU (not
// supported, no permission, any error) — for that GPU only.
//
// NVLink: the links of each GPU (nvmlDeviceGetNvLinkState) are entities of
// the inventory, scanned once per GPU, with their peer
// (nvmlDeviceGetNvLinkRemotePciInfo and ...RemoteDeviceType: a GPU by index,
// an NVSwitch by its PCI bus id). Their states and error counters
// (nvmlDeviceGetNvLinkErrorCounter), and the GPUs' fabric fields (the
// fabric manager's state from nvmlDeviceGetGpuFabricInfo, the NVLink error
// totals), are read at most once per Config.FabricInterval, as the DCGM
// source reads them; Reads in between repeat the last values read.
//
// Inventory: GPUs by NVML index, and one source.GPUInstance entity per MIG
// GPU instance of a GPU in MIG mode, built from its MIG devices (compute
// instances). Read rescans the GPUs and MIG devices on every collection and
// returns a new *source.Inventory only when they changed. A GPU whose call
// returns ERROR_GPU_IS_LOST leaves the inventory at once and is listed by
// LostGPUs; the others keep being served. A lost GPU stays out until NVML is
// initialised again (after a failure of the whole library).
//
// XID errors come from an NVML event set per GPU, registered by Watch and
// drained without waiting by every Read into Sample.XIDs; the last code seen
// is the value of DCGM_FI_DEV_XID_ERRORS (0 until one is seen, Blank on GPUs
// whose driver has no XID events). NVML events carry no timestamp: an event's
// time is the time of the Read that saw it.
//
// Per-process GPU memory (Config.Processes) is kept for Processes; it is not
// exported yet.
//
// go-nvml is cgo: the real implementation builds with cgo on linux only; any
// other build gets a stub whose New returns ErrNotBuilt, so the rest of the
// exporter still builds with CGO_ENABLED=0.
//
// Every NVML call runs on one worker goroutine and the caller waits at most
// Config.CallTimeout for it. A cgo call cannot be cancelled, so while a call
// is still blocked later calls fail at once instead of queueing goroutines.
// A timed-out call, or NVML failing as a whole (driver unloaded), makes Read
// fail with an error wrapping source.ErrUnavailable; the source then shuts
// NVML down and initialises it again with capped exponential backoff.
package nvml

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"

	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultCallTimeout = cgocall.DefaultCallTimeout
	DefaultBackoffMin  = cgocall.DefaultBackoffMin
	DefaultBackoffMax  = cgocall.DefaultBackoffMax
)

// ErrLibraryNotFound reports that NVML cannot be loaded on this host.
var ErrLibraryNotFound = errors.New("NVML library libnvidia-ml.so.1 not found: install the NVIDIA driver or use --source=dcgm/sim")

// Config configures the NVML source.
type Config struct {
	// CallTimeout bounds the wait for every NVML call (and for the reads of
	// one GPU, made in one go). Default 10s.
	CallTimeout time.Duration
	// GPUs selects GPUs by NVML index; empty means all. MIG instances of
	// selected GPUs are included.
	GPUs []int
	// Processes makes every Read also list the compute processes on each
	// GPU, for Source.Processes. Off by default: nothing exports them yet.
	Processes bool
	// BackoffMin and BackoffMax bound the wait between attempts to
	// initialise NVML, which doubles after each failure. Defaults 1s and 30s.
	BackoffMin, BackoffMax time.Duration
	// FabricInterval is the least time between two reads of the fabric:
	// the NVLinks' states and error counters and the GPUs' fabric fields
	// (fields.Field.Fabric); Reads in between repeat the last values read.
	// A new inventory or field set is read at once. Zero reads them on
	// every Read.
	FabricInterval time.Duration
	// Library is the NVML API the source calls; nil means the driver's
	// library (go-nvml's nvml.New()). Tests pass go-nvml's mock.
	Library Library
}

// withDefaults validates c and fills its zero fields.
func (c Config) withDefaults() (Config, error) {
	r, err := cgocall.Retry{CallTimeout: c.CallTimeout, BackoffMin: c.BackoffMin, BackoffMax: c.BackoffMax}.WithDefaults("nvml")
	if err != nil {
		return c, err
	}
	c.CallTimeout, c.BackoffMin, c.BackoffMax = r.CallTimeout, r.BackoffMin, r.BackoffMax
	if c.FabricInterval < 0 {
		return c, fmt.Errorf("nvml: negative fabric interval %s", c.FabricInterval)
	}
	c.GPUs, err = cgocall.Selection("nvml", "GPU index", c.GPUs)
	return c, err
}

// LostGPU is a GPU that was in the inventory and no longer is: a call
// returned ERROR_GPU_IS_LOST, or it is no longer listed.
type LostGPU = source.LostGPU

// Process is a compute process using a GPU, as NVML lists it.
type Process struct {
	// GPU is the NVML index and UUID the UUID of the physical GPU.
	GPU  int
	UUID string
	// GPUInstance and ComputeInstance are the MIG instance the process runs
	// in, -1 when the GPU is not in MIG mode or NVML does not say.
	GPUInstance, ComputeInstance int
	PID                          uint32
	// UsedBytes is the GPU memory the process uses; UsedKnown is false when
	// NVML cannot tell (under some virtualisation and on Windows).
	UsedBytes uint64
	UsedKnown bool
}
