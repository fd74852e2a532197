package cgocall

import (
	"context"
	"errors"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// ErrNotBuilt is what a C-library source returns in a binary built without
// cgo or for a system other than linux, where its Go binding cannot be used.
var ErrNotBuilt = errors.New("source not built in: rebuild for linux with CGO_ENABLED=1")

// Unbuilt is the part of source.Source that a C-library source has in
// such a build: every call returns ErrNotBuilt. The sources' stubs embed
// it beside their Name and their own optional methods.
type Unbuilt struct{}

// Inventory returns ErrNotBuilt.
func (Unbuilt) Inventory(context.Context) (*source.Inventory, error) { return nil, ErrNotBuilt }

// Watch returns ErrNotBuilt.
func (Unbuilt) Watch(context.Context, []fields.Field) error { return ErrNotBuilt }

// Read returns ErrNotBuilt.
func (Unbuilt) Read(context.Context) (*source.Sample, error) { return nil, ErrNotBuilt }

// LostGPUs returns nothing.
func (Unbuilt) LostGPUs() []source.LostGPU { return nil }

// Close does nothing.
func (Unbuilt) Close() error { return nil }
