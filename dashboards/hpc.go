package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// mHPCUser selects HPC job series by the job's user.
const mHPCUser = `hpc_user=~"$hpc_user"`

// hpcUserVar chooses users of HPC jobs (--hpc.job-mapping-dir). Its All
// (.*) also matches jobs whose mapping file names no user.
func hpcUserVar() cog.Builder[dashboard.VariableModel] {
	return queryVar("hpc_user", "HPC user", `label_values(hpc_job:gpu_allocated:sum{`+mCluster+`}, hpc_user)`)
}

// hpcRows adds the HPC view of the workloads dashboard: what Slurm (or
// another scheduler writing the job-mapping directory) jobs and their
// users do with their GPUs, from the hpc_job:* and hpc_user:* recording
// rules. It is the Kubernetes rows' counterpart, with hpc_job and hpc_user
// in place of namespace and pod; closed by default, as most clusters run
// one kind of scheduler.
func hpcRows(bd *board) {
	jobs := sel(mCluster, mHPCUser)
	nodes := sel(mCluster, mNode, mHPCUser, `hpc_job!=""`)
	legendJob := "{{hpc_job}} ({{hpc_user}})"

	bd.collapsedRow("HPC jobs (job-mapping directory)")
	bd.stat(panel{title: "GPUs allocated to jobs", unit: unitGPUs, decimals: ptr(1), w: 8,
		description: "GPU equivalents the selected users' HPC jobs hold now; a GPU shared by two jobs counts half to each.",
		queries:     []query{{expr: `sum(hpc_job:gpu_allocated:sum{` + jobs + `})`}}})
	bd.stat(panel{title: "GPU-hours unused by jobs", unit: unitGPUHours, decimals: ptr(1), w: 8,
		description: "GPU-hours the jobs held but did not use over the time range: allocated x (1 - utilization).",
		queries:     []query{{expr: `sum(` + gpuHours(`hpc_job:gpu_allocated_unused:sum{`+jobs+`}`) + `)`}}})
	bd.stat(panel{title: "Utilization of GPUs held by jobs", unit: unitRatio, decimals: ptr(1), w: 8, thresholds: utilizationThresholds,
		description: "Average utilization of what the selected users' jobs hold, weighted by what each holds.",
		queries: []query{{expr: `sum(hpc_user:gpu_utilization_ratio:avg{` + jobs + `} * hpc_user:gpu_allocated:sum{` + jobs + `})
/
sum(hpc_user:gpu_allocated:sum{` + jobs + `} and hpc_user:gpu_utilization_ratio:avg{` + jobs + `})`}}})
	bd.timeseries(panel{title: "GPUs allocated by user", unit: unitGPUs, w: 12, steps: true, min: ptr(0),
		description: "GPU equivalents each user's jobs hold.",
		queries:     []query{{expr: `hpc_user:gpu_allocated:sum{` + jobs + `}`, legend: "{{hpc_user}}"}}})
	bd.timeseries(panel{title: "GPU utilization by user", unit: unitRatio, w: 12, min: ptr(0), max: ptr(1), thresholds: utilizationThresholds,
		description: "Utilization of what each user's jobs hold.",
		queries:     []query{{expr: `hpc_user:gpu_utilization_ratio:avg{` + jobs + `}`, legend: "{{hpc_user}}"}}})
	bd.timeseries(panel{title: "GPUs allocated by job", unit: unitGPUs, w: 12, steps: true, min: ptr(0),
		description: "GPU equivalents each job holds, over every node it runs on.",
		queries:     []query{{expr: `hpc_job:gpu_allocated:sum{` + jobs + `}`, legend: legendJob}}})
	bd.timeseries(panel{title: "GPU utilization by job", unit: unitRatio, w: 12, min: ptr(0), max: ptr(1), thresholds: utilizationThresholds,
		description: "Utilization of what each job holds.",
		queries:     []query{{expr: `hpc_job:gpu_utilization_ratio:avg{` + jobs + `}`, legend: legendJob}}})
	bd.timeseries(panel{title: "GPU memory used by job", unit: unitBytes, w: 12, min: ptr(0),
		description: "GPU memory used per job; a shared GPU's memory is split evenly between its jobs.",
		queries:     []query{{expr: `hpc_job:gpu_memory_used_bytes:sum{` + jobs + `}`, legend: legendJob}}})
	bd.timeseries(panel{title: "GPU power by job", unit: unitWatts, w: 12, min: ptr(0),
		description: "Board power charged to each job by the share of each GPU it holds.",
		queries:     []query{{expr: `hpc_job:gpu_power_watts:sum{` + jobs + `}`, legend: legendJob}}})
	bd.table(panel{title: "Jobs holding idle GPUs", unit: unitRatio, w: 12, h: 9,
		description: "GPUs and MIG instances held by an HPC job whose utilization averaged under 5% over the dashboard's time range (the GPUJobAllocatedButIdle condition, without its `for`).",
		queries: []query{{expr: `avg_over_time(gpu_utilization_ratio{` + nodes + `}[$__range]) < 0.05
or
avg_over_time(gpu_graphics_engine_active_ratio{` + sel(nodes, `gpu_instance!=""`) + `}[$__range]) < 0.05`}}},
		[]column{{field: "hpc_job", title: "job"}, {field: "hpc_user", title: "user"}, {field: "hpc_partition", title: "partition"},
			{field: "node", link: detailLink("GPUs of this node", "node", "")},
			{field: "gpu", title: "GPU", link: detailLink("This GPU", "node", "GPU")},
			{field: "gpu_instance", title: "MIG instance"}, {field: "Value", title: "utilization", thresholds: utilizationThresholds}},
		"")
	bd.table(panel{title: "Waste by job", unit: unitGPUHours, w: 12, h: 9, decimals: ptr(2),
		description: "Over the dashboard's time range, per job: GPU-hours held, GPU-hours held but unused, average utilization.",
		queries: []query{
			{expr: `sum by (hpc_job, hpc_user, hpc_partition) (` + gpuHours(`hpc_job:gpu_allocated:sum{`+jobs+`}`) + `)`},
			{expr: `sum by (hpc_job, hpc_user, hpc_partition) (` + gpuHours(`hpc_job:gpu_allocated_unused:sum{`+jobs+`}`) + `)`},
			{expr: `avg by (hpc_job, hpc_user, hpc_partition) (avg_over_time(hpc_job:gpu_utilization_ratio:avg{` + jobs + `}[$__range]))`},
		}},
		[]column{{field: "hpc_job", title: "job"}, {field: "hpc_user", title: "user"}, {field: "hpc_partition", title: "partition"},
			{field: "Value #A", title: "GPU-hours allocated"},
			{field: "Value #B", title: "GPU-hours unused"},
			{field: "Value #C", title: "utilization", unit: unitRatio, thresholds: utilizationThresholds}},
		"GPU-hours unused")
}
