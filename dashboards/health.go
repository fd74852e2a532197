package dashboards

// Colours of thresholds, Grafana's named colours.
const (
	colorOK   = "green"
	colorWarn = "orange"
	colorBad  = "red"
	colorIdle = "blue"
)

// Thresholds of the panels whose colour carries meaning. They follow the
// alert rules' defaults (rules/alerts.src.yaml, the chart's
// prometheusRule.thresholds).
var (
	// utilizationThresholds: under the idle alert's 5% a held GPU counts
	// as idle.
	utilizationThresholds = thresholds{{color: colorIdle}, {0.05, colorOK}}
	// idleThresholds colour the idle share of GPU-hours, as
	// GPUWorkloadMostlyIdle judges it (0.8 by default).
	idleThresholds = thresholds{{color: colorOK}, {0.5, colorWarn}, {0.8, colorBad}}
	// memoryThresholds: frameworks that pre-allocate (TensorFlow, JAX,
	// vLLM) sit near full, so only the last few percent are marked.
	memoryThresholds = thresholds{{color: colorOK}, {0.95, colorWarn}, {0.99, colorBad}}
	// temperatureThresholds are the fallback alert thresholds, for GPUs
	// that report no slowdown temperature (temperatureHighCelsius,
	// temperatureCriticalCelsius).
	temperatureThresholds = thresholds{{color: colorOK}, {85, colorWarn}, {90, colorBad}}
	// headroomThresholds colour the distance to the GPU's own slowdown
	// temperature (gpu_temperature_slowdown_celsius): GPUTemperatureHigh
	// fires 5 °C below it (temperatureSlowdownMarginCelsius) and
	// GPUTemperatureCritical at it.
	headroomThresholds = thresholds{{color: colorBad}, {0.001, colorWarn}, {5, colorOK}}
	// problemThresholds colour any count of problems above zero.
	problemThresholds = thresholds{{color: colorOK}, {1, colorBad}}
	// warningThresholds colour a count of warnings above zero.
	warningThresholds = thresholds{{color: colorOK}, {1, colorWarn}}
	// upThresholds colour a 0/1 up metric.
	upThresholds = thresholds{{color: colorBad}, {1, colorOK}}
	// healthThresholds colour gpu_health_status: 1 warning, 2 failure.
	healthThresholds = thresholds{{color: colorOK}, {1, colorWarn}, {2, colorBad}}
	// collectionAgeThresholds colour the seconds since an exporter's last
	// good collection: a few intervals is normal, minutes is not.
	collectionAgeThresholds = thresholds{{color: colorOK}, {60, colorWarn}, {300, colorBad}}
)

// gpuKey are the labels that name one GPU across the fleet.
const gpuKey = "cluster, node, gpu, uuid"

// orZero makes a per-GPU expression return 0 for every GPU it has no
// series for, so that a table row exists for each GPU and a query over a
// family that is absent while nothing is wrong (health status, lost GPUs)
// still returns data.
func orZero(expr, matchers string) string {
	return expr + ` or max by (` + gpuKey + `) (gpu_info{` + matchers + `}) * 0`
}

// exporterHealth adds the exporters' own health: is the GPU source up, is
// the kubelet reachable, how old is the last good collection, collection
// errors, and how many GPUs each exporter sees.
func (bd *board) exporterHealth(m string) {
	bd.stat(panel{title: "GPU sources down", unit: unitCount, w: 6, thresholds: problemThresholds,
		description: "Exporters whose last collection from DCGM, NVML or the simulator failed (gpu_exporter_source_up 0): their GPU series are gone until it recovers.",
		queries:     []query{{expr: `count(gpu_exporter_source_up{` + m + `} == 0) or vector(0)`}}})
	bd.stat(panel{title: "Kubelet links down", unit: unitCount, w: 6, thresholds: problemThresholds,
		description: "Exporters whose last pod-resources List failed (gpu_exporter_podresources_up 0): their GPU series lose the namespace and pod labels.",
		queries:     []query{{expr: `count(gpu_exporter_podresources_up{` + m + `} == 0) or vector(0)`}}})
	bd.stat(panel{title: "Oldest collection", unit: "s", w: 6, decimals: ptr(0), thresholds: collectionAgeThresholds,
		description: "Seconds since the last good collection of the exporter that collected least recently (gpu_exporter_last_collection_timestamp_seconds).",
		queries:     []query{{expr: `max(time() - gpu_exporter_last_collection_timestamp_seconds{` + m + `})`}}})
	bd.stat(panel{title: "GPUs seen by the exporters", unit: unitCount, w: 6,
		description: "Physical GPUs in the exporters' inventories (gpu_exporter_gpus{kind=\"gpu\"}); compare with the GPUs the nodes should have.",
		queries:     []query{{expr: `sum(gpu_exporter_gpus{` + sel(`kind="gpu"`, m) + `})`}}})
	bd.table(panel{title: "Exporters", unit: unitCount, w: 12, h: 8,
		description: "One line per exporter: source and kubelet link up, GPUs seen, seconds since the last good collection, collection errors over the time range, and whether per-container process accounting works (1; 0 without NVML on the node; empty where it is off or has not run). A node links to its detail dashboard.",
		queries: []query{
			{expr: `max by (cluster, node) (gpu_exporter_source_up{` + m + `})`},
			{expr: `max by (cluster, node) (gpu_exporter_podresources_up{` + m + `})`},
			{expr: `max by (cluster, node) (gpu_exporter_gpus{` + sel(`kind="gpu"`, m) + `})`},
			{expr: `max by (cluster, node) (time() - gpu_exporter_last_collection_timestamp_seconds{` + m + `})`},
			{expr: `sum by (cluster, node) (increase(gpu_exporter_collection_errors_total{` + m + `}[$__range]))`},
			{expr: `max by (cluster, node) (gpu_exporter_process_accounting_available{` + m + `})`},
		}},
		[]column{
			{field: "node", link: detailLink("GPUs of this node", "node", "")},
			{field: "Value #A", title: "source up", thresholds: upThresholds},
			{field: "Value #B", title: "kubelet up", thresholds: upThresholds},
			{field: "Value #C", title: "GPUs"},
			{field: "Value #D", title: "last collection", unit: "s", thresholds: collectionAgeThresholds},
			{field: "Value #E", title: "collection errors", thresholds: warningThresholds},
			{field: "Value #F", title: "process accounting", thresholds: upThresholds},
		},
		"collection errors")
	bd.timeseries(panel{title: "Collection errors", unit: unitPerSecond, w: 12, steps: true,
		description: "Failed collections per second by exporter and stage: watch, read, timeout; failed health checks (health), process accounting reads once NVML works (processes; never while gpu_exporter_process_accounting_available is 0) and NVLink fabric reads (fabric: the collection goes on).",
		queries: []query{{
			expr:   `sum by (cluster, node, stage) (rate(gpu_exporter_collection_errors_total{` + m + `}[$__rate_interval]))`,
			legend: legendNode + " {{stage}}",
		}}})
}

// gpuHealth adds the GPUs' health: lost GPUs, DCGM health watches, the
// recovery action the driver asks for, XIDs, ECC errors and row
// remapping, with a table of every GPU.
func (bd *board) gpuHealth(m string) {
	bd.stat(panel{title: "GPUs lost", unit: unitCount, w: 4, thresholds: problemThresholds,
		description: "GPUs that left the inventory (fell off the bus, lost, inaccessible) and have not come back (gpu_lost_since_timestamp_seconds).",
		queries:     []query{{expr: `count(max by (` + gpuKey + `) (gpu_lost_since_timestamp_seconds{` + m + `})) or vector(0)`}}})
	bd.stat(panel{title: "Failing health checks", unit: unitCount, w: 4, thresholds: problemThresholds,
		description: "GPUs a DCGM health watch reports as failed (gpu_health_status 2).",
		queries:     []query{{expr: `count(max by (` + gpuKey + `) (gpu_health_status{` + m + `}) >= 2) or vector(0)`}}})
	bd.stat(panel{title: "Health warnings", unit: unitCount, w: 4, thresholds: warningThresholds,
		description: "GPUs a DCGM health watch warns about (gpu_health_status 1).",
		queries:     []query{{expr: `count(max by (` + gpuKey + `) (gpu_health_status{` + m + `}) == 1) or vector(0)`}}})
	bd.stat(panel{title: "Recovery needed", unit: unitCount, w: 4, thresholds: problemThresholds,
		description: "GPUs whose driver asks for a recovery action: reset, reboot or drain (gpu_recovery_action above 0).",
		queries:     []query{{expr: `count(max by (` + gpuKey + `) (gpu_recovery_action{` + m + `}) > 0) or vector(0)`}}})
	bd.stat(panel{title: "GPUs with memory errors", unit: unitCount, w: 4, thresholds: problemThresholds,
		description: "GPUs with uncorrectable ECC errors since the driver loaded, or a failed row remapping.",
		queries: []query{{expr: `count(
  max by (` + gpuKey + `) (gpu_ecc_double_bit_volatile_errors_total{` + m + `}) > 0
  or
  max by (` + gpuKey + `) (gpu_row_remap_failure{` + m + `}) > 0
) or vector(0)`}}})
	bd.stat(panel{title: "XID errors", unit: unitCount, w: 4, decimals: ptr(0), thresholds: warningThresholds,
		description: "XID errors the exporters counted over the time range.",
		queries:     []query{{expr: `sum(increase(gpu_xid_errors_total{` + m + `}[$__range])) or vector(0)`}}})
	bd.table(panel{title: "GPU health", unit: unitCount, w: 24, h: 9, decimals: ptr(0),
		description: "Every GPU, by health: lost, DCGM health (1 warning, 2 failure), the driver's recovery action (0 none, 1 reset, 2 node reboot, ...), XID errors over the time range, uncorrectable ECC errors since driver load, failed row remapping. Node and GPU link to the detail dashboard.",
		queries: []query{
			{expr: orZero(`max by (`+gpuKey+`) (gpu_lost_since_timestamp_seconds{`+m+`} > bool 0)`, m)},
			{expr: orZero(`max by (`+gpuKey+`) (gpu_health_status{`+m+`})`, m)},
			{expr: orZero(`max by (`+gpuKey+`) (gpu_recovery_action{`+m+`})`, m)},
			{expr: orZero(`sum by (`+gpuKey+`) (increase(gpu_xid_errors_total{`+m+`}[$__range]))`, m)},
			{expr: orZero(`max by (`+gpuKey+`) (gpu_ecc_double_bit_volatile_errors_total{`+m+`})`, m)},
			{expr: orZero(`max by (`+gpuKey+`) (gpu_row_remap_failure{`+m+`})`, m)},
		}},
		[]column{
			{field: "node", link: detailLink("GPUs of this node", "node", "")},
			{field: "gpu", title: "GPU", link: detailLink("This GPU", "node", "GPU")},
			{field: "uuid", title: "UUID"},
			{field: "Value #A", title: "lost", thresholds: problemThresholds},
			{field: "Value #B", title: "health", thresholds: healthThresholds},
			{field: "Value #C", title: "recovery action", thresholds: problemThresholds},
			{field: "Value #D", title: "XID errors", thresholds: warningThresholds},
			{field: "Value #E", title: "uncorrectable ECC", thresholds: problemThresholds},
			{field: "Value #F", title: "row remap failed", thresholds: problemThresholds},
		},
		"health")
}
