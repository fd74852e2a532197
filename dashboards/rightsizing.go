package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Rightsizing shows what GPUs cost and what they could cost: GPU-hours
// held, used and idle per namespace and workload, the hourly right-sizing
// figures (docs/rightsizing.md), and per workload the peak device memory
// and p95 activity a smaller size must fit. The recommended size itself
// comes from `gpu-exporter rightsize`, which knows each model's MIG
// profiles.
func Rightsizing(o Options) (dashboard.Dashboard, error) {
	bd := newBoard(o, RightsizingUID, "GPU / Cost and right-sizing",
		"GPU-hours allocated, used and idle by namespace and workload; peak memory and p95 activity per workload, for sizing requests.",
		[]cog.Builder[dashboard.VariableModel]{datasourceVar(), clusterVar(), namespaceVar(o)})
	bd.b.Time("now-7d", "now")
	ns := sel(mCluster, o.mNamespace())
	nsLabel := o.ns()
	legendNamespace := "{{" + nsLabel + "}}"
	legendWorkload := "{{" + nsLabel + "}}/{{workload}}"
	byWorkload := nsLabel + ", workload, workload_type"
	workloadCols := []column{{field: nsLabel, title: "namespace"}, {field: "workload"}, {field: "workload_type", title: "kind"}}

	bd.row("GPU-hours over the time range")
	for _, s := range []struct{ title, series, description string }{
		{"GPU-hours allocated", "namespace:gpu_allocated:sum", "GPU equivalents held × time (a MIG instance is its share of a GPU, a shared GPU is split between its holders)."},
		{"GPU-hours used", "namespace:gpu_used:sum", "Allocation × activity of the device held, × time."},
		{"GPU-hours idle", "namespace:gpu_idle:sum", "Allocation held while its device was below the idle threshold (GPUAllocatedButIdle's, 5% by default), × time."},
	} {
		bd.stat(panel{title: s.title, unit: unitGPUHours, decimals: ptr(1), w: 6, description: s.description,
			queries: []query{{expr: `sum(` + gpuHours(s.series+`{`+ns+`}`) + `)`}}})
	}
	bd.stat(panel{title: "Idle share", unit: unitRatio, decimals: ptr(1), w: 6, thresholds: idleThresholds,
		description: "Idle GPU-hours over allocated GPU-hours in the time range.",
		queries: []query{{expr: `sum(` + gpuHours(`namespace:gpu_idle:sum{`+ns+`}`) + `)
/
sum(` + gpuHours(`namespace:gpu_allocated:sum{`+ns+`}`) + `)`}}})
	for _, s := range []struct{ title, series string }{
		{"GPU-hours allocated per hour", "namespace:gpu_allocated_hours:sum_1h"},
		{"GPU-hours idle per hour", "namespace:gpu_idle_hours:sum_1h"},
	} {
		bd.timeseries(panel{title: s.title + " by namespace", unit: unitGPUHours, w: 12, min: ptr(0),
			description: "The right-sizing recording " + s.series + ": the last hour's figure, every minute.",
			queries:     []query{{expr: s.series + `{` + ns + `}`, legend: legendNamespace}}})
	}

	bd.row("Waste by workload")
	bd.table(panel{title: "GPU-hours by workload", unit: unitGPUHours, w: 24, h: 9, decimals: ptr(2),
		description: "Over the dashboard's time range, per workload (Deployment, StatefulSet, Job, …, from kube-state-metrics' owners): GPU-hours held, used and idle, and the idle share.",
		queries: []query{
			{expr: `sum by (` + byWorkload + `) (` + gpuHours(`namespace_workload:gpu_allocated:sum{`+ns+`}`) + `)`},
			{expr: `sum by (` + byWorkload + `) (` + gpuHours(`namespace_workload:gpu_used:sum{`+ns+`}`) + `)`},
			{expr: `sum by (` + byWorkload + `) (` + gpuHours(`namespace_workload:gpu_idle:sum{`+ns+`}`) + `)`},
			{expr: `sum by (` + byWorkload + `) (` + gpuHours(`namespace_workload:gpu_idle:sum{`+ns+`}`) + `)
/
sum by (` + byWorkload + `) (` + gpuHours(`namespace_workload:gpu_allocated:sum{`+ns+`}`) + `)`},
		}},
		append(workloadCols[:3:3],
			column{field: "Value #A", title: "GPU-hours allocated"},
			column{field: "Value #B", title: "GPU-hours used"},
			column{field: "Value #C", title: "GPU-hours idle"},
			column{field: "Value #D", title: "idle share", unit: unitRatio, thresholds: idleThresholds}),
		"GPU-hours idle")

	bd.row("Right-sizing")
	bd.table(panel{title: "What one device must fit, by workload", unit: unitBytes, w: 24, h: 9, decimals: ptr(2),
		description: "Over the dashboard's time range, per workload: the most memory used on any one GPU or MIG instance it holds and its 95th percentile, and the 95th percentile of its busiest device's activity. A MIG profile fits when its memory covers the peak with headroom and its slices / 7 cover the activity (scaled to the current size); `gpu-exporter rightsize` picks it per GPU model.",
		queries: []query{
			{expr: `max by (` + byWorkload + `) (max_over_time(namespace_workload:gpu_device_memory_used_bytes:max{` + ns + `}[$__range]))`},
			{expr: `max by (` + byWorkload + `) (quantile_over_time(0.95, namespace_workload:gpu_device_memory_used_bytes:max{` + ns + `}[$__range]))`},
			{expr: `max by (` + byWorkload + `) (quantile_over_time(0.95, namespace_workload:gpu_device_utilization_ratio:max{` + ns + `}[$__range]))`},
			{expr: `max by (` + byWorkload + `) (max_over_time(namespace_workload:gpu_allocated:sum{` + ns + `}[$__range]))`},
		}},
		append(workloadCols[:3:3],
			column{field: "Value #A", title: "peak device memory"},
			column{field: "Value #B", title: "p95 device memory"},
			column{field: "Value #C", title: "p95 device activity", unit: unitRatio, thresholds: utilizationThresholds},
			column{field: "Value #D", title: "most GPUs held", unit: unitGPUs}),
		"peak device memory")
	bd.timeseries(panel{title: "Peak device memory per hour by workload", unit: unitBytes, w: 12, min: ptr(0),
		description: "namespace_workload:gpu_device_memory_used_bytes:max_1h: the most memory used on one device in the last hour.",
		queries:     []query{{expr: `namespace_workload:gpu_device_memory_used_bytes:max_1h{` + ns + `}`, legend: legendWorkload}}})
	bd.timeseries(panel{title: "p95 device activity per hour by workload", unit: unitRatio, w: 12, min: ptr(0), max: ptr(1), thresholds: utilizationThresholds,
		description: "namespace_workload:gpu_device_utilization_ratio:p95_1h: the 95th percentile of the busiest device's activity in the last hour.",
		queries:     []query{{expr: `namespace_workload:gpu_device_utilization_ratio:p95_1h{` + ns + `}`, legend: legendWorkload}}})
	return bd.build()
}
