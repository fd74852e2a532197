//go:build !(cgo && linux)

package nvml

import (
	"context"
	"errors"
	"log/slog"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// ErrNotBuilt is returned by New and Available in a binary built without
// cgo or for a system other than linux, where go-nvml cannot be used.
var ErrNotBuilt = errors.New("nvml: source not built in: rebuild for linux with CGO_ENABLED=1")

// Source is the NVML source; in this build it cannot be created.
type Source struct{}

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

// Inventory returns ErrNotBuilt.
func (s *Source) Inventory(context.Context) (*source.Inventory, error) { return nil, ErrNotBuilt }

// Watch returns ErrNotBuilt.
func (s *Source) Watch(context.Context, []fields.Field) error { return ErrNotBuilt }

// Read returns ErrNotBuilt.
func (s *Source) Read(context.Context) (*source.Sample, error) { return nil, ErrNotBuilt }

// LostGPUs returns nothing.
func (s *Source) LostGPUs() []LostGPU { return nil }

// Processes returns nothing.
func (s *Source) Processes() []Process { return nil }

// Close does nothing.
func (s *Source) Close() error { return nil }
