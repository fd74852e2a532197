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
