package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// GPU resources of kube-state-metrics v2 (resource names sanitized), as in
// the GPUPodPending alert.
const gpuResources = `resource=~"nvidia_com_gpu|nvidia_com_gpu_shared|nvidia_com_mig_.+"`

// idleAllocated counts held GPUs and MIG instances whose utilization averaged
// under 5% over 30 minutes: the GPUAllocatedButIdle alert's condition,
// without its `for`.
func idleAllocated(matchers string) string {
	return `count(
  (avg_over_time(gpu:gpu_utilization_ratio:max{` + matchers + `}[30m]) < 0.05)
    and on (cluster, node, uuid, gpu_instance)
  gpu:gpu_pod_allocation_info:count
) or vector(0)`
}

// pendingGPUPods selects pods that request GPUs and are pending, with the
// number they request.
func pendingGPUPods(matchers string) string {
	return `sum by (cluster, namespace, pod) (kube_pod_container_resource_requests{` + sel(gpuResources, matchers) + `})
  and on (cluster, namespace, pod)
(max by (cluster, namespace, pod) (kube_pod_status_phase{` + sel(`phase="Pending"`, matchers) + `}) == 1)`
}

// ClusterOverview is the fleet view: capacity against allocation and idle
// GPUs, utilization and memory distributions, the hottest GPUs, power, and
// errors.
func ClusterOverview(o Options) (dashboard.Dashboard, error) {
	bd := newBoard(o, ClusterOverviewUID, "GPU / Cluster overview",
		"GPUs in use, allocatable and idle; utilization, memory, temperature, power and errors across the fleet.",
		[]cog.Builder[dashboard.VariableModel]{datasourceVar(), clusterVar(), nodeVar()})
	cn := sel(mCluster, mNode)

	bd.row("Capacity")
	bd.stat(panel{title: "GPUs", unit: unitCount,
		description: "Physical GPUs the exporters report.",
		queries:     []query{{expr: `sum(node:gpu_info:count{` + cn + `})`}}})
	bd.stat(panel{title: "Allocatable", unit: unitCount,
		description: "Units a pod can be given: GPUs not in MIG mode plus MIG instances.",
		queries:     []query{{expr: `sum(node:gpu_devices:count{` + cn + `})`}}})
	bd.stat(panel{title: "Allocated", unit: unitCount,
		description: "Allocatable units some container holds (the kubelet's view).",
		queries:     []query{{expr: `sum(node:gpu_devices_allocated:count{` + cn + `})`}}})
	bd.stat(panel{title: "Allocated but idle", unit: unitCount, thresholds: warningThresholds,
		description: "Held units whose utilization averaged under 5% over the last 30 minutes (the GPUAllocatedButIdle condition).",
		queries:     []query{{expr: idleAllocated(cn)}}})
	bd.stat(panel{title: "Pods waiting for GPUs", unit: unitCount,
		description: "Pending pods that request nvidia.com/gpu or MIG resources (kube-state-metrics).",
		queries:     []query{{expr: `count(` + pendingGPUPods(mCluster) + `) or vector(0)`}}})
	bd.stat(panel{title: "Utilization", unit: unitRatio, decimals: ptr(1), thresholds: utilizationThresholds,
		description: "Average utilization of every GPU and MIG instance of the cluster, a MIG instance weighted by its share of the GPU. Not filtered by node.",
		queries:     []query{{expr: `cluster:gpu_utilization_ratio:avg{` + mCluster + `}`, legend: "{{cluster}}"}}})
	bd.timeseries(panel{title: "Allocatable, allocated and idle GPUs", unit: unitCount, w: 24, steps: true,
		description: "Allocatable units, those held by pods, and those held but idle (under 5% over 30 minutes).",
		queries: []query{
			{expr: `sum(node:gpu_devices:count{` + cn + `})`, legend: "allocatable"},
			{expr: `sum(node:gpu_devices_allocated:count{` + cn + `})`, legend: "allocated"},
			{expr: idleAllocated(cn), legend: "allocated, idle"},
		}})

	bd.row("Utilization and memory")
	bd.heatmap(panel{title: "GPU utilization", unit: unitRatio,
		description: "Distribution of the utilization of every GPU and MIG instance (graphics-engine activity under MIG).",
		queries:     []query{{expr: `gpu:gpu_utilization_ratio:max{` + cn + `}`, legend: legendGPU}}}, "0.1")
	bd.heatmap(panel{title: "GPU memory used", unit: unitRatio,
		description: "Distribution of the share of memory used, per GPU (MIG GPUs as a whole).",
		queries: []query{{
			expr:   `gpu:gpu_memory_used_bytes:max{` + sel(cn, `gpu_instance=""`) + `} / gpu:gpu_memory_total_bytes:max{` + sel(cn, `gpu_instance=""`) + `}`,
			legend: legendGPU,
		}}}, "0.1")
	bd.timeseries(panel{title: "Utilization by node", unit: unitRatio, w: 12, min: ptr(0), max: ptr(1), thresholds: utilizationThresholds,
		description: "Average utilization of each node's GPUs and MIG instances.",
		queries:     []query{{expr: `node:gpu_utilization_ratio:avg{` + cn + `}`, legend: legendNode}}})
	bd.timeseries(panel{title: "Memory used by node", unit: unitRatio, w: 12, min: ptr(0), max: ptr(1), thresholds: memoryThresholds,
		description: "Share of each node's GPU memory in use. Frameworks that pre-allocate (TensorFlow, JAX, vLLM) hold most of it by design.",
		queries: []query{
			{expr: `node:gpu_memory_used_bytes:sum{` + cn + `} / node:gpu_memory_total_bytes:sum{` + cn + `}`, legend: legendNode},
		}})

	bd.row("GPU health")
	bd.gpuHealth(cn)

	bd.row("Temperature and power")
	bd.table(panel{title: "Hottest GPUs", unit: unitCelsius, w: 8,
		description: "The ten hottest GPUs now, with their distance to the temperature at which each slows its clocks (gpu_temperature_slowdown_celsius; blank where the GPU reports none). Node and GPU link to the detail dashboard.",
		queries: []query{
			{expr: `topk(10, gpu:gpu_temperature_celsius:max{` + cn + `})`},
			// gpuMax keeps the labels gpu:* recordings keep
			// (rules.GPULabels), so the two sides match one to one.
			{expr: gpuMax() + `(gpu_temperature_slowdown_celsius{` + cn + `}) - topk(10, gpu:gpu_temperature_celsius:max{` + cn + `})`},
		}},
		[]column{{field: "node", link: detailLink("GPUs of this node", "node", "")},
			{field: "gpu", title: "GPU", link: detailLink("This GPU", "node", "GPU")},
			{field: "model"},
			{field: "Value #A", title: "Temperature", thresholds: temperatureThresholds},
			{field: "Value #B", title: "Headroom to slowdown", thresholds: headroomThresholds}},
		"Temperature")
	bd.timeseries(panel{title: "Temperature headroom of the hottest GPUs", unit: unitCelsius, thresholds: headroomThresholds,
		description: "Degrees left before each GPU slows its clocks (its slowdown temperature minus its temperature), for the ten GPUs closest to it. GPUTemperatureHigh fires 5 °C before, GPUTemperatureCritical at 0.",
		queries: []query{{
			expr:   `bottomk(10, ` + gpuMax() + `(gpu_temperature_slowdown_celsius{` + cn + `}) - gpu:gpu_temperature_celsius:max{` + cn + `})`,
			legend: legendGPU,
		}}})
	bd.timeseries(panel{title: "Power by node", unit: unitWatts, min: ptr(0),
		description: "Board power of each node's GPUs.",
		queries:     []query{{expr: `node:gpu_power_watts:sum{` + cn + `}`, legend: legendNode}}})
	bd.timeseries(panel{title: "Throttled GPUs by reason", unit: unitCount, steps: true, w: 24,
		description: "GPUs whose clocks a thermal or power reason lowers.",
		queries: []query{{
			expr:   `count by (reason) (` + gpuMax("reason") + `(gpu_clock_event_active{` + sel(cn, `reason=~"sw_thermal|hw_thermal|hw_slowdown|sw_power_cap|hw_power_brake"`) + `}) == 1)`,
			legend: "{{reason}}",
		}}})

	bd.collapsedRow("Errors and alerts")
	bd.stat(panel{title: "Critical GPU alerts", unit: unitCount, w: 8, thresholds: problemThresholds,
		description: "GPU alerts of severity critical firing now.",
		queries:     []query{{expr: `count(ALERTS{` + sel(`alertstate="firing"`, `alertname=~"GPU.*"`, `severity="critical"`, cn) + `}) or vector(0)`}}})
	bd.table(panel{title: "Firing GPU alerts", unit: unitCount, w: 16, h: 8,
		description: "GPU alerts firing now, from the ALERTS series of the Prometheus that evaluates the rules. Node and GPU link to the detail dashboard.",
		queries:     []query{{expr: `ALERTS{` + sel(`alertstate="firing"`, `alertname=~"GPU.*"`, cn) + `}`}}},
		[]column{{field: "alertname", title: "alert"}, {field: "severity"},
			{field: "node", link: detailLink("GPUs of this node", "node", "")},
			{field: "gpu", title: "GPU", link: detailLink("This GPU", "node", "GPU")},
			{field: "xid", title: "XID"}, {field: "reason"}, {field: o.ns(), title: "namespace"}, {field: "pod"}},
		"")
	bd.timeseries(panel{title: "XID errors", unit: unitCount, steps: true,
		description: "XID errors the exporter counted since it started, by GPU and code.",
		queries:     []query{{expr: `gpu_xid_errors_total{` + cn + `}`, legend: legendGPU + " XID {{xid}}"}}})
	bd.timeseries(panel{title: "Corrected (single-bit) ECC errors", unit: unitPerSecond,
		description: "Rate of corrected ECC errors per GPU; a steady rate points to a weak memory cell.",
		queries: []query{{
			expr:   gpuMax() + `(rate(gpu_ecc_single_bit_volatile_errors_total{` + cn + `}[$__rate_interval]))`,
			legend: legendGPU,
		}}})

	bd.collapsedRow("Exporters")
	bd.exporterHealth(cn)
	return bd.build()
}
