package dcgm

import (
	"context"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// HealthStatus is a DCGM health-watch result.
type HealthStatus int

// Health results (dcgm_structs.h DCGM_HEALTH_RESULT_*).
const (
	HealthPass HealthStatus = 0
	HealthWarn HealthStatus = 10
	HealthFail HealthStatus = 20
)

// String names the status: "pass", "warn" or "fail".
func (h HealthStatus) String() string {
	switch h {
	case HealthPass:
		return "pass"
	case HealthWarn:
		return "warn"
	case HealthFail:
		return "fail"
	default:
		return "unknown"
	}
}

// Incident is one problem a DCGM health watch reported for a GPU.
type Incident struct {
	// GPU is the DCGM GPU id and UUID its UUID, when the GPU is in the
	// inventory.
	GPU  int
	UUID string
	// Subsystem is the watch that reported it: "pcie", "nvlink", "pmu",
	// "mcu", "memory", "sm", "inforom", "thermal", "power", "driver",
	// "nvswitch_nonfatal", "nvswitch_fatal", "connectx", "imex" or "other".
	Subsystem string
	Status    HealthStatus
	// Code is DCGM's error code (dcgm_errors.h DCGM_FR_*).
	Code    int
	Message string
}

// HealthReport is the result of one health check.
type HealthReport struct {
	// Overall is the worst status of all incidents.
	Overall   HealthStatus
	Incidents []Incident
}

// LostGPU is a GPU that was in the inventory and no longer is: it fell off
// the bus, DCGM marked it lost or inaccessible, or the driver detached it.
type LostGPU = source.LostGPU

// subsystemName names a DCGM health system bit (dcgm_structs.h
// DCGM_HEALTH_WATCH_*).
func subsystemName(system uint) string {
	switch system {
	case 0x1:
		return "pcie"
	case 0x2:
		return "nvlink"
	case 0x4:
		return "pmu"
	case 0x8:
		return "mcu"
	case 0x10:
		return "memory"
	case 0x20:
		return "sm"
	case 0x40:
		return "inforom"
	case 0x80:
		return "thermal"
	case 0x100:
		return "power"
	case 0x200:
		return "driver"
	case 0x400:
		return "nvswitch_nonfatal"
	case 0x800:
		return "nvswitch_fatal"
	case 0x1000:
		return "connectx"
	case 0x2000:
		return "imex"
	case 0xFFFFFFFF:
		// DCGM_HEALTH_WATCH_ALL: DCGM reports GPU-wide XIDs (79, 95)
		// under it (dcgm-exporter's gpu_health_collector.go, tag
		// 4.5.3-4.8.2, exports them as health_watch="ALL").
		return "all"
	default:
		return "other"
	}
}

// incidents converts a DCGM health report to the source's incidents: an
// empty, non-nil slice when every watch passed, so that dcgm naming tells a
// passing check from none (Input.Health).
func incidents(r *HealthReport) []source.HealthIncident {
	if r == nil {
		return []source.HealthIncident{}
	}
	out := make([]source.HealthIncident, 0, len(r.Incidents))
	for _, in := range r.Incidents {
		st := source.HealthPass
		switch in.Status {
		case HealthWarn:
			st = source.HealthWarn
		case HealthFail:
			st = source.HealthFail
		}
		out = append(out, source.HealthIncident{GPU: in.GPU, UUID: in.UUID, Subsystem: in.Subsystem, Status: st, Code: in.Code, Message: in.Message})
	}
	return out
}

// HealthIncidents runs a health check and returns its incidents
// (source.HealthReporter).
func (s *Source) HealthIncidents(ctx context.Context) ([]source.HealthIncident, error) {
	r, err := s.Health(ctx)
	if err != nil {
		return nil, err
	}
	return incidents(r), nil
}
