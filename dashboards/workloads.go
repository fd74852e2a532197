package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// gpuHours sums a GPU-count series over the dashboard's time range into
// GPU-hours: one sample a minute (the subquery's step), each worth 1/60 h.
// A namespace or pod present for part of the range is charged that part.
func gpuHours(series string) string {
	return `sum_over_time(` + series + `[$__range:1m]) / 60`
}

// Workloads shows what namespaces and pods do with their GPUs: GPU-hours,
// utilization, memory and power, idle-but-allocated GPUs and a waste
// table; with process accounting, energy and cost, shares given versus
// used and orphan processes (energyRows); and the same for HPC jobs and
// users (hpcRows). Shared GPUs are split between their holders and MIG instances
// count as their share of a GPU (see rules/recording.yaml).
func Workloads(o Options) (dashboard.Dashboard, error) {
	bd := newBoard(o, WorkloadsUID, "GPU / Namespace and workload usage",
		"GPU-hours, utilization, memory and power per namespace and pod; GPUs held but idle; pods waiting for GPUs; energy and cost, shares given versus used and orphan processes (process accounting).",
		[]cog.Builder[dashboard.VariableModel]{datasourceVar(), clusterVar(), nodeVar(), namespaceVar(o), podVar(o), hpcUserVar(), priceVar()})
	ns := sel(mCluster, o.mNamespace())
	pods := sel(mCluster, mNode, o.mNamespace(), mPod)
	nsLabel := o.ns()
	legendNamespace := "{{" + nsLabel + "}}"
	legendPod := "{{" + nsLabel + "}}/{{pod}} on {{node}}"

	bd.row("Namespaces")
	bd.stat(panel{title: "GPUs allocated", unit: unitGPUs, decimals: ptr(1), w: 6,
		description: "GPU equivalents the selected namespaces hold now (a MIG instance counts as its share of a GPU, a shared GPU is split between its holders).",
		queries:     []query{{expr: `sum(namespace:gpu_allocated:sum{` + ns + `})`}}})
	bd.stat(panel{title: "GPU-hours allocated", unit: unitGPUHours, decimals: ptr(1), w: 6,
		description: "GPU-hours held over the dashboard's time range.",
		queries:     []query{{expr: `sum(` + gpuHours(`namespace:gpu_allocated:sum{`+ns+`}`) + `)`}}})
	bd.stat(panel{title: "GPU-hours unused", unit: unitGPUHours, decimals: ptr(1), w: 6,
		description: "GPU-hours held but not used over the time range: allocated x (1 - utilization).",
		queries:     []query{{expr: `sum(` + gpuHours(`namespace:gpu_allocated_unused:sum{`+ns+`}`) + `)`}}})
	bd.stat(panel{title: "Utilization of allocated GPUs", unit: unitRatio, decimals: ptr(1), w: 6, thresholds: utilizationThresholds,
		description: "Average utilization of what the selected namespaces hold, weighted by what each holds.",
		queries: []query{{expr: `sum(namespace:gpu_utilization_ratio:avg{` + ns + `} * namespace:gpu_allocated:sum{` + ns + `})
/
sum(namespace:gpu_allocated:sum{` + ns + `} and namespace:gpu_utilization_ratio:avg{` + ns + `})`}}})
	bd.timeseries(panel{title: "GPUs allocated by namespace", unit: unitGPUs, w: 12, steps: true, min: ptr(0),
		description: "GPU equivalents held per namespace.",
		queries:     []query{{expr: `namespace:gpu_allocated:sum{` + ns + `}`, legend: legendNamespace}}})
	bd.timeseries(panel{title: "GPU utilization by namespace", unit: unitRatio, w: 12, min: ptr(0), max: ptr(1), thresholds: utilizationThresholds,
		description: "Utilization of what each namespace holds.",
		queries:     []query{{expr: `namespace:gpu_utilization_ratio:avg{` + ns + `}`, legend: legendNamespace}}})
	bd.timeseries(panel{title: "GPU memory used by namespace", unit: unitBytes, w: 12, min: ptr(0),
		description: "GPU memory used per namespace; a shared GPU's memory is split evenly between its holders.",
		queries:     []query{{expr: `namespace:gpu_memory_used_bytes:sum{` + ns + `}`, legend: legendNamespace}}})
	bd.timeseries(panel{title: "GPU power by namespace", unit: unitWatts, w: 12, min: ptr(0),
		description: "Board power charged to each namespace by the share of each GPU it holds.",
		queries:     []query{{expr: `namespace:gpu_power_watts:sum{` + ns + `}`, legend: legendNamespace}}})
	bd.table(panel{title: "Usage by namespace", unit: unitGPUHours, w: 24, decimals: ptr(2),
		description: "Over the dashboard's time range: GPU-hours held and unused, average utilization and memory.",
		queries: []query{
			{expr: `sum by (` + nsLabel + `) (` + gpuHours(`namespace:gpu_allocated:sum{`+ns+`}`) + `)`},
			{expr: `sum by (` + nsLabel + `) (` + gpuHours(`namespace:gpu_allocated_unused:sum{`+ns+`}`) + `)`},
			{expr: `avg by (` + nsLabel + `) (avg_over_time(namespace:gpu_utilization_ratio:avg{` + ns + `}[$__range]))`},
			{expr: `sum by (` + nsLabel + `) (avg_over_time(namespace:gpu_memory_used_bytes:sum{` + ns + `}[$__range]))`},
		}},
		[]column{{field: nsLabel, title: "namespace"},
			{field: "Value #A", title: "GPU-hours allocated"},
			{field: "Value #B", title: "GPU-hours unused"},
			{field: "Value #C", title: "utilization", unit: unitRatio, thresholds: utilizationThresholds},
			{field: "Value #D", title: "memory used", unit: unitBytes}},
		"GPU-hours unused")

	// Workloads and Kueue queues from the exporter's own gpu_workload_info
	// (--kubernetes.workload-info; the workload:* and cluster_queue:* rules).
	legendWorkload := "{{" + nsLabel + "}}/{{workload_name}} ({{workload_kind}})"
	bd.row("Workloads and queues")
	bd.timeseries(panel{title: "GPUs allocated by workload", unit: unitGPUs, w: 8, steps: true, min: ptr(0),
		description: "GPU equivalents held per workload: the top of each pod's owner chain (Deployment, CronJob, JobSet, LeaderWorkerSet, StatefulSet, ...), from gpu_workload_info (--kubernetes.workload-info).",
		queries:     []query{{expr: `workload:gpu_allocated:sum{` + ns + `}`, legend: legendWorkload}}})
	bd.timeseries(panel{title: "GPU utilization by workload", unit: unitRatio, w: 8, min: ptr(0), max: ptr(1), thresholds: utilizationThresholds,
		description: "Utilization of what each workload's pods hold, weighted by their GPU equivalents.",
		queries:     []query{{expr: `workload:gpu_utilization_ratio:avg{` + ns + `}`, legend: legendWorkload}}})
	bd.timeseries(panel{title: "GPUs allocated by Kueue ClusterQueue", unit: unitGPUs, w: 8, steps: true, min: ptr(0),
		description: "GPU equivalents held by the pods Kueue admitted, per ClusterQueue (the LocalQueue's spec.clusterQueue).",
		queries:     []query{{expr: `cluster_queue:gpu_allocated:sum{` + sel(mCluster) + `}`, legend: "{{cluster_queue}}"}}})

	bd.row("Pods")
	bd.timeseries(panel{title: "GPUs allocated by pod", unit: unitGPUs, steps: true, min: ptr(0),
		description: "GPU equivalents held per pod.",
		queries:     []query{{expr: `namespace_pod:gpu_allocated:sum{` + pods + `}`, legend: legendPod}}})
	bd.timeseries(panel{title: "GPU utilization by pod", unit: unitRatio, min: ptr(0), max: ptr(1), thresholds: utilizationThresholds,
		description: "Utilization of what each pod holds.",
		queries:     []query{{expr: `namespace_pod:gpu_utilization_ratio:avg{` + pods + `}`, legend: legendPod}}})
	bd.timeseries(panel{title: "GPU memory used by pod", unit: unitBytes, min: ptr(0),
		description: "GPU memory used per pod; a shared GPU's memory is split evenly between its holders.",
		queries:     []query{{expr: `namespace_pod:gpu_memory_used_bytes:sum{` + pods + `}`, legend: legendPod}}})
	bd.timeseries(panel{title: "Utilization of each GPU a pod holds", unit: unitRatio, w: 24, min: ptr(0), max: ptr(1), thresholds: utilizationThresholds,
		description: "Per held GPU (graphics-engine activity for MIG instances). On a shared GPU every holder sees the whole GPU's utilization.",
		queries: []query{
			{expr: `gpu_utilization_ratio{` + sel(pods, `pod!=""`) + `}`, legend: legendNamespace + "/{{pod}} " + legendGPU},
			{expr: `gpu_graphics_engine_active_ratio{` + sel(pods, `pod!=""`, `gpu_instance!=""`) + `}`, legend: legendNamespace + "/{{pod}} " + legendMIGInstance},
		}})
	bd.table(panel{title: "Allocated but idle", unit: unitRatio, w: 12, h: 9,
		description: "GPUs and MIG instances held by a pod whose utilization averaged under 5% over the dashboard's time range.",
		queries: []query{{expr: `avg_over_time(gpu_utilization_ratio{` + sel(pods, `pod!=""`) + `}[$__range]) < 0.05
or
avg_over_time(gpu_graphics_engine_active_ratio{` + sel(pods, `pod!=""`, `gpu_instance!=""`) + `}[$__range]) < 0.05`}}},
		[]column{{field: nsLabel, title: "namespace"}, {field: "pod"}, {field: "container"},
			{field: "node", link: detailLink("GPUs of this node", "node", "")},
			{field: "gpu", title: "GPU", link: detailLink("This GPU", "node", "GPU")},
			{field: "gpu_instance", title: "MIG instance"}, {field: "Value", title: "utilization", thresholds: utilizationThresholds}},
		"")
	bd.table(panel{title: "Waste by pod", unit: unitGPUHours, w: 12, h: 9, decimals: ptr(2),
		description: "Over the dashboard's time range, per pod: GPU-hours held, GPU-hours held but unused, average utilization.",
		queries: []query{
			{expr: `sum by (node, ` + nsLabel + `, pod) (` + gpuHours(`namespace_pod:gpu_allocated:sum{`+pods+`}`) + `)`},
			{expr: `sum by (node, ` + nsLabel + `, pod) (` + gpuHours(`namespace_pod:gpu_allocated_unused:sum{`+pods+`}`) + `)`},
			{expr: `avg by (node, ` + nsLabel + `, pod) (avg_over_time(namespace_pod:gpu_utilization_ratio:avg{` + pods + `}[$__range]))`},
		}},
		[]column{{field: nsLabel, title: "namespace"}, {field: "pod"},
			{field: "node", link: detailLink("GPUs of this node", "node", "")},
			{field: "Value #A", title: "GPU-hours allocated"},
			{field: "Value #B", title: "GPU-hours unused"},
			{field: "Value #C", title: "utilization", unit: unitRatio, thresholds: utilizationThresholds}},
		"GPU-hours unused")
	bd.table(panel{title: "Pods waiting for GPUs", unit: unitGPUs, w: 24, h: 6,
		description: "Pending pods that request nvidia.com/gpu or MIG resources, with the number requested (kube-state-metrics).",
		queries:     []query{{expr: pendingGPUPods(sel(mCluster, mKSMNamespace))}}},
		[]column{{field: "namespace"}, {field: "pod"}, {field: "Value", title: "GPUs requested"}},
		"")
	sharedGPUs(bd, pods, legendNamespace, legendPod)
	energyRows(bd, o, legendNamespace, legendWorkload)
	hpcRows(bd)
	return bd.build()
}

// sharedGPUs adds the row of what each pod really uses of a shared GPU,
// from process accounting (docs/shared-gpus.md): the device's series give
// every sharer the whole GPU's utilization, these tell them apart.
func sharedGPUs(bd *board, pods, legendNamespace, legendPod string) {
	bd.row("Shared GPUs (process accounting)")
	bd.timeseries(panel{title: "Own GPU use by pod", unit: unitGPUs, w: 12, min: ptr(0),
		description: "GPUs' worth of SM time each pod's own processes use (1 = one GPU busy), from per-process accounting; on a time-sliced or MPS GPU each sharer shows its own part. Empty without --collect.processes.",
		queries:     []query{{expr: `namespace_pod:gpu_container_utilization_ratio:sum{` + pods + `}`, legend: legendPod}}})
	bd.timeseries(panel{title: "Own GPU memory by pod", unit: unitBytes, w: 12, min: ptr(0),
		description: "Device memory each pod's own processes use, measured per process rather than split evenly.",
		queries:     []query{{expr: `namespace_pod:gpu_container_memory_used_bytes:sum{` + pods + `}`, legend: legendPod}}})
	bd.timeseries(panel{title: "Share of each shared GPU by container", unit: unitRatio, w: 24, min: ptr(0), max: ptr(1), thresholds: utilizationThresholds,
		description: "Per GPU, each holding container's share of its SM time; over a collection interval the shares add up to the GPU's utilization over that time, which differs from the GPU utilization panel's last sample under a changing load (the host's own processes are the series without a pod).",
		queries: []query{{expr: `gpu_container_utilization_ratio{` + sel(pods, `pod!=""`) + `}`,
			legend: legendNamespace + "/{{pod}}/{{container}} " + legendGPU}}})
}
