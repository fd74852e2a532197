//go:build !(cgo && linux)

package dcgm

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// ErrNotBuilt is returned by New in a binary built without cgo or for a
// system other than linux, where go-dcgm cannot be used.
var ErrNotBuilt = fmt.Errorf("dcgm: %w", cgocall.ErrNotBuilt)

// Source is the DCGM source; in this build it cannot be created.
type Source struct{ cgocall.Unbuilt }

var _ source.Source = (*Source)(nil)

// New validates cfg and returns ErrNotBuilt.
func New(cfg Config, _ *slog.Logger) (*Source, error) {
	if _, err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	return nil, ErrNotBuilt
}

// Name returns "dcgm".
func (s *Source) Name() string { return "dcgm" }

// Health returns ErrNotBuilt.
func (s *Source) Health(context.Context) (*HealthReport, error) { return nil, ErrNotBuilt }
