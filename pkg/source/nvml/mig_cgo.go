//go:build cgo && linux

package nvml

import (
	"cmp"
	"errors"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// scanMIG lists the MIG devices of a GPU in MIG mode. Facts of a device seen
// before (same MIG UUID) are reused.
func scanMIG(i int, uuid string, dev nvml.Device, prev []migDevice) ([]migDevice, error) {
	n, ret := dev.GetMaxMigDeviceCount()
	if err := check(i, uuid, "GetMaxMigDeviceCount", ret); err != nil {
		var l lostError
		if errors.As(err, &l) {
			return nil, err
		}
		return nil, nil // the GPU is still worth reading
	}
	var devs []migDevice
	for j := range n {
		md, ret := dev.GetMigDeviceHandleByIndex(j)
		if ret == nvml.ERROR_NOT_FOUND {
			continue // an empty slot
		}
		if ret == nvml.ERROR_GPU_IS_LOST {
			return nil, lostError{uuid: uuid}
		}
		if ret != nvml.SUCCESS {
			continue
		}
		mu, ret := md.GetUUID()
		if ret == nvml.ERROR_GPU_IS_LOST {
			return nil, lostError{uuid: uuid}
		}
		if ret != nvml.SUCCESS {
			continue
		}
		mu = validText(mu)
		if k := slices.IndexFunc(prev, func(d migDevice) bool { return d.uuid == mu }); k >= 0 {
			d := prev[k]
			d.dev = md
			devs = append(devs, d)
			continue
		}
		d, err := readMIGDevice(md, mu)
		if err != nil {
			var l lostError
			if errors.As(err, &l) {
				return nil, lostError{uuid: uuid}
			}
			continue
		}
		d.placement, d.placementKnown = gpuInstancePlacement(dev, d.gi)
		devs = append(devs, d)
	}
	slices.SortFunc(devs, func(a, b migDevice) int { return cmp.Or(cmp.Compare(a.gi, b.gi), cmp.Compare(a.ci, b.ci)) })
	return devs, nil
}

// gpuInstancePlacement reads where GPU instance gi starts on its GPU:
// nvmlGpuInstanceInfo_t's placement.start, the first memory slice the
// instance occupies, which NVIDIA's DRA driver writes as the last part of a
// MIG device's name (ToCanonicalName, cmd/gpu-kubelet-plugin/mig.go,
// NVIDIA/k8s-dra-driver-gpu@22407113). ok is false when NVML does not
// say: nvmlDeviceGetGpuInstanceById is a MIG management call NVML may
// refuse (ERROR_NO_PERMISSION without access to the GPU instance's
// capability), and dynamic-MIG DRA devices then stay unattributed.
func gpuInstancePlacement(dev nvml.Device, gi int) (start int, ok bool) {
	inst, ret := dev.GetGpuInstanceById(gi)
	if ret != nvml.SUCCESS || inst == nil {
		return 0, false
	}
	info, ret := inst.GetInfo()
	if ret != nvml.SUCCESS {
		return 0, false
	}
	return int(info.Placement.Start), true
}

func readMIGDevice(md nvml.Device, uuid string) (migDevice, error) {
	d := migDevice{dev: md, uuid: uuid}
	gi, ret := md.GetGpuInstanceId()
	if err := check(-1, uuid, "GetGpuInstanceId", ret); err != nil {
		return d, err
	}
	ci, ret := md.GetComputeInstanceId()
	if err := check(-1, uuid, "GetComputeInstanceId", ret); err != nil {
		return d, err
	}
	d.gi, d.ci = gi, ci
	name, ret := md.GetName()
	if ret == nvml.ERROR_GPU_IS_LOST {
		return d, lostError{uuid: uuid}
	}
	attrs, aret := md.GetAttributes()
	if aret == nvml.ERROR_GPU_IS_LOST {
		return d, lostError{uuid: uuid}
	}
	if aret != nvml.SUCCESS {
		attrs = nvml.DeviceAttributes{}
	}
	d.profile = migProfile(name, attrs.GpuInstanceSliceCount, attrs.MemorySizeMB)
	d.ciProfile = migDeviceProfile(name, d.profile, attrs.ComputeInstanceSliceCount, attrs.GpuInstanceSliceCount)
	mem, ret := md.GetMemoryInfo()
	if ret == nvml.ERROR_GPU_IS_LOST {
		return d, lostError{uuid: uuid}
	}
	if ret == nvml.SUCCESS {
		d.memBytes = mem.Total >> 20 << 20
	} else {
		d.memBytes = attrs.MemorySizeMB << 20
	}
	return d, nil
}

// instances groups MIG devices (sorted by instance ids) into GPU instance
// entities. An instance with one compute instance carries its id and MIG
// UUID; one split into several is reported as a whole (ComputeInstance -1,
// no MIG UUID: each compute instance is a source.MIGDevice of its own, see
// migDevices), read through the MIG device of its first compute instance,
// since instance-level values are the same on each.
func instances(parent source.Entity, devs []migDevice) []migInfo {
	var out []migInfo
	for k := 0; k < len(devs); {
		end := k + 1
		for end < len(devs) && devs[end].gi == devs[k].gi {
			end++
		}
		d := devs[k]
		e := parent
		e.Kind = source.GPUInstance
		e.MemoryBytes = d.memBytes
		e.GPUInstance = d.gi
		e.ComputeInstance = -1
		if end-k == 1 {
			e.ComputeInstance = d.ci
			e.MIGUUID = d.uuid
		}
		e.MIGProfile = d.profile
		e.MIGPlacementStart, e.MIGPlacementKnown = d.placement, d.placementKnown
		out = append(out, migInfo{entity: e, dev: d.dev})
		k = end
	}
	return out
}

// migDevices lists every MIG device (compute instance) of the GPUs, in
// GPU, GPU instance and compute instance order, as source.MIGDevices.
func migDevices(gpus []*gpuInfo) []source.MIGDevice {
	var out []source.MIGDevice
	for _, g := range gpus {
		for _, d := range g.devs {
			out = append(out, source.MIGDevice{GPU: g.entity.GPU, GPUInstance: d.gi, ComputeInstance: d.ci, Profile: d.ciProfile, UUID: d.uuid})
		}
	}
	return out
}
