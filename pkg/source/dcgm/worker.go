package dcgm

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// errClosed reports a call on a closed source.
var errClosed = errors.New("dcgm: source closed")

// callError is a DCGM call that did not complete: it timed out, or could not
// start because an earlier call is still blocked. It wraps
// source.ErrUnavailable.
type callError struct {
	op      string
	timeout time.Duration
	busy    bool
}

func (e *callError) Error() string {
	if e.busy {
		return fmt.Sprintf("dcgm %s: an earlier DCGM call is still blocked: %v", e.op, source.ErrUnavailable)
	}
	return fmt.Sprintf("dcgm %s: no answer within %s: %v", e.op, e.timeout, source.ErrUnavailable)
}

func (e *callError) Unwrap() error { return source.ErrUnavailable }

// worker runs DCGM calls on one goroutine, so that a call that never returns
// blocks one goroutine only: callers wait with a deadline, and while a call
// is still running every other call fails at once.
type worker struct {
	jobs    chan *job
	quit    chan struct{}
	done    chan struct{}
	busy    atomic.Bool
	timeout time.Duration
}

type job struct {
	fn   func()
	done chan struct{}
}

// newWorker starts the worker goroutine; onExit runs on it after Close,
// once any blocked call has returned.
func newWorker(timeout time.Duration, onExit func()) *worker {
	w := &worker{jobs: make(chan *job), quit: make(chan struct{}), done: make(chan struct{}), timeout: timeout}
	go w.run(onExit)
	return w
}

func (w *worker) run(onExit func()) {
	defer close(w.done)
	for {
		select {
		case j := <-w.jobs:
			j.fn()
			w.busy.Store(false)
			close(j.done)
		case <-w.quit:
			if onExit != nil {
				onExit()
			}
			return
		}
	}
}

// do runs fn on the worker and waits for it until the call timeout or ctx
// ends, whichever comes first. After a timeout fn still runs to completion;
// it must not touch state the caller reads after do returns an error.
func (w *worker) do(ctx context.Context, op string, fn func()) error {
	if w.busy.Load() {
		return &callError{op: op, busy: true}
	}
	timer := time.NewTimer(w.timeout)
	defer timer.Stop()
	j := &job{fn: fn, done: make(chan struct{})}
	// busy is set before the hand-over so that a caller that gives up
	// right after it still sees the worker as taken.
	w.busy.Store(true)
	select {
	case w.jobs <- j:
	case <-w.quit:
		w.busy.Store(false)
		return errClosed
	case <-ctx.Done():
		w.busy.Store(false)
		return fmt.Errorf("dcgm %s: %w", op, ctx.Err())
	case <-timer.C:
		w.busy.Store(false)
		return &callError{op: op, timeout: w.timeout}
	}
	select {
	case <-j.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("dcgm %s: %w", op, ctx.Err())
	case <-timer.C:
		return &callError{op: op, timeout: w.timeout}
	}
}

// close stops the worker and waits up to wait for its goroutine to end; it
// reports whether it ended (it ends later if a call is still blocked).
func (w *worker) close(wait time.Duration) bool {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-w.done:
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
		return v, fmt.Errorf("dcgm %s: %w", op, err)
	}
	return v, nil
}
