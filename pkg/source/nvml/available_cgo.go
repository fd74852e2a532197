//go:build cgo && linux

package nvml

import (
	"context"
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Available reports whether NVML can be used on this host: it loads
// libnvidia-ml.so.1, initialises NVML, counts the GPUs and shuts NVML down.
// The error is one sentence for an operator: ErrLibraryNotFound when the
// library is missing. It gives up when ctx ends (a hung driver call keeps
// one goroutine until it returns). It is meant for choosing a source at
// start-up (DCGM, then NVML), not for every collection.
func Available(ctx context.Context) error {
	return available(ctx, nvml.New())
}

func available(ctx context.Context, lib nvml.Interface) error {
	done := make(chan error, 1)
	go func() { done <- initAndCount(lib) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("nvml: no answer from NVML: %w", ctx.Err())
	}
}

func initAndCount(lib nvml.Interface) error {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		err := initError(ret)
		if errors.Is(err, ErrLibraryNotFound) {
			return err
		}
		return fmt.Errorf("nvml: initialising NVML failed: %w", err)
	}
	defer func() { _ = lib.Shutdown() }()
	n, ret := lib.DeviceGetCount()
	switch {
	case ret != nvml.SUCCESS:
		return fmt.Errorf("nvml: counting GPUs failed: %w", ret)
	case n == 0:
		return errors.New("nvml: NVML works but lists no NVIDIA GPU")
	}
	return nil
}
