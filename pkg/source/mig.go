package source

import "strconv"

// MIGDevice is one MIG device: a compute instance of a MIG GPU instance,
// with a UUID of its own. NVML lists one MIG device per compute instance
// (nvmlDeviceGetMigDeviceHandleByIndex), `nvidia-smi -L` and `nvidia-smi -q`
// list one line and one <mig_device> each, and the NVIDIA device plugin
// hands them to pods by that UUID.
//
// The telemetry of a MIG device is its GPU instance's (memory, and the
// profiling fields dcgm-exporter reads, belong to the GPU instance), so the
// inventory has one entity row per GPU instance and lists its compute
// instances here: a pod holding any of them is a holder of the GPU
// instance's row (docs/mig.md).
type MIGDevice struct {
	// GPU and GPUInstance name the GPU instance entity (Entity.GPU,
	// Entity.GPUInstance) the device belongs to.
	GPU, GPUInstance int
	// ComputeInstance is the compute instance id within the GPU instance.
	ComputeInstance int
	// Profile is the device's profile as NVML names it without the
	// "MIG " prefix: "1c.3g.71gb" for a compute instance smaller than its
	// GPU instance, the GPU instance profile ("3g.71gb") for one that
	// spans it.
	Profile string
	// UUID is the MIG device UUID ("MIG-…").
	UUID string
}

// SplitGPUInstance reports whether the GPU instance entity e is split into
// several compute instances. Such an entity has ComputeInstance -1 and no
// MIGUUID of its own: its MIG devices are in inv.MIGDevices.
func (inv *Inventory) SplitGPUInstance(e *Entity) bool {
	return e.Kind == GPUInstance && len(inv.MIGDevicesOf(e)) > 1
}

// MIGDevicesOf returns the MIG devices (compute instances) of the GPU
// instance entity e, in compute instance order; nil for other kinds.
func (inv *Inventory) MIGDevicesOf(e *Entity) []MIGDevice {
	if inv == nil || e.Kind != GPUInstance {
		return nil
	}
	start := -1
	for i := range inv.MIGDevices {
		d := &inv.MIGDevices[i]
		match := d.GPU == e.GPU && d.GPUInstance == e.GPUInstance
		switch {
		case match && start < 0:
			start = i
		case !match && start >= 0:
			return inv.MIGDevices[start:i:i]
		}
	}
	if start < 0 {
		return nil
	}
	return inv.MIGDevices[start:len(inv.MIGDevices):len(inv.MIGDevices)]
}

// HeldAs returns the identities under which a pod can hold the entity e
// besides e itself: for a GPU instance split into several compute
// instances, one copy of e per MIG device with that device's compute
// instance id and MIG UUID, so that a device id naming any compute instance
// (its MIG UUID, or the legacy MIG-GPU-<uuid>/<gi>/<ci> form) finds the
// GPU instance's row. Nil for every other entity.
func (inv *Inventory) HeldAs(e *Entity) []Entity {
	if !inv.SplitGPUInstance(e) {
		return nil
	}
	devs := inv.MIGDevicesOf(e)
	out := make([]Entity, len(devs))
	for i, d := range devs {
		out[i] = *e
		out[i].ComputeInstance = d.ComputeInstance
		out[i].MIGUUID = d.UUID
	}
	return out
}

// WithHeldAs returns inv with every identity of HeldAs appended as an
// entity, for code that matches device ids against a whole inventory (the
// count of unmatched device ids); inv itself when there is none. The
// result is for matching only: its rows are not the sample's.
func (inv *Inventory) WithHeldAs() *Inventory {
	if inv == nil || len(inv.MIGDevices) == 0 {
		return inv
	}
	var extra []Entity
	for i := range inv.Entities {
		extra = append(extra, inv.HeldAs(&inv.Entities[i])...)
	}
	if len(extra) == 0 {
		return inv
	}
	out := *inv
	out.Entities = append(append(make([]Entity, 0, len(inv.Entities)+len(extra)), inv.Entities...), extra...)
	return &out
}

// ComputeInstanceProfile names a compute instance profile as NVML does
// ("MIG 1c.3g.71gb" without "MIG "): a compute instance of ciSlices compute
// slices in a GPU instance of giSlices slices and profile giProfile is
// "<ciSlices>c.<giProfile>", or giProfile when it spans the GPU instance
// (or the slice counts are unknown).
func ComputeInstanceProfile(giProfile string, ciSlices, giSlices int) string {
	if giProfile == "" || ciSlices <= 0 || giSlices <= 0 || ciSlices >= giSlices {
		return giProfile
	}
	return strconv.Itoa(ciSlices) + "c." + giProfile
}
