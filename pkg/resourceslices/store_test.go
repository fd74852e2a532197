package resourceslices_test

import (
	"context"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/resourceslices"
	"github.com/gpu-exporter/gpu-exporter/tests/kubeapi"
)

func TestMain(m *testing.M) { os.Exit(kubeapi.Main(m)) }

const driver = "gpu.nvidia.com"

func str(s string) map[string]any { return map[string]any{"string": s} }

// nvidiaSlice is a ResourceSlice shaped as NVIDIA's DRA driver publishes
// one (NVIDIA/k8s-dra-driver-gpu@22407113, cmd/gpu-kubelet-plugin): pool
// named after the node, one device per GPU ("gpu-<minor>", GpuInfo.
// Attributes: type gpu, uuid, productName, the PCI bus id under
// resource.kubernetes.io/pciBusID, driverVersion as a version), static MIG
// devices (MigDeviceInfo.GetDevice: CommonAttributesMig plus uuid) and
// dynamic-MIG devices (MigSpec.PartGetDevice: CommonAttributesMig, no
// uuid). Device names as ToCanonicalName writes them (mig.go).
func nvidiaSlice(name, node string, generation int64, devices ...map[string]any) map[string]any {
	ds := make([]any, len(devices))
	for i, d := range devices {
		ds[i] = d
	}
	return map[string]any{
		"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"driver":   driver,
			"nodeName": node,
			"pool":     map[string]any{"name": node, "generation": generation, "resourceSliceCount": int64(1)},
			"devices":  ds,
		},
	}
}

func gpuDevice(minor, uuid, bus string) map[string]any {
	return map[string]any{"name": "gpu-" + minor, "attributes": map[string]any{
		"type": str("gpu"), "uuid": str(uuid), "productName": str("NVIDIA A100-SXM4-40GB"),
		"resource.kubernetes.io/pciBusID": str(bus),
		"driverVersion":                   map[string]any{"version": "580.95.5"},
	}}
}

func migDevice(name, uuid, parent, profile, bus string) map[string]any {
	attrs := map[string]any{"type": str("mig"), "parentUUID": str(parent), "profile": str(profile),
		"productName": str("NVIDIA A100-SXM4-40GB"), "resource.kubernetes.io/pciBusID": str(bus)}
	if uuid != "" {
		attrs["uuid"] = str(uuid)
	}
	return map[string]any{"name": name, "attributes": attrs}
}

const (
	gpu0 = "GPU-838f60d9-651f-9166-ea42-f9da674a6947"
	gpu1 = "GPU-2927d07e-3fe9-7904-9e08-b08b82d9a37d"
	mig1 = "MIG-e07a497d-1bb6-5a42-b670-1c33bf55ab6e"
)

func TestStoreAgainstAPIServer(t *testing.T) {
	srv := kubeapi.Shared(t)
	srv.Create(t, kubeapi.ResourceSlices, nvidiaSlice("node-a-gpu", "node-a", 1,
		gpuDevice("0", gpu0, "0000:07:00.0"),
		migDevice("gpu-1-mig-1g5gb-19-0", mig1, gpu1, "1g.5gb", "0000:0f:00.0"),
		migDevice("gpu-1-mig-1g5gb-me-20-1", "", gpu1, "1g.5gb+me", "0000:0f:00.0"),
	))
	// Another node's slice must not be seen.
	srv.Create(t, kubeapi.ResourceSlices, nvidiaSlice("node-b-gpu", "node-b", 1,
		gpuDevice("0", "GPU-00000000-0000-0000-0000-000000000000", "0000:07:00.0")))

	st, err := resourceslices.New(srv.Admin(), "node-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); st.Wait() })
	st.Run(ctx)
	if s := st.State(); !s.Synced || s.Version != "v1" {
		t.Fatalf("state %+v, want synced on v1", s)
	}

	tests := []struct {
		dev  string
		want resourceslices.Device
	}{
		{"gpu-0", resourceslices.Device{Type: "gpu", UUID: gpu0, ProductName: "NVIDIA A100-SXM4-40GB", PCIBusID: "0000:07:00.0"}},
		{"gpu-1-mig-1g5gb-19-0", resourceslices.Device{Type: "mig", UUID: mig1, ParentUUID: gpu1, Profile: "1g.5gb", ProductName: "NVIDIA A100-SXM4-40GB", PCIBusID: "0000:0f:00.0"}},
		{"gpu-1-mig-1g5gb-me-20-1", resourceslices.Device{Type: "mig", ParentUUID: gpu1, Profile: "1g.5gb+me", ProductName: "NVIDIA A100-SXM4-40GB", PCIBusID: "0000:0f:00.0"}},
	}
	for _, tt := range tests {
		got, ok := st.Lookup(resourceslices.Key{Driver: driver, Pool: "node-a", Device: tt.dev})
		if !ok || got != tt.want {
			t.Errorf("Lookup(%s) = %+v, %v; want %+v", tt.dev, got, ok, tt.want)
		}
	}
	if _, ok := st.Lookup(resourceslices.Key{Driver: driver, Pool: "node-b", Device: "gpu-0"}); ok {
		t.Error("another node's slice is in the index")
	}
	if d, _ := st.Lookup(resourceslices.Key{Driver: driver, Pool: "node-a", Device: "gpu-1-mig-1g5gb-me-20-1"}); !d.Dynamic() {
		t.Error("a MIG device without uuid is not Dynamic")
	}

	// A new generation of the pool replaces the old one (the driver
	// republishes after a MIG reconfiguration).
	srv.Create(t, kubeapi.ResourceSlices, nvidiaSlice("node-a-gpu-2", "node-a", 2, gpuDevice("0", gpu1, "0000:0f:00.0")))
	poll.Within(t, 10*time.Second, 20*time.Millisecond, "the new pool generation indexed", func() bool {
		d, _ := st.Lookup(resourceslices.Key{Driver: driver, Pool: "node-a", Device: "gpu-0"})
		_, stale := st.Lookup(resourceslices.Key{Driver: driver, Pool: "node-a", Device: "gpu-1-mig-1g5gb-19-0"})
		return d.UUID == gpu1 && !stale
	})
}

// Without RBAC on resourceslices the store says so (403, logged once) and
// resolves nothing; start-up is not blocked.
func TestStoreForbidden(t *testing.T) {
	srv := kubeapi.Shared(t)
	srv.CreateNamespace(t, "norbac")
	srv.CreateServiceAccount(t, "norbac", "exporter")
	cfg := srv.Config(srv.Token(t, "norbac", "exporter"))
	ctx, cancel := context.WithCancel(context.Background())
	st, err := resourceslices.Start(ctx, cfg, "node-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); st.Wait() })
	poll.Within(t, 10*time.Second, 20*time.Millisecond, "a 403 in the store's state", func() bool {
		s := st.State()
		return s.Err != nil && apierrors.IsForbidden(s.Err) && !s.Synced && s.Version == "v1"
	})
	if _, ok := st.Lookup(resourceslices.Key{Driver: driver, Pool: "node-a", Device: "gpu-0"}); ok {
		t.Error("a forbidden store resolved a device")
	}
}
