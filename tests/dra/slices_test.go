package dra

import (
	"sync"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/tests/kubeapi"
)

// The dra scenario's GPUs (etc/sim/dra.yaml), by index.
var gpuUUIDs = []string{
	"GPU-5a1f3b0e-8c2d-4e6f-9a7b-1c2d3e4f5a60",
	"GPU-5a1f3b0e-8c2d-4e6f-9a7b-1c2d3e4f5a61",
	"GPU-5a1f3b0e-8c2d-4e6f-9a7b-1c2d3e4f5a62",
	"GPU-5a1f3b0e-8c2d-4e6f-9a7b-1c2d3e4f5a63",
}

// staticMIG is the dra scenario's static MIG device on GPU 2.
const staticMIG = "MIG-0d6a2c1e-3b4f-5a6d-8e9f-a0b1c2d3e4f5"

func str(s string) map[string]any { return map[string]any{"string": s} }

// sliceObject is a ResourceSlice as NVIDIA's DRA driver publishes one
// (NVIDIA/k8s-dra-driver-gpu@22407113, cmd/gpu-kubelet-plugin): driver
// gpu.nvidia.com, pool named after the node, generation 1 of one slice.
func sliceObject(name, node string, devices ...map[string]any) map[string]any {
	ds := make([]any, len(devices))
	for i, d := range devices {
		ds[i] = d
	}
	return map[string]any{
		"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"driver": "gpu.nvidia.com", "nodeName": node,
			"pool":    map[string]any{"name": node, "generation": int64(1), "resourceSliceCount": int64(1)},
			"devices": ds,
		},
	}
}

// gpuDev is a whole GPU as GpuInfo.Attributes describes it (deviceinfo.go).
func gpuDev(minor, uuid string) map[string]any {
	return map[string]any{"name": "gpu-" + minor, "attributes": map[string]any{
		"type": str("gpu"), "uuid": str(uuid), "productName": str("NVIDIA H100 80GB HBM3"),
		"resource.kubernetes.io/pciBusID": str("0000:0" + minor + ":00.0"),
		"driverVersion":                   map[string]any{"version": "580.95.5"},
	}}
}

// migDev is a MIG device as CommonAttributesMig describes it (mig.go),
// with the uuid only for a static MIG device (MigDeviceInfo.GetDevice);
// a dynamic-MIG device (MigSpec) has none.
func migDev(name, uuid, parent, profile string) map[string]any {
	attrs := map[string]any{"type": str("mig"), "parentUUID": str(parent), "profile": str(profile),
		"productName": str("NVIDIA H100 80GB HBM3"), "resource.kubernetes.io/pciBusID": str("0000:02:00.0")}
	if uuid != "" {
		attrs["uuid"] = str(uuid)
	}
	return map[string]any{"name": name, "attributes": attrs}
}

// draNodeSlices is what NVIDIA's driver publishes for the dra scenario's
// node: four GPUs, GPU 2's static MIG device and its two dynamic-MIG
// devices in use.
func draNodeSlices(node string) map[string]any {
	return sliceObject(node+"-gpu", node,
		gpuDev("0", gpuUUIDs[0]), gpuDev("1", gpuUUIDs[1]), gpuDev("2", gpuUUIDs[2]), gpuDev("3", gpuUUIDs[3]),
		migDev("gpu-2-mig-1g10gb-19-0", staticMIG, gpuUUIDs[2], "1g.10gb"),
		migDev("gpu-2-mig-3g40gb-9-4", "", gpuUUIDs[2], "3g.40gb"),
		migDev("gpu-2-mig-1g10gb-me-20-1", "", gpuUUIDs[2], "1g.10gb+me"),
	)
}

var chart struct {
	once sync.Once
	sa   string
}

// chartAccount applies the chart's rendered ServiceAccount and RBAC to
// the shared server, once per test binary, and returns the account.
func chartAccount(t *testing.T, srv *kubeapi.Server) string {
	t.Helper()
	chart.once.Do(func() { chart.sa = srv.ApplyChartRBAC(t, chartNamespace, renderChart(t)) })
	if chart.sa == "" {
		t.Fatal("the chart's RBAC was not applied")
	}
	return chart.sa
}
