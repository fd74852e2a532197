package poll

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records failures instead of stopping the
// goroutine, so that a test can check that a wait fails.
type recorder struct {
	testing.TB
	failures []string
	failed   bool
}

func (r *recorder) Helper()                      {}
func (r *recorder) Fatalf(f string, args ...any) { r.Errorf(f, args...); r.FailNow() }
func (r *recorder) Errorf(f string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(f, args...))
}
func (r *recorder) Error(args ...any) { r.failures = append(r.failures, fmt.Sprint(args...)) }
func (r *recorder) FailNow()          { r.failed = true }

func TestWithin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		holdAfter int // calls before cond holds; -1: never
		wantFail  bool
	}{
		{"holds at once", 0, false},
		{"holds after some calls", 5, false},
		{"never holds", -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			calls := 0
			Within(r, 200*time.Millisecond, time.Millisecond, "the thing", func() bool {
				calls++
				return tc.holdAfter >= 0 && calls > tc.holdAfter
			})
			if r.failed != tc.wantFail {
				t.Fatalf("failed = %v, want %v (%q)", r.failed, tc.wantFail, r.failures)
			}
			if tc.wantFail && (len(r.failures) != 1 || !strings.Contains(r.failures[0], "the thing")) {
				t.Errorf("failure %q does not say what it waited for", r.failures)
			}
			if !tc.wantFail && calls != tc.holdAfter+1 {
				t.Errorf("cond called %d times, want %d", calls, tc.holdAfter+1)
			}
		})
	}
}

func TestProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		fixedAt int // call from which check finds nothing wrong; -1: never
		want    []string
	}{
		{"fixed at once", 0, nil},
		{"fixed later", 3, nil},
		{"never fixed: the last problems fail the test", -1, []string{"a is wrong", "b is wrong"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			calls := 0
			Problems(r, 200*time.Millisecond, time.Millisecond, func() []string {
				calls++
				if tc.fixedAt >= 0 && calls > tc.fixedAt {
					return nil
				}
				return []string{"a is wrong", "b is wrong"}
			})
			if got := strings.Join(r.failures, "|"); got != strings.Join(tc.want, "|") {
				t.Errorf("failures %q, want %q", r.failures, tc.want)
			}
			if r.failed != (tc.want != nil) {
				t.Errorf("failed = %v, want %v", r.failed, tc.want != nil)
			}
		})
	}
}

func TestWithinWaitsUntilTheDeadline(t *testing.T) {
	t.Parallel()
	r := &recorder{TB: t}
	start := time.Now()
	Within(r, 50*time.Millisecond, time.Millisecond, "never", func() bool { return false })
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("gave up after %s, before the 50ms deadline", d)
	}
}

func TestReceiveWithin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		send     bool // whether a value comes
		wantFail bool
	}{
		{"a value comes", true, false},
		{"none comes", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			ch := make(chan int, 1)
			if tc.send {
				go func() { ch <- 42 }()
			}
			got := ReceiveWithin(r, 50*time.Millisecond, "the answer", ch)
			if r.failed != tc.wantFail {
				t.Fatalf("failed = %v, want %v (%q)", r.failed, tc.wantFail, r.failures)
			}
			if tc.wantFail && (len(r.failures) != 1 || !strings.Contains(r.failures[0], "the answer")) {
				t.Errorf("failure %q does not say what it waited for", r.failures)
			}
			if !tc.wantFail && got != 42 {
				t.Errorf("received %d, want 42", got)
			}
		})
	}
}
