// Package bounded is the one way the exporter reads from outside its
// process: files the operator names, procfs, directories, and bodies of
// replies. Every read here ends when the caller's context ends (or a
// timeout of its own passes) and stops at a size cap, whatever the other
// side does: a named pipe in place of a file, a process stuck in the
// kernel behind its /proc file, a hung network mount, a file that never
// ends (/dev/zero), a reply of gigabytes.
//
// A read that is still blocked when its deadline passes cannot be
// interrupted (a blocked open(2) or read(2) holds its thread): it is
// abandoned on its own goroutine, and until it returns every later read of
// the same key fails at once with ErrPending, so a hung file holds one
// goroutine, not one more per collection.
//
// A test (TestNoUnboundedReads) fails when code outside this package opens
// or reads an outside file any other way.
package bounded

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrPending is returned while an earlier read of the same key, given up
// on, has not come back.
var ErrPending = errors.New("an earlier read has not returned yet (hung file system or process?)")

// ErrAbandoned is wrapped by the error of a read given up on because its
// context ended or its timeout passed: the read may still be running.
var ErrAbandoned = errors.New("read abandoned")

// ErrNotRegular is returned for a path that is not a regular file (a named
// pipe, a device, a directory, a socket): reading one could block forever
// or never end.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error of a read that went past its cap.
var ErrTooLarge = errors.New("too large")

// abandoned counts, per key, the reads given up on whose goroutine has not
// returned.
var abandoned = struct {
	sync.Mutex
	keys map[string]int
}{keys: map[string]int{}}

// Call runs read on its own goroutine and gives up when ctx is done or
// timeout passes (0: no timeout of its own). A read given up on finishes
// (or stays blocked) on its goroutine, its result dropped, and the error
// returned wraps ErrAbandoned and the cause; until the read returns, Call
// fails at once for the same key with ErrPending. Reads of one key that
// are not given up on may run at the same time.
func Call[T any](ctx context.Context, key string, timeout time.Duration, read func() (T, error)) (T, error) {
	var zero T
	if ctx.Err() != nil { // not started: nothing is abandoned
		return zero, fmt.Errorf("reading stopped: %w", context.Cause(ctx))
	}
	abandoned.Lock()
	if abandoned.keys[key] > 0 {
		abandoned.Unlock()
		return zero, fmt.Errorf("%s: %w", key, ErrPending)
	}
	abandoned.Unlock()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	var done, gaveUp bool // guarded by abandoned's lock
	go func() {
		v, err := read()
		abandoned.Lock()
		done = true
		if gaveUp {
			if abandoned.keys[key]--; abandoned.keys[key] <= 0 {
				delete(abandoned.keys, key)
			}
		}
		abandoned.Unlock()
		ch <- result{v, err}
	}()
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	giveUp := func() bool {
		abandoned.Lock()
		defer abandoned.Unlock()
		if done {
			return false
		}
		gaveUp = true
		abandoned.keys[key]++
		return true
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		if !giveUp() {
			r := <-ch
			return r.v, r.err
		}
		return zero, fmt.Errorf("reading stopped: %w: %w", ErrAbandoned, context.Cause(ctx))
	case <-expired:
		if !giveUp() {
			r := <-ch
			return r.v, r.err
		}
		return zero, fmt.Errorf("no answer within %s: %w: %w", timeout, ErrAbandoned, context.DeadlineExceeded)
	}
}

// Pending reports how many keys have a read given up on that has not
// returned; for tests and self-checks.
func Pending() int {
	abandoned.Lock()
	defer abandoned.Unlock()
	return len(abandoned.keys)
}
