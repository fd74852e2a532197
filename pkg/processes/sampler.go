package processes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ErrUnavailable is wrapped by the error of a Sample that could not reach
// the GPUs at all because the host lacks what the sampler needs: NVML's
// library cannot be loaded or initialised (no driver, a DCGM-only or CPU
// node). It is a state, not a failed collection: the sampler retries on
// its own, first UnavailableRetry after the failure, then at doubling
// intervals up to UnavailableRetryMax, and returns the same error in
// between without calling the library.
var ErrUnavailable = errors.New("processes: sampler unavailable on this node")

// The back-off of a sampler that is unavailable: a driver installed after
// the exporter started (the GPU operator's) is picked up within
// UnavailableRetryMax.
const (
	UnavailableRetry    = 30 * time.Second
	UnavailableRetryMax = 5 * time.Minute
)

// DeviceError is the failure of one GPU or MIG device: a GPU fallen off
// the bus answers every call on it with NVML's GPU_IS_LOST, its handle by
// index included (nvml.h, nvmlDeviceGetHandleByIndex_v2: "if the target
// GPU has fallen off the bus or is otherwise inaccessible"). A Sample
// whose devices fail returns the others with the errors.Join of one
// DeviceError per failed device (DeviceErrors lists them); the failed
// devices are left out, never reported with older values.
type DeviceError struct {
	// GPU is the index of the physical GPU; UUID its UUID, empty when the
	// failure came before it was read.
	GPU  int
	UUID string
	// MIGUUID is the failed MIG device's UUID; empty for a whole GPU (or a
	// GPU whose MIG devices could not be listed).
	MIGUUID string
	Err     error
}

func (e *DeviceError) Error() string {
	switch {
	case e.MIGUUID != "":
		return fmt.Sprintf("GPU %d (%s) MIG device %s: %v", e.GPU, e.UUID, e.MIGUUID, e.Err)
	case e.UUID != "":
		return fmt.Sprintf("GPU %d (%s): %v", e.GPU, e.UUID, e.Err)
	}
	return fmt.Sprintf("GPU %d: %v", e.GPU, e.Err)
}

func (e *DeviceError) Unwrap() error { return e.Err }

// DeviceErrors returns the DeviceErrors in err's tree (errors.Join and %w
// wrapping), in order; none for a failure of the whole node.
func DeviceErrors(err error) []*DeviceError {
	var out []*DeviceError
	var walk func(error)
	walk = func(err error) {
		if de, ok := err.(*DeviceError); ok { //nolint:errorlint // walking the tree by hand: errors.As finds the first only
			out = append(out, de)
			return
		}
		switch u := err.(type) { //nolint:errorlint // as above
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// Simulated is a source whose processes are its own rather than the
// driver's (the simulated node): it samples them, names their pods and
// containers, and writes their procfs tree under procfs, a directory the
// caller owns, so that the real cgroup parser and resolver read it.
type Simulated interface {
	SimulatedProcesses(procfs string) (SimulatedSampler, error)
}

// SimulatedSampler samples a simulated node's processes and names their
// pods.
type SimulatedSampler interface {
	Sampler
	PodLookup
}

// Sampler lists, once per collection, the processes on every GPU and MIG
// device with their memory and utilization. Implementations: NVML (beside
// any source: NVML is present wherever the driver is) and the simulator.
// Calls are made by one goroutine (the collector).
type Sampler interface {
	// Sample returns every device, GPUs by index, each followed by its MIG
	// devices; a GPU in MIG mode lists its processes under its MIG devices
	// only.
	Sample(ctx context.Context) ([]Device, error)
	// Close releases the sampler.
	Close() error
}

// Device is the processes of one GPU or MIG device.
type Device struct {
	// GPU is the index and UUID the UUID of the physical GPU.
	GPU  int
	UUID string
	// GPUInstance is the MIG GPU instance id and MIGUUID the MIG device's
	// UUID; -1 and empty for a whole GPU.
	GPUInstance int
	MIGUUID     string
	// Processes are the processes using the device, by PID.
	Processes []Process
	// Utilization is true when the device reports per-process
	// utilization; then a process without a sample since the previous
	// read was idle (NVML returns samples only for processes with non-zero
	// utilization). False under MIG, on GPUs without the call, and on
	// the first read of a device (there is no previous read).
	Utilization bool
}

// ProcessType says how a process uses a GPU, as NVML lists it; a process
// may be of several types.
type ProcessType uint8

// Process types.
const (
	Compute  ProcessType = 1 << iota // nvmlDeviceGetComputeRunningProcesses
	Graphics                         // nvmlDeviceGetGraphicsRunningProcesses
	MPS                              // nvmlDeviceGetMPSComputeRunningProcesses: an MPS client
)

// Process is one process on one device.
type Process struct {
	PID  uint32
	Type ProcessType
	// UsedBytes is the device memory the process uses at the read, as the
	// listing gives it (nvmlProcessInfo_t.usedGpuMemory, "all of the memory
	// used by the application", nvml.h): a current value, neither an
	// average nor a maximum; UsedKnown is false when the driver cannot
	// tell (NVML_VALUE_NOT_AVAILABLE).
	UsedBytes uint64
	UsedKnown bool
	// SM, Memory, Encoder and Decoder are the process's utilization of the
	// device in percent (0-100) since the previous read; 0 with Sampled
	// false when none came. NVML averages over that time itself: it
	// returns one sample per process busy since lastSeenTimeStamp, with
	// its "utilization since the previous query" (nvml.h,
	// nvmlDeviceGetProcessUtilization), which nvidia-smi pmon prints as the
	// "average utilization ... since the last monitoring cycle"
	// (nvidia-smi(1)). Should one read return several samples of a PID,
	// these are their mean (merge).
	SM, Memory, Encoder, Decoder float64
	Sampled                      bool
	// Unlisted is set for a process with utilization samples that no
	// listing has (merge): it exited after them.
	Unlisted bool
}

// UtilizationSample is one per-process utilization sample, as
// nvmlDeviceGetProcessUtilization returns it.
type UtilizationSample struct {
	PID uint32
	// Time is the CPU timestamp of the sample, in microseconds.
	Time                         uint64
	SM, Memory, Encoder, Decoder uint32
}

// merge adds the utilization samples to the processes of d: per PID, the
// mean of its samples, which is its one sample where NVML answers as
// documented (one per busy process; see Process): a value is never
// divided by the other processes' samples or timestamps, which are their
// own. A PID with samples but no listing (it exited after the sample) is
// added with unknown memory: it used the device.
func (d *Device) merge(samples []UtilizationSample) {
	type sum struct {
		n                            int
		sm, memory, encoder, decoder float64
	}
	if len(samples) == 0 {
		return
	}
	sums := make(map[uint32]*sum, len(samples))
	order := make([]uint32, 0, len(samples))
	for _, s := range samples {
		a := sums[s.PID]
		if a == nil {
			a = &sum{}
			sums[s.PID] = a
			order = append(order, s.PID)
		}
		a.n++
		a.sm += float64(s.SM)
		a.memory += float64(s.Memory)
		a.encoder += float64(s.Encoder)
		a.decoder += float64(s.Decoder)
	}
	set := func(p *Process, a *sum) {
		n := float64(a.n)
		p.SM, p.Memory, p.Encoder, p.Decoder = a.sm/n, a.memory/n, a.encoder/n, a.decoder/n
		p.Sampled = true
	}
	for i := range d.Processes {
		if a := sums[d.Processes[i].PID]; a != nil {
			set(&d.Processes[i], a)
			delete(sums, d.Processes[i].PID)
		}
	}
	for _, pid := range order {
		if a := sums[pid]; a != nil {
			p := Process{PID: pid, Unlisted: true}
			set(&p, a)
			d.Processes = append(d.Processes, p)
		}
	}
}

// addProcess adds a listed process to d, merging it with an earlier
// listing of the same PID (a process both compute and graphics).
func (d *Device) addProcess(pid uint32, typ ProcessType, used uint64, known bool) {
	for i := range d.Processes {
		p := &d.Processes[i]
		if p.PID != pid {
			continue
		}
		p.Type |= typ
		if known && (!p.UsedKnown || used > p.UsedBytes) {
			p.UsedBytes, p.UsedKnown = used, true
		}
		return
	}
	d.Processes = append(d.Processes, Process{PID: pid, Type: typ, UsedBytes: used, UsedKnown: known})
}

// joinInstances joins the MIG devices of one GPU instance into the first
// of them. NVML has one MIG device per compute instance
// (nvmlDeviceGetMigDeviceHandleByIndex; a GPU instance split into several
// compute instances has several), while the inventory has one entity per
// GPU instance: without the join, a container with processes on two of
// its compute instances would get two rows with the same labels. A process
// listed on two of them counts once (addProcess). devs is reused.
func joinInstances(devs []Device) []Device {
	type key struct {
		uuid string
		gi   int
	}
	var first map[key]int
	out := devs[:0]
	for _, d := range devs {
		if d.GPUInstance < 0 {
			out = append(out, d)
			continue
		}
		k := key{d.UUID, d.GPUInstance}
		i, ok := first[k]
		if !ok {
			if first == nil {
				first = map[key]int{}
			}
			first[k] = len(out)
			out = append(out, d)
			continue
		}
		j := &out[i]
		// NVML has no per-process utilization under MIG
		// (nvmlDeviceGetProcessUtilization); should it come, a share
		// known on only part of the instance is not known.
		j.Utilization = j.Utilization && d.Utilization
		for _, p := range d.Processes {
			if slices.ContainsFunc(j.Processes, func(q Process) bool { return q.PID == p.PID }) {
				j.addProcess(p.PID, p.Type, p.UsedBytes, p.UsedKnown)
				continue
			}
			j.Processes = append(j.Processes, p)
		}
	}
	return out
}
