package cgocall

import (
	"errors"
	"fmt"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// The shared libraries the C-library sources dlopen.
const (
	// LibDCGM is what go-dcgm dlopens (go-dcgm pkg/dcgm/admin.go, dcgmLib).
	LibDCGM = "libdcgm.so.4"
	// LibNVML is what go-nvml dlopens (go-nvml pkg/nvml/lib.go, defaultNvmlLibraryName).
	LibNVML = "libnvidia-ml.so.1"
)

// Defaults of Retry's zero fields.
const (
	DefaultCallTimeout = 10 * time.Second
	DefaultBackoffMin  = time.Second
	DefaultBackoffMax  = 30 * time.Second
)

// Retry says how long one library call may take and how long to wait
// between attempts to (re)initialise the library: the wait doubles after
// each failure, from BackoffMin up to BackoffMax.
type Retry struct {
	CallTimeout, BackoffMin, BackoffMax time.Duration
}

// WithDefaults validates r and fills its zero fields. Errors start with
// library ("dcgm").
func (r Retry) WithDefaults(library string) (Retry, error) {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"call timeout", r.CallTimeout}, {"minimum backoff", r.BackoffMin}, {"maximum backoff", r.BackoffMax}} {
		if d.v < 0 {
			return r, fmt.Errorf("%s: negative %s %s", library, d.name, d.v)
		}
	}
	if r.CallTimeout == 0 {
		r.CallTimeout = DefaultCallTimeout
	}
	if r.BackoffMin == 0 {
		r.BackoffMin = DefaultBackoffMin
	}
	if r.BackoffMax == 0 {
		r.BackoffMax = DefaultBackoffMax
	}
	if r.BackoffMax < r.BackoffMin {
		return r, fmt.Errorf("%s: maximum backoff %s is below the minimum %s", library, r.BackoffMax, r.BackoffMin)
	}
	return r, nil
}

// Selection validates a device selection (no negative entry, none twice)
// and returns a copy. noun names an entry in errors ("GPU id").
func Selection(library, noun string, ids []int) ([]int, error) {
	seen := map[int]bool{}
	for _, id := range ids {
		if id < 0 {
			return nil, fmt.Errorf("%s: negative %s %d", library, noun, id)
		}
		if seen[id] {
			return nil, fmt.Errorf("%s: %s %d selected twice", library, noun, id)
		}
		seen[id] = true
	}
	return append([]int(nil), ids...), nil
}

// Link is the state of a session with a library: up, or down until a retry
// time that backs off exponentially. It is not safe for concurrent use; the
// source's lock guards it.
type Link struct {
	library  string
	min, max time.Duration
	cur      time.Duration
	up       bool
	retryAt  time.Time
	lastErr  error // why the link is down; nil while up or before any attempt
}

// NewLink returns a link that is down and may be tried at once.
func NewLink(library string, r Retry) Link {
	return Link{library: library, min: r.BackoffMin, max: r.BackoffMax}
}

// Up reports whether the session is up.
func (l *Link) Up() bool { return l.up }

// Wait returns, for a link that is down and whose backoff has not passed,
// an error wrapping source.ErrUnavailable with the last failure; nil when
// an attempt may be made.
func (l *Link) Wait(now time.Time) error {
	if l.up || l.lastErr == nil || !now.Before(l.retryAt) {
		return nil
	}
	return fmt.Errorf("%w: %s retry in %s: %w", source.ErrUnavailable, l.library, l.retryAt.Sub(now).Round(time.Millisecond), l.lastErr)
}

// Attempted records an attempt to bring the link up at now. On success the
// link is up and the backoff starts over; on failure it returns the wait
// before the next attempt and whether this is the first failure in a row
// (callers log that one louder).
func (l *Link) Attempted(now time.Time, err error) (wait time.Duration, first bool) {
	if err == nil {
		l.up, l.lastErr, l.cur = true, nil, 0
		return 0, false
	}
	first = l.lastErr == nil
	wait = l.backOff(now, err)
	return wait, first
}

// Lost records a failed call on an up link: the session is presumed broken
// and the next attempt waits for the backoff. It returns the wait and
// whether the link was up (false: nothing changed, nothing to log).
func (l *Link) Lost(now time.Time, err error) (time.Duration, bool) {
	if !l.up {
		return 0, false
	}
	l.up = false
	return l.backOff(now, err), true
}

// Down takes the link down for good (the source closes).
func (l *Link) Down() { l.up = false }

func (l *Link) backOff(now time.Time, err error) time.Duration {
	l.cur = min(max(l.cur, l.min), l.max)
	wait := l.cur
	l.cur = min(2*l.cur, l.max)
	l.retryAt = now.Add(wait)
	l.lastErr = err
	return wait
}

// Unavailable wraps err in source.ErrUnavailable unless it already says the
// source is unavailable or closed.
func Unavailable(err error) error {
	if errors.Is(err, source.ErrUnavailable) || errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("%w: %w", source.ErrUnavailable, err)
}

// CallTimeout bounds one library call of a collection that may take
// collectTimeout: at most DefaultCallTimeout, and never more than the
// whole collection.
func CallTimeout(collectTimeout time.Duration) time.Duration {
	return min(DefaultCallTimeout, collectTimeout)
}
