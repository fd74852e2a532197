package exposition

import (
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Labels of DCGM_EXP_GPU_HEALTH_STATUS (dcgm-exporter's
// internal/pkg/collector/gpu_health_collector.go, tag 4.5.3-4.8.2).
const (
	healthWatchLabel = "health_watch"
	healthErrorLabel = "health_error_code"
)

// dcgmHealthWatches are the health watches dcgm-exporter writes a series
// for, in its order (gpuHealthChecks, gpu_health_collector.go), each with
// the subsystem name the sources give its incidents. ALL carries the
// incidents DCGM reports under DCGM_HEALTH_WATCH_ALL (XIDs such as 79 and
// 95, per dcgm-exporter's comment there); other watches' incidents
// (NVSwitch, ConnectX) are not written, as there.
var dcgmHealthWatches = [...]struct{ watch, subsystem string }{
	{"PCIE", "pcie"}, {"NVLINK", "nvlink"}, {"PMU", "pmu"}, {"MCU", "mcu"},
	{"MEM", "memory"}, {"SM", "sm"}, {"INFOROM", "inforom"}, {"THERMAL", "thermal"},
	{"POWER", "power"}, {"DRIVER", "driver"}, {"ALL", "all"},
}

// dcgmHealthValue is DCGM's dcgmHealthWatchResults_t for a status
// (dcgm_structs.h: DCGM_HEALTH_RESULT_PASS 0, _WARN 10, _FAIL 20), the value
// dcgm-exporter writes.
func dcgmHealthValue(s source.HealthStatus) int {
	switch s {
	case source.HealthWarn:
		return 10
	case source.HealthFail:
		return 20
	}
	return 0
}

// gpuHealthStatusFamily is DCGM_EXP_GPU_HEALTH_STATUS; the counters file
// row that turns it on gives its header (pageWriter.gpuHealth).
var gpuHealthStatusFamily = Family{
	Name: fields.GPUHealthStatusName, Type: fields.Gauge, Naming: NamingDCGM, FromCounters: true,
	Help: "Per GPU (never per MIG instance) and DCGM health watch (`PCIE`, `NVLINK`, `PMU`, `MCU`, `MEM`, `SM`, `INFOROM`, `THERMAL`, `POWER`, `DRIVER`, `ALL`), " +
		"DCGM's result: 0 pass, 10 warning, 20 failure; `" + healthErrorLabel + "` is `DCGM_FR_OK` or the `DCGM_FR_*` name of the last incident's code. " +
		"Absent while the health check fails.",
	Labels: []string{EntityLabels, healthErrorLabel, healthWatchLabel, HolderLabels},
	render: func(p *pageWriter, in Input, _ family) {
		if p.gpuHealth != nil {
			p.renderGPUHealthStatus(in, p.gpuHealth)
		}
	},
}

// renderGPUHealthStatus writes DCGM_EXP_GPU_HEALTH_STATUS as dcgm-exporter
// does: for every holding on a GPU entity (dcgm-exporter's health group
// holds GPUs only, so never a MIG instance), one series per watch of
// dcgmHealthWatches; a watch without incident passes with DCGM_FR_OK, and
// of several incidents of one GPU and watch the last one wins
// (applyGPUHealthIncidents). in.Health nil means no health check result
// (the check failed): the family is left out, as dcgm-exporter's collector
// returns an error then.
func (p *pageWriter) renderGPUHealthStatus(in Input, f *ExporterFamily) {
	if in.Health == nil {
		return
	}
	fam := family{name: f.Name, help: f.Help, typ: f.Type}
	for i, e := range gpuHoldings(in) {
		for _, w := range dcgmHealthWatches {
			code, value := fields.HealthErrorName(0), 0
			for _, h := range in.Health {
				if h.GPU == e.GPU && h.Subsystem == w.subsystem {
					code, value = fields.HealthErrorName(h.Code), dcgmHealthValue(h.Status)
				}
			}
			// dcgm-exporter sorts these labels by name: health_error_code
			// before health_watch.
			p.intSeries(&fam, i, healthErrorLabel, code, healthWatchLabel, w.watch, int64(value))
		}
	}
}
