package source

import (
	"context"
	"time"
)

// LostGPU is a GPU that was in the inventory and no longer is: it fell off
// the bus, the driver marked it lost or inaccessible, or it was detached.
type LostGPU struct {
	GPU   int
	UUID  string
	Since time.Time
}

// LostReporter is implemented by sources that notice GPUs leaving the
// inventory (DCGM, NVML). The collector exports what it reports.
type LostReporter interface {
	LostGPUs() []LostGPU
}

// HealthStatus is the result of a health watch.
type HealthStatus int

// Health results, in rising order of severity.
const (
	HealthPass HealthStatus = iota
	HealthWarn
	HealthFail
)

// HealthIncident is one problem a health watch reported for a GPU.
type HealthIncident struct {
	GPU       int
	UUID      string
	Subsystem string // "pcie", "nvlink", "memory", "thermal", "power", ...
	Status    HealthStatus
	Code      int
	Message   string
}

// HealthReporter is implemented by sources with health watches (DCGM). An
// empty result means every watched subsystem passed.
type HealthReporter interface {
	HealthIncidents(ctx context.Context) ([]HealthIncident, error)
}
