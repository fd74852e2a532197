package nvml

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// errClosed reports a call on a closed source.
var errClosed = errors.New("nvml: source closed")

// callError is an NVML call that did not complete: it timed out, or could
// not start because an earlier call is still blocked. It wraps
// source.ErrUnavailable.
type callError struct {
	op      string
	timeout time.Duration
	busy    bool
}

func (e *callError) Error() string {
	if e.busy {
		return fmt.Sprintf("nvml %s: an earlier NVML call is still blocked: %v", e.op, source.ErrUnavailable)
	}
	return fmt.Sprintf("nvml %s: no answer within %s: %v", e.op, e.timeout, source.ErrUnavailable)
}

func (e *callError) Unwrap() error { return source.ErrUnavailable }

// worker runs NVML calls on one goroutine. A cgo call cannot be cancelled:
// a caller waits for its call with a deadline and, while a call is still
// running after its caller gave up, every new call fails at once, so a hung
// driver blocks one goroutine and never piles more up.
type worker struct {
	calls   chan *job
	stop    chan struct{}
	stopped chan struct{}
	busy    atomic.Bool
	timeout time.Duration
}

type job struct {
	fn       func()
	done     chan struct{}
	panicked any
}

// startWorker starts the worker goroutine; onExit runs on it once it stops,
// after any blocked call has returned.
func startWorker(timeout time.Duration, onExit func()) *worker {
	w := &worker{calls: make(chan *job), stop: make(chan struct{}), stopped: make(chan struct{}), timeout: timeout}
	go w.run(onExit)
	return w
}

func (w *worker) run(onExit func()) {
	defer close(w.stopped)
	for {
		select {
		case j := <-w.calls:
			j.run()
			w.busy.Store(false)
			close(j.done)
		case <-w.stop:
			if onExit != nil {
				onExit()
			}
			return
		}
	}
}

// run calls fn and keeps a panic (a library bug, or a mock without the
// function) from taking the exporter down.
func (j *job) run() {
	defer func() { j.panicked = recover() }()
	j.fn()
}

// do runs fn on the worker and waits until it returns, the call timeout
// passes or ctx ends. After a timeout fn still runs to completion: it must
// only write to memory the caller no longer reads once do failed.
func (w *worker) do(ctx context.Context, op string, fn func()) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("nvml %s: %w", op, err)
	}
	// Set before the hand-over, so that a caller giving up right after it
	// still sees the worker as taken.
	if !w.busy.CompareAndSwap(false, true) {
		return &callError{op: op, busy: true}
	}
	timer := time.NewTimer(w.timeout)
	defer timer.Stop()
	j := &job{fn: fn, done: make(chan struct{})}
	select {
	case w.calls <- j:
	case <-w.stop:
		w.busy.Store(false)
		return errClosed
	case <-ctx.Done():
		w.busy.Store(false)
		return fmt.Errorf("nvml %s: %w", op, ctx.Err())
	case <-timer.C:
		w.busy.Store(false)
		return &callError{op: op, timeout: w.timeout}
	}
	select {
	case <-j.done:
		if j.panicked != nil {
			return fmt.Errorf("nvml %s: panic: %v", op, j.panicked)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("nvml %s: %w", op, ctx.Err())
	case <-timer.C:
		return &callError{op: op, timeout: w.timeout}
	}
}

// close stops the worker and waits up to wait for its goroutine to end; it
// reports whether it ended (it ends later if a call is still blocked).
func (w *worker) close(wait time.Duration) bool {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-w.stopped:
		return true
	case <-t.C:
		return false
	}
}

// call runs fn on w and returns its results, or the worker's error.
func call[T any](ctx context.Context, w *worker, op string, fn func() (T, error)) (T, error) {
	var (
		v   T
		err error
	)
	if werr := w.do(ctx, op, func() { v, err = fn() }); werr != nil {
		var zero T
		return zero, werr
	}
	if err != nil {
		return v, fmt.Errorf("nvml %s: %w", op, err)
	}
	return v, nil
}
