package dashboards

import "github.com/gpu-exporter/gpu-exporter/pkg/fields"

// legendSwitch names an NVSwitch series; legendLink one link of a GPU.
const (
	legendSwitch = "{{node}} NVSwitch {{nvswitch}}"
	legendLink   = "{{node}} GPU {{gpu}} link {{link}}"
)

// fabric adds the NVLink and NVSwitch row of the node dashboard: links
// down, per-link traffic and errors, the topology, the switches' health
// and the fabric manager. m selects the GPUs; switches are selected by
// node only (they belong to no GPU).
func (bd *board) fabric(m string) {
	sw := sel(mCluster, mNode)
	// max, not sum: a shared GPU repeats its links once per holder.
	perLink := func(name string) string {
		return gpuMax() + `(rate(` + name + `{` + sel(m, `link!=""`) + `}[$__rate_interval]))`
	}
	perSwitch := func(expr string) string { return `sum by (node, nvswitch) (` + expr + `)` }

	bd.collapsedRow("NVLink and NVSwitch fabric")
	bd.timeseries(panel{title: "NVLinks down", unit: unitCount, steps: true, min: ptr(0),
		thresholds:  thresholds{{0, "green"}, {1, "red"}},
		description: "Links of each GPU that are expected up and are not (gpu_nvlink_up 0). GPUNVLinkDown fires on any.",
		queries:     []query{{expr: `sum by (node, gpu) (1 - gpu_nvlink_up{` + m + `})`, legend: legendGPU}}})
	bd.heatmap(panel{title: "NVLink traffic per link", unit: unitBytesRate,
		description: "Distribution of the links' traffic (transmitted plus received): on a training node the links of a job move together, so a link far below the others is degraded or down.",
		queries:     []query{{expr: perLink("gpu_nvlink_transmit_bytes_total") + ` + ` + perLink("gpu_nvlink_receive_bytes_total"), legend: legendLink}}},
		"1e9")
	bd.timeseries(panel{title: "NVLink errors, worst links", unit: unitPerSecond,
		description: "The ten links with the highest rate of CRC (flit and data), replay and recovery errors over 5 minutes (link:gpu_nvlink_errors:rate5m). GPUNVLinkErrorsRising fires when a link keeps erring.",
		queries: []query{{
			expr:   `topk(10, sum by (node, gpu, link) (link:gpu_nvlink_errors:rate5m{` + m + `}))`,
			legend: legendLink,
		}}})
	// Each fabric field of a GPU, summed over its links by DCGM.
	catalog := fields.MustNew()
	for _, name := range []string{
		"gpu_nvlink_transmit_bytes_total", "gpu_nvlink_receive_bytes_total",
		"gpu_nvlink_crc_flit_errors_total", "gpu_nvlink_crc_data_errors_total",
		"gpu_nvlink_replay_errors_total", "gpu_nvlink_recovery_errors_total",
	} {
		f, ok := catalog.Lookup(name)
		if !ok {
			continue
		}
		expr := `rate(` + f.Name + `{` + sel(m, `link=""`) + `}[$__rate_interval])`
		unit := unitPerSecond
		if f.Unit == "bytes" {
			unit = unitBytesRate
		}
		bd.timeseries(panel{title: fieldTitle(f) + " (per GPU)", unit: unit,
			description: f.Help + " Rate over all links of each GPU. (" + f.Name + ")",
			queries:     []query{{expr: gpuMax() + `(` + expr + `)`, legend: legendGPU}}})
	}
	bd.timeseries(panel{title: "Fabric manager status", unit: unitCode, steps: true,
		description: "Fabric manager state for each GPU: 3 success; 1 not started, 2 in progress, 4 failure. GPUFabricManagerNotReady fires when it is not 3.",
		queries:     []query{{expr: gpuMax() + `(gpu_fabric_manager_status{` + m + `})`, legend: legendGPU}}})
	bd.timeseries(panel{title: "Fabric manager error code", unit: unitCode, steps: true,
		description: "Error the fabric manager reported for each GPU (0: none). (gpu_fabric_manager_error_code)",
		queries:     []query{{expr: gpuMax() + `(gpu_fabric_manager_error_code{` + m + `})`, legend: legendGPU}}})
	bd.table(panel{title: "NVLink topology", unit: unitCount,
		description: "The far end of each link of the selected GPUs: a GPU (peer is its index) or an NVSwitch (peer is its id).",
		queries:     []query{{expr: `gpu_nvlink_peer_info{` + m + `}`}}},
		[]column{{field: "node"}, {field: "gpu", title: "GPU"}, {field: "link"}, {field: "peer_type", title: "peer type"}, {field: "peer"}},
		"")

	bd.table(panel{title: "NVSwitches", unit: unitCount,
		description: "The NVSwitches of the selected nodes.",
		queries:     []query{{expr: `nvswitch_info{` + sw + `}`}}},
		[]column{{field: "node"}, {field: "nvswitch", title: "NVSwitch"}, {field: "uuid", title: "UUID"}, {field: "pci_bus_id", title: "PCI bus id"}},
		"")
	bd.timeseries(panel{title: "NVSwitch temperature", unit: unitCelsius,
		description: "Temperature of each NVSwitch. (nvswitch_temperature_celsius)",
		queries:     []query{{expr: `nvswitch_temperature_celsius{` + sw + `}`, legend: legendSwitch}}})
	bd.timeseries(panel{title: "NVSwitch throughput", unit: unitBytesRate,
		description: "Data each NVSwitch transmitted and received, per second. (nvswitch_transmit_bytes_total, nvswitch_receive_bytes_total)",
		queries: []query{
			{expr: `rate(nvswitch_transmit_bytes_total{` + sw + `}[$__rate_interval])`, legend: legendSwitch + " tx"},
			{expr: `rate(nvswitch_receive_bytes_total{` + sw + `}[$__rate_interval])`, legend: legendSwitch + " rx"},
		}})
	bd.timeseries(panel{title: "NVSwitch port traffic", unit: unitBytesRate,
		description: "Data all ports of each NVSwitch transmitted and received, per second. (nvswitch_link_transmit_bytes_total, nvswitch_link_receive_bytes_total)",
		queries: []query{
			{expr: perSwitch(`rate(nvswitch_link_transmit_bytes_total{` + sw + `}[$__rate_interval])`), legend: legendSwitch + " tx"},
			{expr: perSwitch(`rate(nvswitch_link_receive_bytes_total{` + sw + `}[$__rate_interval])`), legend: legendSwitch + " rx"},
		}})
	bd.timeseries(panel{title: "NVSwitch errors", unit: unitCount, steps: true,
		description: "Fatal and non-fatal errors of all ports of each NVSwitch since the driver was loaded. NVSwitchFatalError fires on any fatal one.",
		queries: []query{
			{expr: perSwitch(`nvswitch_link_fatal_errors_total{` + sw + `}`), legend: legendSwitch + " fatal"},
			{expr: perSwitch(`nvswitch_link_non_fatal_errors_total{` + sw + `}`), legend: legendSwitch + " non-fatal"},
		}})
	bd.timeseries(panel{title: "NVSwitch last SXid", unit: unitCode, steps: true,
		description: "SXid of the last fatal and non-fatal error each NVSwitch reported (0: none). (nvswitch_fatal_error_last_sxid, nvswitch_non_fatal_error_last_sxid)",
		queries: []query{
			{expr: `nvswitch_fatal_error_last_sxid{` + sw + `}`, legend: legendSwitch + " fatal"},
			{expr: `nvswitch_non_fatal_error_last_sxid{` + sw + `}`, legend: legendSwitch + " non-fatal"},
		}})
	bd.timeseries(panel{title: "NVSwitch ports active", unit: unitCount, steps: true,
		description: "Ports of each NVSwitch in the active state (nvswitch_link_status 2).",
		queries:     []query{{expr: perSwitch(`nvswitch_link_status{` + sw + `} == bool 2`), legend: legendSwitch}}})
}
