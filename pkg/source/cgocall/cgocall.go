// Package cgocall runs calls into a C library (DCGM, NVML) on one goroutine
// with deadlines. A cgo call cannot be cancelled: a caller waits for its call
// at most the call timeout and, while a call is still running after its
// caller gave up, every new call fails at once, so a hung driver or
// hostengine blocks one goroutine and never piles more up. Both GPU sources
// use it, with the rest of what a source backed by a C library needs
// (link.go): the session with the library (Link: up, or down until a retry
// that backs off as Retry says) and the check of a device selection.
package cgocall

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// ErrClosed reports a call on a closed worker.
var ErrClosed = errors.New("source closed")

// CallError is a call that did not complete: it timed out, or could not
// start because an earlier call is still blocked. It wraps
// source.ErrUnavailable.
type CallError struct {
	// Library names the library in messages ("dcgm").
	Library string
	// Op names the call.
	Op string
	// Timeout is the deadline that passed (zero when Busy).
	Timeout time.Duration
	// Busy is set when an earlier call was still blocked.
	Busy bool
}

func (e *CallError) Error() string {
	if e.Busy {
		return fmt.Sprintf("%s %s: an earlier %s call is still blocked: %v", e.Library, e.Op, e.Library, source.ErrUnavailable)
	}
	return fmt.Sprintf("%s %s: no answer within %s: %v", e.Library, e.Op, e.Timeout, source.ErrUnavailable)
}

// Unwrap makes a CallError match source.ErrUnavailable.
func (e *CallError) Unwrap() error { return source.ErrUnavailable }

// Worker runs calls on one goroutine.
type Worker struct {
	library string
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

// NewWorker starts the worker goroutine. library names the library in
// errors; onExit, when not nil, runs on the worker goroutine once it stops,
// after any blocked call has returned (where the library is shut down).
func NewWorker(library string, timeout time.Duration, onExit func()) *Worker {
	w := &Worker{library: library, calls: make(chan *job), stop: make(chan struct{}), stopped: make(chan struct{}), timeout: timeout}
	go w.run(onExit)
	return w
}

func (w *Worker) run(onExit func()) {
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

// Do runs fn on the worker and waits until it returns, the call timeout
// passes or ctx ends. After a timeout fn still runs to completion: it must
// only write to memory the caller no longer reads once Do failed.
func (w *Worker) Do(ctx context.Context, op string, fn func()) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", w.library, op, err)
	}
	// Set before the hand-over, so that a caller giving up right after it
	// still sees the worker as taken.
	if !w.busy.CompareAndSwap(false, true) {
		return &CallError{Library: w.library, Op: op, Busy: true}
	}
	timer := time.NewTimer(w.timeout)
	defer timer.Stop()
	j := &job{fn: fn, done: make(chan struct{})}
	select {
	case w.calls <- j:
	case <-w.stop:
		w.busy.Store(false)
		return ErrClosed
	case <-ctx.Done():
		w.busy.Store(false)
		return fmt.Errorf("%s %s: %w", w.library, op, ctx.Err())
	case <-timer.C:
		w.busy.Store(false)
		return &CallError{Library: w.library, Op: op, Timeout: w.timeout}
	}
	select {
	case <-j.done:
		if j.panicked != nil {
			return fmt.Errorf("%s %s: panic: %v", w.library, op, j.panicked)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s %s: %w", w.library, op, ctx.Err())
	case <-timer.C:
		return &CallError{Library: w.library, Op: op, Timeout: w.timeout}
	}
}

// Close stops the worker and waits up to wait for its goroutine to end; it
// reports whether it ended (it ends later if a call is still blocked).
func (w *Worker) Close(wait time.Duration) bool {
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

// Call runs fn on w and returns its results, or the worker's error.
func Call[T any](ctx context.Context, w *Worker, op string, fn func() (T, error)) (T, error) {
	var (
		v   T
		err error
	)
	if werr := w.Do(ctx, op, func() { v, err = fn() }); werr != nil {
		var zero T
		return zero, werr
	}
	if err != nil {
		return v, fmt.Errorf("%s %s: %w", w.library, op, err)
	}
	return v, nil
}
