// Package logthrottle rate-limits log lines per cause, so that input that
// repeats (a kubelet reporting a new malformed device id on every refresh, a
// GPU whose reads fail on every collection) costs a few lines per window
// instead of one per occurrence, and the count of what was left out is kept.
//
// For each cause the first line is written at once. Further lines of the
// same cause within Window are suppressed and counted; the first line after
// the window carries the count as the attribute suppressed=N. A cause that
// stays quiet for one more window after its window ended is forgotten; if
// lines were suppressed in its window, one "repeated log lines suppressed"
// line (cause, message, suppressed, window) reports them the next time any
// line is logged or Flush is called.
//
// Memory is bounded: at most MaxCauses causes are tracked; lines of further
// causes share one overflow cause (OverflowCause) and are limited and
// counted under it. A level the handler does not enable costs one Enabled
// call and is neither written nor counted.
//
// It runs per refresh or per collection, not per scrape: a Log call is one
// map lookup under a mutex, plus an O(causes) sweep at most once per window.
package logthrottle

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"time"
)

// Defaults for Config fields left zero.
const (
	DefaultWindow    = time.Minute
	DefaultMaxCauses = 256
)

// OverflowCause is the cause under which lines are limited and counted when
// MaxCauses other causes are tracked.
const OverflowCause = "logthrottle-overflow"

// Message is the message of the line that reports a cause's suppressed
// lines when no line of that cause followed its window.
const Message = "repeated log lines suppressed"

// Config configures a Logger. The zero Config uses the defaults.
type Config struct {
	// Window is how long lines of a cause are suppressed after one is
	// written.
	Window time.Duration
	// MaxCauses bounds the causes tracked at once.
	MaxCauses int
	// Now is the clock; nil means time.Now. Tests set it.
	Now func() time.Time
}

// Logger writes log lines through a slog.Logger, at most one per cause per
// window. It is safe for concurrent use. The zero Logger is not usable; call
// New.
type Logger struct {
	logger    *slog.Logger
	window    time.Duration
	maxCauses int
	now       func() time.Time

	mu        sync.Mutex
	causes    map[string]*cause
	overflow  cause
	nextSweep time.Time
	total     uint64
}

// cause is the state of one cause: the end of its current window and what
// was suppressed in it, with the level, message and call site of the last
// suppressed line for the report.
type cause struct {
	until      time.Time
	suppressed int
	level      slog.Level
	msg        string
	// pc is the program counter of the last suppressed line's caller: the
	// report names it as its source (a report without one printed
	// source=.:0 under --log.format with sources).
	pc uintptr
}

// New returns a Logger writing to logger (nil discards).
func New(logger *slog.Logger, cfg Config) *Logger {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.MaxCauses <= 0 {
		cfg.MaxCauses = DefaultMaxCauses
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Logger{
		logger:    logger,
		window:    cfg.Window,
		maxCauses: cfg.MaxCauses,
		now:       cfg.Now,
		causes:    map[string]*cause{},
	}
}

// Debug logs at LevelDebug; see Log.
func (l *Logger) Debug(cause, msg string, args ...any) {
	l.log(context.Background(), slog.LevelDebug, cause, msg, args)
}

// Info logs at LevelInfo; see Log.
func (l *Logger) Info(cause, msg string, args ...any) {
	l.log(context.Background(), slog.LevelInfo, cause, msg, args)
}

// Warn logs at LevelWarn; see Log.
func (l *Logger) Warn(cause, msg string, args ...any) {
	l.log(context.Background(), slog.LevelWarn, cause, msg, args)
}

// Error logs at LevelError; see Log.
func (l *Logger) Error(cause, msg string, args ...any) {
	l.log(context.Background(), slog.LevelError, cause, msg, args)
}

// Log writes msg with args (slog key-value pairs or Attrs) unless a line of
// cause was written less than Window ago, and reports whether it wrote it.
// A written line carries suppressed=N when N lines of cause were suppressed
// before it. cause names the situation, not the input that caused it (a
// resource and reason, not a device id), so that input that keeps changing
// stays one cause.
func (l *Logger) Log(ctx context.Context, level slog.Level, cause, msg string, args ...any) bool {
	return l.log(ctx, level, cause, msg, args)
}

func (l *Logger) log(ctx context.Context, level slog.Level, name, msg string, args []any) bool {
	if !l.logger.Enabled(ctx, level) {
		return false
	}
	now := l.now()
	l.mu.Lock()
	l.sweepLocked(ctx, now, name)
	c := l.causes[name]
	if c == nil {
		if len(l.causes) < l.maxCauses {
			c = &cause{}
			l.causes[name] = c
		} else {
			c = &l.overflow
		}
	}
	var pcs [1]uintptr
	if now.Before(c.until) {
		if c.suppressed == 0 {
			// The first suppressed line of a window names the call site
			// of its report; later ones skip the stack walk (a cause is
			// one call site, as a rule).
			runtime.Callers(3, pcs[:]) // runtime.Callers, log, Log/Warn/…
			c.pc = pcs[0]
		}
		c.suppressed++
		c.level, c.msg = level, msg
		l.total++
		l.mu.Unlock()
		return false
	}
	n := c.suppressed
	c.until, c.suppressed = now.Add(l.window), 0
	l.mu.Unlock()

	runtime.Callers(3, pcs[:]) // runtime.Callers, log, Log/Warn/…
	r := slog.NewRecord(now, level, msg, pcs[0])
	r.Add(args...)
	if n > 0 {
		r.AddAttrs(slog.Int("suppressed", n))
	}
	_ = l.logger.Handler().Handle(ctx, r)
	return true
}

// Flush forgets every cause that has been quiet for a window after its
// window ended, reporting the lines suppressed in it. Log does the same at
// most once per window; call Flush where a report should not wait for the
// next line, e.g. once per refresh.
func (l *Logger) Flush(ctx context.Context) {
	now := l.now()
	l.mu.Lock()
	l.nextSweep = time.Time{}
	l.sweepLocked(ctx, now, "")
	l.mu.Unlock()
}

// Suppressed returns how many lines were suppressed since New.
func (l *Logger) Suppressed() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// sweepLocked reports and forgets the causes quiet for a window after their
// window ended, at most once per window, except cause keep: the line being
// logged carries its count. A cause that recurs within that extra window
// keeps its count for its next line instead of a separate report. The
// report is written under the lock: it is rare and keeps reports in order
// with the lines they count.
func (l *Logger) sweepLocked(ctx context.Context, now time.Time, keep string) {
	if now.Before(l.nextSweep) {
		return
	}
	l.nextSweep = now.Add(l.window)
	for name, c := range l.causes {
		if name == keep || now.Before(c.until.Add(l.window)) {
			continue
		}
		l.report(ctx, now, name, c)
		delete(l.causes, name)
	}
	if !now.Before(l.overflow.until.Add(l.window)) {
		l.report(ctx, now, OverflowCause, &l.overflow)
		l.overflow.suppressed = 0
	}
}

func (l *Logger) report(ctx context.Context, now time.Time, name string, c *cause) {
	if c.suppressed == 0 || !l.logger.Enabled(ctx, c.level) {
		return
	}
	r := slog.NewRecord(now, c.level, Message, c.pc)
	r.AddAttrs(slog.String("cause", name), slog.String("message", c.msg),
		slog.Int("suppressed", c.suppressed), slog.Duration("window", l.window))
	_ = l.logger.Handler().Handle(ctx, r)
}
