// Package poll waits, in tests, for a state that another goroutine or
// process reaches: it checks a condition at an interval until a deadline
// instead of sleeping a fixed time. Tests only; the binary never links it.
//
// testing/synctest does not fit the waits it serves: they wait on real
// sockets (gRPC over unix sockets, HTTP), informers and child processes,
// which are not durably blocked inside a synctest bubble.
package poll

import (
	"testing"
	"time"
)

// The defaults of Until: long enough for a loaded CI machine, short enough
// that a broken test fails quickly.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultInterval = 2 * time.Millisecond
)

// Until checks cond every DefaultInterval until it holds; after
// DefaultTimeout it fails t, saying what it waited for.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, DefaultTimeout, DefaultInterval, what, cond)
}

// Within is Until with its own deadline and interval.
func Within(t testing.TB, timeout, every time.Duration, what string, cond func() bool) {
	t.Helper()
	if !wait(timeout, every, cond) {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

// Receive waits up to DefaultTimeout for ch to deliver a value (the
// result of a call started on another goroutine, which a test expects to
// return) and returns it; after the deadline it fails t, saying what it
// waited for.
func Receive[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	return ReceiveWithin(t, DefaultTimeout, what, ch)
}

// ReceiveWithin is Receive with its own deadline.
func ReceiveWithin[T any](t testing.TB, timeout time.Duration, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
	var zero T
	return zero
}

// Problems calls check, which returns what is still wrong, every interval
// until it returns nothing. After timeout each problem of the last call
// fails t.
func Problems(t testing.TB, timeout, every time.Duration, check func() []string) {
	t.Helper()
	var problems []string
	if wait(timeout, every, func() bool {
		problems = check()
		return len(problems) == 0
	}) {
		return
	}
	for _, p := range problems {
		t.Error(p)
	}
	t.FailNow()
}

// wait reports whether cond held before timeout. cond is called at once,
// then every interval; the last call is at or after the deadline.
func wait(timeout, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}
