package nvml

import (
	"context"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// NVML calls run on one cgocall.Worker: each with a deadline, none piling
// up behind a hung one.
type (
	worker    = cgocall.Worker
	callError = cgocall.CallError
)

// errClosed reports a call on a closed source.
var errClosed = cgocall.ErrClosed

func newWorker(timeout time.Duration, onExit func()) *worker {
	return cgocall.NewWorker("nvml", timeout, onExit)
}

func call[T any](ctx context.Context, w *worker, op string, fn func() (T, error)) (T, error) {
	return cgocall.Call(ctx, w, op, fn)
}
