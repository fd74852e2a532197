package dashboards

import (
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// section groups catalog fields under a row of the node dashboard. A
// default field no section names lands in "Other fields", so a new catalog
// row gets a panel without touching this list.
type section struct {
	title  string
	fields []string
}

func nodeSections() []section {
	return []section{
		{"Utilization", []string{
			"gpu_utilization_ratio", "gpu_graphics_engine_active_ratio", "gpu_sm_active_ratio",
			"gpu_sm_occupancy_ratio", "gpu_tensor_active_ratio", "gpu_dram_active_ratio",
			"gpu_fp64_active_ratio", "gpu_fp32_active_ratio", "gpu_fp16_active_ratio",
			"gpu_memory_copy_utilization_ratio", "gpu_encoder_utilization_ratio", "gpu_decoder_utilization_ratio",
		}},
		{"Memory", []string{
			"gpu_memory_used_bytes", "gpu_memory_free_bytes", "gpu_memory_total_bytes", "gpu_memory_reserved_bytes",
		}},
		{"Clocks and throttle reasons", []string{
			"gpu_sm_clock_hertz", "gpu_memory_clock_hertz", "gpu_clock_event_active",
			"gpu_power_violation_seconds_total", "gpu_thermal_violation_seconds_total",
		}},
		{"Temperature and power", []string{
			"gpu_temperature_celsius", "gpu_memory_temperature_celsius",
			"gpu_temperature_slowdown_celsius", "gpu_temperature_shutdown_celsius",
			"gpu_power_watts", "gpu_energy_joules_total", "gpu_power_limit_watts", "gpu_power_enforced_limit_watts",
		}},
		{"Errors: XID, ECC, row remapping", []string{
			"gpu_xid_last_error",
			"gpu_ecc_single_bit_volatile_errors_total", "gpu_ecc_double_bit_volatile_errors_total",
			"gpu_ecc_single_bit_aggregate_errors_total", "gpu_ecc_double_bit_aggregate_errors_total",
			"gpu_retired_pages_single_bit_total", "gpu_retired_pages_double_bit_total", "gpu_retired_pages_pending",
			"gpu_remapped_rows_correctable_total", "gpu_remapped_rows_uncorrectable_total",
			"gpu_row_remap_failure", "gpu_row_remap_pending",
		}},
		{"PCIe and NVLink", []string{
			"gpu_pcie_transmit_bytes_per_second", "gpu_pcie_receive_bytes_per_second", "gpu_pcie_replays_total",
			"gpu_nvlink_transmit_bytes_per_second", "gpu_nvlink_receive_bytes_per_second",
			"gpu_nvlink_bandwidth_kibibytes_total",
		}},
	}
}

// NodeDetail shows one node's GPUs: a time series of every default field of
// the catalog, clocks and throttle reasons, XID and ECC events, and the MIG
// instances.
//
// It opens on one node, and with the rows of catalog fields closed: over a
// large fleet the fields of every GPU would be thousands of series.
func NodeDetail(o Options) (dashboard.Dashboard, error) {
	bd := newBoard(o, NodeDetailUID, "GPU / Node and GPU detail",
		"Every default field of every GPU of the selected node, GPU and exporter health, throttle reasons, XID and memory errors, MIG instances and who holds each GPU.",
		[]cog.Builder[dashboard.VariableModel]{datasourceVar(), clusterVar(), singleNodeVar(), gpuVar()})
	m := sel(mCluster, mNode, mGPU)

	bd.row("GPUs")
	bd.table(panel{title: "GPUs", unit: unitCount,
		description: "The GPUs of the selected nodes.",
		queries:     []query{{expr: `gpu_info{` + m + `}`}}},
		[]column{{field: "node"}, {field: "gpu", title: "GPU"}, {field: "model"}, {field: "uuid", title: "UUID"},
			{field: "pci_bus_id", title: "PCI bus id"}, {field: "driver_version", title: "driver"}},
		"")
	bd.table(panel{title: "Allocations", unit: unitCount,
		description: "Which container holds each GPU or MIG instance (the kubelet's pod-resources view); shared: several containers hold it.",
		queries:     []query{{expr: `gpu_pod_allocation_info{` + m + `}`}}},
		[]column{{field: "node"}, {field: "gpu", title: "GPU"}, {field: "gpu_instance", title: "MIG instance"},
			{field: "mig_profile", title: "profile"}, {field: o.ns(), title: "namespace"}, {field: "pod"}, {field: "container"},
			{field: "shared"}},
		"")
	bd.timeseries(panel{title: "Utilization", unit: unitRatio, min: ptr(0), max: ptr(1), thresholds: utilizationThresholds,
		description: "Utilization of each GPU, and graphics-engine activity of each MIG instance.",
		queries:     []query{{expr: `gpu:gpu_utilization_ratio:max{` + m + `}`, legend: legendGPU}}})
	bd.timeseries(panel{title: "Memory used (share)", unit: unitRatio, min: ptr(0), max: ptr(1), thresholds: memoryThresholds,
		description: "Share of each GPU's memory in use. Frameworks that pre-allocate (TensorFlow, JAX, vLLM) hold most of it by design.",
		queries: []query{{
			expr:   gpuMax() + `(gpu_memory_used_bytes{` + sel(m, `gpu_instance=""`) + `}) / ` + gpuMax() + `(gpu_memory_total_bytes{` + sel(m, `gpu_instance=""`) + `})`,
			legend: legendGPU,
		}}})
	bd.timeseries(panel{title: "Temperature headroom to slowdown", unit: unitCelsius, thresholds: headroomThresholds,
		description: "Degrees left before each GPU slows its clocks: its slowdown temperature (gpu_temperature_slowdown_celsius) minus its temperature. GPUTemperatureHigh fires 5 °C before, GPUTemperatureCritical at 0.",
		queries: []query{{
			expr:   gpuMax() + `(gpu_temperature_slowdown_celsius{` + m + `}) - ` + gpuMax() + `(gpu_temperature_celsius{` + m + `})`,
			legend: legendGPU,
		}}})

	bd.row("GPU health")
	bd.gpuHealth(m)

	catalog := fields.MustNew()
	defaults := catalog.Defaults()
	placed := map[string]bool{}
	for _, s := range nodeSections() {
		var rowFields []fields.Field
		for _, name := range s.fields {
			if f, ok := catalog.Lookup(name); ok && f.Default {
				rowFields = append(rowFields, f)
				placed[f.Name] = true
			}
		}
		if len(rowFields) == 0 {
			continue
		}
		bd.collapsedRow(s.title)
		for _, f := range rowFields {
			bd.timeseries(fieldPanel(f, m))
		}
		if s.title == "Errors: XID, ECC, row remapping" {
			bd.timeseries(panel{title: "XID errors by code", unit: unitCount, steps: true,
				description: "XID errors the exporter counted since it started, by code.",
				queries:     []query{{expr: `gpu_xid_errors_total{` + m + `}`, legend: legendGPU + " XID {{xid}}"}}})
		}
	}
	var other []fields.Field
	for _, f := range defaults {
		if !placed[f.Name] && !f.Fabric { // fabric fields have a row of their own
			other = append(other, f)
		}
	}
	if len(other) > 0 {
		bd.collapsedRow("Other fields")
		for _, f := range other {
			bd.timeseries(fieldPanel(f, m))
		}
	}

	bd.fabric(m)

	bd.collapsedRow("MIG instances")
	bd.table(panel{title: "MIG instances", unit: unitCount,
		description: "The MIG GPU instances of the selected GPUs.",
		queries:     []query{{expr: `gpu_mig_instance_info{` + m + `}`}}},
		[]column{{field: "node"}, {field: "gpu", title: "GPU"}, {field: "gpu_instance", title: "MIG instance"},
			{field: "mig_profile", title: "profile"}, {field: "mig_uuid", title: "MIG UUID"}},
		"")
	bd.timeseries(panel{title: "MIG instance activity", unit: unitRatio, w: 6, min: ptr(0), max: ptr(1), thresholds: utilizationThresholds,
		description: "Graphics-engine activity of each MIG instance: under MIG the GPU's own utilization is not reported.",
		queries:     []query{{expr: `gpu:gpu_utilization_ratio:max{` + sel(m, `gpu_instance!=""`) + `}`, legend: legendMIGInstance}}})
	bd.timeseries(panel{title: "MIG instance memory used", unit: unitRatio, w: 6, min: ptr(0), max: ptr(1), thresholds: memoryThresholds,
		description: "Share of each MIG instance's memory in use.",
		queries: []query{{
			expr:   `gpu:gpu_memory_used_bytes:max{` + sel(m, `gpu_instance!=""`) + `} / gpu:gpu_memory_total_bytes:max{` + sel(m, `gpu_instance!=""`) + `}`,
			legend: legendMIGInstance,
		}}})

	bd.collapsedRow("Exporter")
	bd.exporterHealth(sel(mCluster, mNode))
	return bd.build()
}

// fieldPanel is the time series of one catalog field on the selected GPUs.
// The holders' copies of a series are collapsed (gpuMax: max by the GPU's
// identity) so that a shared GPU draws one line. Counters in seconds or
// joules are shown as rates (throttled share of time, watts); other
// counters as their value, a count since the driver was loaded.
func fieldPanel(f fields.Field, m string) panel {
	p := panel{
		title:       fieldTitle(f),
		description: f.Help + " (" + f.Name + ")",
		unit:        fieldUnit(f),
		thresholds:  fieldThresholds[f.Name],
	}
	series := func(extra string) string {
		s := f.Name + `{` + sel(m, extra) + `}`
		if f.Type == fields.Counter && (f.Unit == "seconds" || f.Unit == "joules" || strings.Contains(f.Name, "kibibytes")) {
			s = `rate(` + s + `[$__rate_interval])`
		}
		if f.Kind == fields.Bitmask {
			return gpuMax("reason") + `(` + s + `)`
		}
		return gpuMax() + `(` + s + `)`
	}
	switch {
	case f.Kind == fields.Bitmask:
		// Only active reasons are drawn: one line per GPU and reason.
		p.queries = []query{{expr: series("") + ` == 1`, legend: legendGPU + " {{reason}}"}}
		p.steps = true
	case f.Levels.Has(fields.LevelGPUInstance):
		p.queries = []query{
			{expr: series(`gpu_instance=""`), legend: legendGPU},
			{expr: series(`gpu_instance!=""`), legend: legendMIGInstance},
		}
	default:
		p.queries = []query{{expr: series(""), legend: legendGPU}}
	}
	if (f.Type == fields.Counter && p.unit == unitCount) || f.Name == "gpu_xid_last_error" || strings.HasSuffix(f.Name, "_pending") || strings.HasSuffix(f.Name, "_failure") {
		p.steps = true
	}
	return p
}

// fieldThresholds colour the fields whose values mean trouble past a
// point: utilization (idle), temperature (the fallback alert thresholds;
// the headroom panel compares with each GPU's own slowdown temperature).
var fieldThresholds = map[string]thresholds{
	"gpu_utilization_ratio":            utilizationThresholds,
	"gpu_graphics_engine_active_ratio": utilizationThresholds,
	"gpu_temperature_celsius":          temperatureThresholds,
}

// fieldUnit maps a catalog unit (and type) to a Grafana unit.
func fieldUnit(f fields.Field) string {
	switch {
	case f.Kind == fields.Bitmask:
		return unitState
	case f.Name == "gpu_xid_last_error":
		return unitCode
	case f.Type == fields.Counter && f.Unit == "seconds":
		return unitRatio // seconds throttled per second
	case f.Type == fields.Counter && f.Unit == "joules":
		return unitWatts
	case strings.Contains(f.Name, "kibibytes"):
		return "KiBs"
	}
	switch f.Unit {
	case "ratio":
		return unitRatio
	case "bytes":
		return unitBytes
	case "bytes_per_second":
		return unitBytesRate
	case "hertz":
		return unitHertz
	case "celsius":
		return unitCelsius
	case "watts":
		return unitWatts
	}
	return unitCount
}

// fieldTitles are the panel titles of the default fields; a field not
// listed is titled by its metric name.
var fieldTitles = map[string]string{
	"gpu_utilization_ratio":                     "GPU utilization",
	"gpu_graphics_engine_active_ratio":          "Graphics engine active",
	"gpu_sm_active_ratio":                       "SM active",
	"gpu_sm_occupancy_ratio":                    "SM occupancy",
	"gpu_tensor_active_ratio":                   "Tensor pipes active",
	"gpu_dram_active_ratio":                     "Memory interface active",
	"gpu_fp64_active_ratio":                     "FP64 pipe active",
	"gpu_fp32_active_ratio":                     "FP32 pipe active",
	"gpu_fp16_active_ratio":                     "FP16 pipe active",
	"gpu_memory_copy_utilization_ratio":         "Memory copy utilization",
	"gpu_encoder_utilization_ratio":             "Video encoder utilization",
	"gpu_decoder_utilization_ratio":             "Video decoder utilization",
	"gpu_memory_used_bytes":                     "Memory used",
	"gpu_memory_free_bytes":                     "Memory free",
	"gpu_memory_total_bytes":                    "Memory total",
	"gpu_sm_clock_hertz":                        "SM clock",
	"gpu_memory_clock_hertz":                    "Memory clock",
	"gpu_clock_event_active":                    "Active clock event (throttle) reasons",
	"gpu_temperature_celsius":                   "GPU temperature",
	"gpu_memory_temperature_celsius":            "Memory temperature",
	"gpu_power_watts":                           "Board power",
	"gpu_energy_joules_total":                   "Power from the energy counter",
	"gpu_power_limit_watts":                     "Power limit",
	"gpu_xid_last_error":                        "Last XID error code",
	"gpu_ecc_single_bit_volatile_errors_total":  "Corrected ECC errors since driver load",
	"gpu_ecc_double_bit_volatile_errors_total":  "Uncorrected ECC errors since driver load",
	"gpu_ecc_single_bit_aggregate_errors_total": "Corrected ECC errors, lifetime",
	"gpu_ecc_double_bit_aggregate_errors_total": "Uncorrected ECC errors, lifetime",
	"gpu_retired_pages_single_bit_total":        "Pages retired (single-bit)",
	"gpu_retired_pages_double_bit_total":        "Pages retired (double-bit)",
	"gpu_retired_pages_pending":                 "Pages pending retirement",
	"gpu_remapped_rows_correctable_total":       "Rows remapped (correctable)",
	"gpu_remapped_rows_uncorrectable_total":     "Rows remapped (uncorrectable)",
	"gpu_row_remap_failure":                     "Row remapping failed",
	"gpu_row_remap_pending":                     "Row remapping pending",
	"gpu_pcie_transmit_bytes_per_second":        "PCIe transmit",
	"gpu_pcie_receive_bytes_per_second":         "PCIe receive",
	"gpu_pcie_replays_total":                    "PCIe replays since driver load",
	"gpu_nvlink_transmit_bytes_per_second":      "NVLink transmit",
	"gpu_nvlink_receive_bytes_per_second":       "NVLink receive",
}

func fieldTitle(f fields.Field) string {
	if t, ok := fieldTitles[f.Name]; ok {
		return t
	}
	return f.Name
}
