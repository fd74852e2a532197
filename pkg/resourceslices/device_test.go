package resourceslices

import (
	"encoding/json"
	"testing"
)

// One decoder reads the device of each served version: attributes on the
// device (v1, v1beta2) or under basic (v1beta1, as dcgm-exporter reads
// them: dev.Basic.Attributes in internal/pkg/transformation/dra.go,
// NVIDIA/dcgm-exporter@d5e5f510), names bare or qualified by the driver.
func TestDeviceOfVersions(t *testing.T) {
	t.Parallel()
	want := Device{Type: "mig", UUID: "MIG-e07a497d-1bb6-5a42-b670-1c33bf55ab6e",
		ParentUUID: "GPU-2927d07e-3fe9-7904-9e08-b08b82d9a37d", Profile: "1g.10gb+me", PCIBusID: "0000:0f:00.0"}
	for name, doc := range map[string]string{
		"v1": `{"name":"gpu-0-mig-1g10gb-me-20-0","attributes":{"type":{"string":"mig"},"uuid":{"string":"MIG-e07a497d-1bb6-5a42-b670-1c33bf55ab6e"},
			"parentUUID":{"string":"GPU-2927d07e-3fe9-7904-9e08-b08b82d9a37d"},"profile":{"string":"1g.10gb+me"},
			"resource.kubernetes.io/pciBusID":{"string":"0000:0f:00.0"},"driverVersion":{"version":"580.95.5"}}}`,
		"v1beta1": `{"name":"gpu-0-mig-1g10gb-me-20-0","basic":{"attributes":{"type":{"string":"mig"},"uuid":{"string":"MIG-e07a497d-1bb6-5a42-b670-1c33bf55ab6e"},
			"parentUUID":{"string":"GPU-2927d07e-3fe9-7904-9e08-b08b82d9a37d"},"profile":{"string":"1g.10gb+me"},
			"resource.kubernetes.io/pciBusID":{"string":"0000:0f:00.0"}}}}`,
		"qualified": `{"name":"gpu-0-mig-1g10gb-me-20-0","attributes":{"gpu.nvidia.com/type":{"string":"mig"},"gpu.nvidia.com/uuid":{"string":"MIG-e07a497d-1bb6-5a42-b670-1c33bf55ab6e"},
			"gpu.nvidia.com/parentUUID":{"string":"GPU-2927d07e-3fe9-7904-9e08-b08b82d9a37d"},"gpu.nvidia.com/profile":{"string":"1g.10gb+me"},
			"resource.kubernetes.io/pciBusID":{"string":"0000:0f:00.0"}}}`,
	} {
		var d apiDevice
		if err := json.Unmarshal([]byte(doc), &d); err != nil {
			t.Fatal(err)
		}
		if got := deviceOf("gpu.nvidia.com", &d); got != want {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
}
