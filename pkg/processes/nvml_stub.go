//go:build !(cgo && linux)

package processes

import (
	"errors"
	"log/slog"
	"time"
)

// ErrNVMLNotBuilt reports a build without cgo on linux, where go-nvml
// cannot be used.
var ErrNVMLNotBuilt = errors.New("processes: this build has no NVML (built without cgo on linux)")

// NVMLLibrary is the NVML API the sampler calls; unused in this build.
type NVMLLibrary any

// NVMLConfig configures an NVMLSampler.
type NVMLConfig struct {
	Library     NVMLLibrary
	CallTimeout time.Duration
	Rescan      time.Duration
	Logger      *slog.Logger
}

// NVMLSampler is not available in this build.
type NVMLSampler struct{ Sampler }

// NewNVML fails with ErrNVMLNotBuilt.
func NewNVML(NVMLConfig) (*NVMLSampler, error) { return nil, ErrNVMLNotBuilt }
