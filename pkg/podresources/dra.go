package podresources

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/pkg/resourceslices"
)

// DRADevices says what a DRA device named by (driver, pool, device) is;
// *resourceslices.Store implements it from the node's ResourceSlices.
type DRADevices interface {
	Lookup(resourceslices.Key) (resourceslices.Device, bool)
}

// Claim is one device of a DRA claim as the kubelet reports it
// (DynamicResource.claim_namespace, claim_name; ClaimResource.driver_name,
// pool_name, device_name, share_id), with the container that holds it and
// what the node's ResourceSlices say the device is.
type Claim struct {
	Namespace, Name      string
	Driver, Pool, Device string
	// ShareID is set for a device allocated with consumable capacity (one
	// claim per share).
	ShareID string
	Holder  Holder
	// Slice is the ResourceSlice's description of the device; Resolved is
	// false when no slice names it (no API access, slice not seen yet).
	Slice    resourceslices.Device
	Resolved bool
}

// placementKey finds a dynamic-MIG device's GPU instance: NVIDIA's DRA
// driver creates it on the parent GPU at the placement start its name
// carries ("gpu-<minor>-mig-<profile>-<profile id>-<placement start>",
// ToCanonicalName in cmd/gpu-kubelet-plugin/mig.go,
// NVIDIA/k8s-dra-driver-gpu@22407113), and two GPU instances of one GPU
// never start at the same memory slice.
type placementKey struct {
	parent string // uuidKey of the parent GPU
	start  int
}

// draKey is the lookup key of a DRA device the ResourceSlices resolved:
// the GPU UUID of a whole GPU, the MIG UUID of a static MIG device, the
// parent and placement of a dynamic-MIG device. ok is false when the slice
// says nothing usable (VFIO, another type, UUIDs of the wrong form).
func draKey(id DeviceID, d resourceslices.Device) (key any, ok bool) {
	switch {
	case d.Type == resourceslices.TypeGPU && isGPUUUID(d.UUID):
		return gpuUUIDKey(uuidKey(d.UUID)), true
	case d.Type == resourceslices.TypeMIG && isMIGUUID(d.UUID):
		return migUUIDKey(uuidKey(d.UUID)), true
	case d.Dynamic() && isGPUUUID(d.ParentUUID) && id.Kind == KindDRAMIG && id.PlacementStart >= 0:
		return placementKey{parent: uuidKey(d.ParentUUID), start: id.PlacementStart}, true
	}
	return nil, false
}

func isGPUUUID(s string) bool { return len(s) == 40 && s[:4] == "GPU-" && isUUID(s[4:]) }
func isMIGUUID(s string) bool { return len(s) == 40 && s[:4] == "MIG-" && isUUID(s[4:]) }

// OpenDRA opens the node's ResourceSlices (resourceslices.Open) as the
// client's DRA lookup, nil when DRA attribution is off, with the function
// that stops the informer and waits for it, for the exporter's close. The
// informer's self-metrics are registered on reg.
func OpenDRA(o resourceslices.Options, node string, attributed bool, logger *slog.Logger, reg prometheus.Registerer) (DRADevices, func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := resourceslices.Open(ctx, o, node, attributed, logger)
	if err != nil || s == nil {
		cancel()
		return nil, func() {}, err
	}
	stop := func() { cancel(); s.Wait() }
	if err := s.Register(reg); err != nil {
		stop()
		return nil, func() {}, err
	}
	return s, stop, nil
}
