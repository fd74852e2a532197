package resourceslices

// Device types NVIDIA's DRA driver publishes in a device's "type"
// attribute: GpuDeviceType "gpu", MIG devices "mig" (static and dynamic
// MIG alike), VfioDeviceType "vfio" (cmd/gpu-kubelet-plugin/deviceinfo.go
// and mig.go CommonAttributesMig, NVIDIA/k8s-dra-driver-gpu@22407113).
const (
	TypeGPU  = "gpu"
	TypeMIG  = "mig"
	TypeVFIO = "vfio"
)

// PCIBusIDAttribute is the standard attribute the driver sets through
// k8s.io/dynamic-resource-allocation/deviceattribute.GetPCIBusIDAttribute.
const PCIBusIDAttribute = "resource.kubernetes.io/pciBusID"

// Key names a device as the kubelet's pod-resources API does in a
// ClaimResource: driver_name, pool_name, device_name.
type Key struct {
	Driver, Pool, Device string
}

// Device is what a ResourceSlice says of one device, from the attributes
// NVIDIA's DRA driver publishes (GpuInfo.Attributes in
// cmd/gpu-kubelet-plugin/deviceinfo.go: type, uuid, productName and the
// PCI bus id; CommonAttributesMig in mig.go: type "mig", parentUUID,
// profile, productName and the parent's PCI bus id, and uuid for a live,
// static MIG device only: MigDeviceInfo.GetDevice adds it, MigSpec's
// dynamic-MIG device has none). Attributes absent are empty.
type Device struct {
	// Type is the "type" attribute: TypeGPU, TypeMIG, TypeVFIO or another.
	Type string
	// UUID is "GPU-…" for a GPU, "MIG-…" for a static MIG device, empty
	// for a dynamic MIG device (created when a claim is prepared).
	UUID string
	// ParentUUID is a MIG device's GPU ("GPU-…").
	ParentUUID string
	// Profile is a MIG device's profile as NVIDIA names it ("1g.10gb",
	// "1g.10gb+me").
	Profile string
	// ProductName is the GPU's product name ("NVIDIA A100-SXM4-40GB").
	ProductName string
	// PCIBusID is the GPU's (a MIG device's parent's) PCI bus id.
	PCIBusID string
}

// deviceOf reads a device's attributes. An attribute's name is qualified
// by the driver's domain when it has no domain of its own (KEP 4381:
// "type" of driver gpu.nvidia.com is gpu.nvidia.com/type); both spellings
// are read.
func deviceOf(driver string, d *apiDevice) Device {
	attrs := d.Attributes
	if attrs == nil && d.Basic != nil {
		attrs = d.Basic.Attributes
	}
	get := func(name string) string {
		a, ok := attrs[name]
		if !ok {
			a, ok = attrs[driver+"/"+name]
		}
		if !ok || a.String == nil {
			return ""
		}
		return *a.String
	}
	return Device{
		Type:        get("type"),
		UUID:        get("uuid"),
		ParentUUID:  get("parentUUID"),
		Profile:     get("profile"),
		ProductName: get("productName"),
		PCIBusID:    get(PCIBusIDAttribute),
	}
}

// Dynamic reports whether d is a MIG device without a UUID of its own: a
// dynamic-MIG device, whose MIG device exists only while a claim holds it.
func (d Device) Dynamic() bool { return d.Type == TypeMIG && d.UUID == "" }

// GPUUUID is the UUID of the GPU the device is or belongs to.
func (d Device) GPUUUID() string {
	if d.Type == TypeMIG {
		return d.ParentUUID
	}
	return d.UUID
}
