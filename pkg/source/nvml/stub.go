//go:build !(cgo && linux)

package nvml

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// ErrNotBuilt is returned by New and Available in a binary built without
// cgo or for a system other than linux, where go-nvml cannot be used.
var ErrNotBuilt = fmt.Errorf("nvml: %w", cgocall.ErrNotBuilt)

// Source is the NVML source; in this build it cannot be created.
type Source struct{ cgocall.Unbuilt }

var _ source.Source = (*Source)(nil)

// New validates cfg and returns ErrNotBuilt.
func New(cfg Config, _ *slog.Logger) (*Source, error) {
	if _, err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	return nil, ErrNotBuilt
}

// Available returns ErrNotBuilt.
func Available(context.Context) error { return ErrNotBuilt }

// Name returns "nvml".
func (s *Source) Name() string { return "nvml" }

// Processes returns nothing.
func (s *Source) Processes() []Process { return nil }
