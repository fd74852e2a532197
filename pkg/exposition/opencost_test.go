package exposition

import (
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// openCostQueries are the dcgm-exporter families OpenCost's Prometheus
// source queries, each with the labels its query selects on or groups by
// (opencost/opencost modules/prometheus-source/pkg/prom: metricsquerier.go
// QueryGPUsUsageAvg and QueryGPUInfo; gpudevicequerier.go, grouping
// gpuDeviceByLabels; gpusaturationquerier.go, grouping
// gpuSaturationByLabels, every query with container!=""). OpenCost also
// groups by uid, which dcgm-exporter never writes (its pod UID label is
// pod_uid, internal/pkg/transformation/const.go): the group is empty in
// both. docs/opencost.md lists the queries.
var openCostQueries = []struct {
	metric string
	labels []string
}{
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_DEV_DEC_UTIL", []string{"container", "pod", "namespace", "device", "modelName", "UUID"}},
	{"DCGM_FI_DEV_POWER_USAGE", []string{"device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_DEV_GPU_TEMP", []string{"device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_DEV_FB_USED", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_DEV_FB_FREE", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_DEV_POWER_VIOLATION", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_DEV_THERMAL_VIOLATION", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_DEV_SYNC_BOOST_VIOLATION", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_DEV_XID_ERRORS", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_PROF_DRAM_ACTIVE", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_PROF_SM_ACTIVE", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_PROF_SM_OCCUPANCY", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_PROF_PCIE_TX_BYTES", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_PROF_PCIE_RX_BYTES", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_PROF_NVLINK_TX_BYTES", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
	{"DCGM_FI_PROF_NVLINK_RX_BYTES", []string{"container", "pod", "namespace", "device", "modelName", "UUID", "GPU_I_PROFILE", "GPU_I_ID"}},
}

// TestOpenCostQueriesUnderDCGMNaming renders a dcgm-naming page for a node
// with a whole GPU and a MIG instance, each held by a container, and checks
// that every family OpenCost queries is there, named as it queries it, with
// every label it reads: on the whole GPU (without GPU_I_*, which OpenCost
// groups as empty) and on the MIG instance.
func TestOpenCostQueriesUnderDCGMNaming(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	var k Counters
	for _, q := range openCostQueries {
		f, ok := cat.Lookup(q.metric)
		if !ok {
			t.Fatalf("%s, which OpenCost queries, is not in the catalog", q.metric)
		}
		f.DCGMName = q.metric // a counters file row names it so
		k.Fields = append(k.Fields, f)
	}
	r := NewRenderer(Options{Naming: NamingDCGM, DCGM: DCGMOptions{Hostname: "node-1"}})
	set, extra := r.WatchSet(k)
	inv := &source.Inventory{DriverVersion: "550.54.15", Entities: []source.Entity{
		{Kind: source.GPU, GPU: 0, UUID: "GPU-a", Device: "nvidia0", Model: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:3B:00.0", GPUInstance: -1, ComputeInstance: -1},
		{Kind: source.GPU, GPU: 1, UUID: "GPU-b", Device: "nvidia1", Model: "NVIDIA A100-SXM4-40GB", PCIBusID: "00000000:86:00.0", GPUInstance: -1, ComputeInstance: -1},
		{Kind: source.GPUInstance, GPU: 1, UUID: "GPU-b", Device: "nvidia1", Model: "NVIDIA A100-SXM4-40GB", PCIBusID: "00000000:86:00.0", GPUInstance: 1, ComputeInstance: -1, MIGProfile: "3g.20gb", MIGUUID: "MIG-x"},
	}}
	s := source.NewSample(testTime, inv, set)
	for e := range inv.Entities {
		for c := range set {
			s.Set(e, c, source.IntValue(int64(1+c)))
		}
	}
	in := Input{Sample: s, Extra: extra, Holdings: []Holding{
		{Entity: 0, Holder: &Holder{Namespace: "ml", Pod: "train-0", Container: "main"}},
		{Entity: 1},
		{Entity: 2, Holder: &Holder{Namespace: "ml", Pod: "infer-0", Container: "server"}},
	}}
	r.Derive(&in, k)
	fams := parseText(t, r.Render(in).Text)
	for _, q := range openCostQueries {
		mf, ok := fams[q.metric]
		if !ok {
			t.Errorf("%s is not on the page", q.metric)
			continue
		}
		for _, want := range []struct {
			uuid, profile string
		}{{"GPU-a", ""}, {"GPU-b", "3g.20gb"}} {
			found := false
			for _, m := range mf.Metric {
				l := labelMap(m)
				if l["UUID"] != want.uuid || l["GPU_I_PROFILE"] != want.profile {
					continue
				}
				found = true
				for _, name := range q.labels {
					if _, isMIG := map[string]bool{"GPU_I_PROFILE": true, "GPU_I_ID": true}[name]; isMIG && want.profile == "" {
						continue // a whole GPU has no instance: OpenCost's group is empty
					}
					if l[name] == "" {
						t.Errorf("%s on %s lacks %s, which OpenCost reads: %v", q.metric, want.uuid, name, l)
					}
				}
			}
			if !found {
				t.Errorf("%s has no series for %s (instance %q)", q.metric, want.uuid, want.profile)
			}
		}
	}
}
