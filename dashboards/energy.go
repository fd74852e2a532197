package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// unitKWh is Grafana's kilowatt-hour unit.
const unitKWh = "kwatth"

// priceVar is the price of a kilowatt-hour the cost columns multiply
// energy by, in whatever currency the user types it in.
func priceVar() cog.Builder[dashboard.VariableModel] {
	return dashboard.NewTextBoxVariableBuilder("price").
		Label("Price per kWh").
		Description("Price of one kilowatt-hour, for the energy cost columns (in your currency).").
		DefaultValue(dashboard.StringOrMap{String: cog.ToPtr("0.15")}).
		Current(dashboard.VariableOption{Text: dashboard.StringOrArrayOfString{String: cog.ToPtr("0.15")}, Value: dashboard.StringOrArrayOfString{String: cog.ToPtr("0.15")}})
}

// kWhOverRange turns a series in watts into kilowatt-hours over the
// dashboard's time range: its mean times the range's seconds, over
// 3.6e6 joules a kWh.
func kWhOverRange(watts string) string {
	return `avg_over_time(` + watts + `[$__range]) * $__range_s / 3.6e6`
}

// energyRows adds energy and cost per namespace and workload from process
// accounting (the gpu-exporter.energy.rules and workload energy rule:
// each container's SM share of its GPU's energy counter; docs/shared-gpus.md
// "Energy per container"), the shares MPS and HAMi give containers against
// what they use, and the orphan processes holding GPUs for nobody.
func energyRows(bd *board, o Options, legendNamespace, legendWorkload string) {
	nsLabel := o.ns()
	ns := sel(mCluster, o.mNamespace())
	pods := sel(mCluster, mNode, o.mNamespace(), mPod)

	bd.collapsedRow("Energy and cost (process accounting)")
	bd.timeseries(panel{title: "GPU energy by namespace", unit: unitWatts, w: 12, min: ptr(0),
		description: "Power drawn for each namespace's containers: their SM share of each GPU's energy counter, over 5 minutes. The idle line is the energy of time no process was on the SMs, charged to nobody. Empty without --collect.processes.",
		queries: []query{
			{expr: `namespace:gpu_container_energy_joules:rate5m{` + ns + `}`, legend: legendNamespace},
			{expr: `sum(node:gpu_idle_energy_joules:rate5m{` + sel(mCluster, mNode) + `})`, legend: "idle"},
		}})
	bd.timeseries(panel{title: "GPU energy by workload", unit: unitWatts, w: 12, min: ptr(0),
		description: "The same per workload (gpu_workload_info, --kubernetes.workload-info).",
		queries:     []query{{expr: `workload:gpu_container_energy_joules:rate5m{` + ns + `}`, legend: legendWorkload}}})
	bd.table(panel{title: "Energy and cost by namespace", unit: unitKWh, w: 12, h: 8, decimals: ptr(2),
		description: "Over the dashboard's time range: energy charged to each namespace's containers, and its cost at the Price per kWh variable.",
		queries: []query{
			{expr: `sum by (` + nsLabel + `) (` + kWhOverRange(`namespace:gpu_container_energy_joules:rate5m{`+ns+`}`) + `)`},
			{expr: `sum by (` + nsLabel + `) (` + kWhOverRange(`namespace:gpu_container_energy_joules:rate5m{`+ns+`}`) + `) * $price`},
		}},
		[]column{{field: nsLabel, title: "namespace"},
			{field: "Value #A", title: "energy"},
			{field: "Value #B", title: "cost", unit: unitCount}},
		"energy")
	bd.table(panel{title: "Energy and cost by workload", unit: unitKWh, w: 12, h: 8, decimals: ptr(2),
		description: "Over the dashboard's time range: energy charged to each workload's containers, and its cost at the Price per kWh variable.",
		queries: []query{
			{expr: `sum by (` + nsLabel + `, workload_kind, workload_name) (` + kWhOverRange(`workload:gpu_container_energy_joules:rate5m{`+ns+`}`) + `)`},
			{expr: `sum by (` + nsLabel + `, workload_kind, workload_name) (` + kWhOverRange(`workload:gpu_container_energy_joules:rate5m{`+ns+`}`) + `) * $price`},
		}},
		[]column{{field: nsLabel, title: "namespace"}, {field: "workload_kind", title: "kind"}, {field: "workload_name", title: "workload"},
			{field: "Value #A", title: "energy"},
			{field: "Value #B", title: "cost", unit: unitCount}},
		"energy")

	legendContainer := legendNamespace + "/{{pod}}/{{container}} " + legendGPU
	bd.collapsedRow("Shares given versus used")
	bd.timeseries(panel{title: "SM share used by container", unit: unitRatio, w: 12, min: ptr(0),
		description: "What each container uses of the SM share its sharing mechanism gave it (MPS active thread percentage, HAMi-core SM limit; else the m of N replicas it holds of a GPU the NVIDIA device plugin shares, mechanism=replicas): 1 = all of it. MPS clients can exceed 1: the thread percentage caps parallelism, not time; a time-sliced replica is not capped at all. Only containers with a limit or replicas have series.",
		queries:     []query{{expr: `gpu_container:gpu_sm_share_used:ratio{` + pods + `}`, legend: legendContainer}}})
	bd.timeseries(panel{title: "Memory share used by container", unit: unitRatio, w: 12, min: ptr(0),
		description: "Device memory each container's processes use over the limit its sharing mechanism set (MPS pinned device memory limit, HAMi-core device memory limit) or the memory share KAI Scheduler scheduled for it (GPU_PORTION, not enforced: above 1 it uses memory other pods on the GPU were promised).",
		queries:     []query{{expr: `gpu_container:gpu_memory_share_used:ratio{` + pods + `}`, legend: legendContainer}}})

	gpus := sel(mCluster, mNode)
	bd.collapsedRow("Orphan processes")
	bd.timeseries(panel{title: "Orphan processes by GPU", unit: unitCount, w: 12, steps: true, min: ptr(0),
		description: "GPU processes that belong to no running pod: pod_gone (the cgroup of a pod the Kubernetes API no longer knows), host (a compute process outside every pod). Display servers are not counted. GPUOrphanProcesses fires on these.",
		queries:     []query{{expr: `gpu_orphan_processes{` + gpus + `} > 0`, legend: legendGPU + " {{reason}}"}}})
	bd.timeseries(panel{title: "Orphan processes' memory by GPU", unit: unitBytes, w: 12, min: ptr(0),
		description: "Device memory the orphan processes hold, which the scheduler counts as free.",
		queries:     []query{{expr: `gpu_orphan_memory_used_bytes{` + gpus + `} > 0`, legend: legendGPU + " {{reason}}"}}})
}
