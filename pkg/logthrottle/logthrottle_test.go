package logthrottle

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a time source the test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// recorder is a slog.Handler that keeps every record as one line of
// "level msg k=v k=v" text, for comparison.
type recorder struct {
	mu    sync.Mutex
	level slog.Level
	lines []string
	pcs   []uintptr
}

func (r *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= r.level }
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler           { return r }
func (r *recorder) WithGroup(string) slog.Handler                { return r }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, b.String())
	r.pcs = append(r.pcs, rec.PC)
	return nil
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.lines
	r.lines, r.pcs = nil, nil
	return out
}

func newLogger(maxCauses int) (*Logger, *recorder, *clock) {
	rec := &recorder{level: slog.LevelInfo}
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return New(slog.New(rec), Config{Window: time.Minute, MaxCauses: maxCauses, Now: clk.now}), rec, clk
}

// step is one action of a scenario: log a line of cause (msg "m-"+cause,
// attribute i), advance the clock, or flush.
type step struct {
	cause   string
	advance time.Duration
	flush   bool
	want    []string // lines written by this step
}

func TestLogger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		maxCauses int
		steps     []step
	}{
		{
			name: "first line at once, repeats counted, next window carries the count",
			steps: []step{
				{cause: "a", want: []string{"WARN m-a i=0"}},
				{cause: "a"},
				{cause: "a"},
				{advance: 59 * time.Second},
				{cause: "a"},
				{advance: time.Second},
				{cause: "a", want: []string{"WARN m-a i=6 suppressed=3"}},
				{cause: "a"},
			},
		},
		{
			name: "causes are independent",
			steps: []step{
				{cause: "a", want: []string{"WARN m-a i=0"}},
				{cause: "b", want: []string{"WARN m-b i=1"}},
				{cause: "a"},
				{cause: "b"},
				{cause: "c", want: []string{"WARN m-c i=4"}},
			},
		},
		{
			name: "a cause quiet for a window after its window is reported by the next sweep",
			steps: []step{
				{cause: "a", want: []string{"WARN m-a i=0"}},
				{cause: "a"},
				{cause: "a"},
				{advance: 2 * time.Minute},
				{cause: "b", want: []string{
					"WARN " + Message + " cause=a message=m-a suppressed=2 window=1m0s",
					"WARN m-b i=4",
				}},
				// a was forgotten: its next line starts a new window, no count.
				{cause: "a", want: []string{"WARN m-a i=5"}},
			},
		},
		{
			name: "flush reports a quiet cause once",
			steps: []step{
				{cause: "a", want: []string{"WARN m-a i=0"}},
				{cause: "a"},
				{flush: true},
				{advance: time.Minute},
				{flush: true}, // a may still recur and carry its count
				{advance: time.Minute},
				{flush: true, want: []string{"WARN " + Message + " cause=a message=m-a suppressed=1 window=1m0s"}},
				{flush: true},
			},
		},
		{
			name:      "causes beyond the cap share the overflow cause",
			maxCauses: 2,
			steps: []step{
				{cause: "a", want: []string{"WARN m-a i=0"}},
				{cause: "b", want: []string{"WARN m-b i=1"}},
				{cause: "c", want: []string{"WARN m-c i=2"}},
				{cause: "d"},
				{cause: "e"},
				{cause: "a"},
				{advance: 2 * time.Minute},
				{flush: true, want: []string{
					"WARN " + Message + " cause=a message=m-a suppressed=1 window=1m0s",
					"WARN " + Message + " cause=" + OverflowCause + " message=m-e suppressed=2 window=1m0s",
				}},
				{cause: "d", want: []string{"WARN m-d i=8"}},
			},
		},
		{
			name: "a cause that recurs within a window after its window carries its count",
			steps: []step{
				{cause: "a", want: []string{"WARN m-a i=0"}},
				{cause: "a"},
				{advance: 90 * time.Second},
				{cause: "b", want: []string{"WARN m-b i=3"}}, // sweeps, but a may still recur
				{cause: "a", want: []string{"WARN m-a i=4 suppressed=1"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l, rec, clk := newLogger(tt.maxCauses)
			for i, s := range tt.steps {
				switch {
				case s.advance > 0:
					clk.advance(s.advance)
				case s.flush:
					l.Flush(context.Background())
				default:
					l.Warn(s.cause, "m-"+s.cause, "i", i)
				}
				got := rec.take()
				// Reports come out in map order; compare as sets of lines.
				if strings.Join(sorted(got), "\n") != strings.Join(sorted(s.want), "\n") {
					t.Fatalf("step %d %+v: lines\n%q\nwant\n%q", i, s, got, s.want)
				}
			}
		})
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// A flood of ever-new causes keeps memory and output bounded, and every
// occurrence is either written or counted.
func TestLoggerBoundedUnderChurn(t *testing.T) {
	t.Parallel()
	const maxCauses, perWindow, windows = 16, 10000, 6
	l, rec, clk := newLogger(maxCauses)
	for w := range windows {
		for i := range perWindow {
			l.Warn(fmt.Sprintf("cause-%d-%d", w, i), "m")
		}
		if n := len(l.causes); n > maxCauses {
			t.Fatalf("window %d: %d causes tracked, want at most %d", w, n, maxCauses)
		}
		clk.advance(time.Minute)
	}
	clk.advance(time.Minute) // the last window's overflow is now quiet
	l.Flush(context.Background())
	written, reported := 0, 0
	for _, line := range rec.take() {
		if strings.Contains(line, Message) {
			reported++
		} else {
			written++
		}
	}
	// Per window: the tracked causes + 1 overflow line, and at most 1
	// overflow report.
	if most := windows * (maxCauses + 2); written+reported > most {
		t.Errorf("%d lines for %d occurrences, want at most %d", written+reported, windows*perWindow, most)
	}
	if got, want := l.Suppressed(), uint64(windows*perWindow-written); got != want {
		t.Errorf("Suppressed() = %d, want %d (occurrences not written)", got, want)
	}
	if reported == 0 {
		t.Error("the last overflow suppressions were never reported")
	}
}

// A level the handler drops is neither written nor counted, and does not
// use up the cause's window.
func TestLoggerDisabledLevel(t *testing.T) {
	t.Parallel()
	l, rec, _ := newLogger(0)
	l.Debug("a", "m")
	l.Debug("a", "m")
	if got := rec.take(); len(got) != 0 || l.Suppressed() != 0 {
		t.Fatalf("debug lines %q, suppressed %d; want none", got, l.Suppressed())
	}
	l.Info("a", "m")
	if got := rec.take(); len(got) != 1 {
		t.Fatalf("info lines %q, want one", got)
	}
}

// The record's source location is the caller of Warn or Log.
func TestLoggerSourceIsCaller(t *testing.T) {
	t.Parallel()
	l, rec, _ := newLogger(0)
	l.Warn("a", "m")
	l.Log(context.Background(), slog.LevelWarn, "b", "m")
	rec.mu.Lock()
	pcs := append([]uintptr(nil), rec.pcs...)
	rec.mu.Unlock()
	for _, pc := range pcs {
		f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
		if filepath.Base(f.File) != "logthrottle_test.go" {
			t.Errorf("source %s:%d, want this test file", f.File, f.Line)
		}
	}
}

// A report of suppressed lines names the call site of the lines it counts
// as its source; it had none, and a handler with sources printed
// source=.:0.
func TestLoggerReportSourceIsCaller(t *testing.T) {
	t.Parallel()
	l, rec, clk := newLogger(0)
	l.Warn("a", "m")
	l.Warn("a", "m") // suppressed
	clk.advance(3 * l.window)
	l.Flush(context.Background())
	rec.mu.Lock()
	pcs := append([]uintptr(nil), rec.pcs...)
	rec.mu.Unlock()
	if len(pcs) != 2 {
		t.Fatalf("%d records, want the line and its report", len(pcs))
	}
	f, _ := runtime.CallersFrames([]uintptr{pcs[1]}).Next()
	if pcs[1] == 0 || filepath.Base(f.File) != "logthrottle_test.go" {
		t.Errorf("report source %s:%d (pc %d), want this test file", f.File, f.Line, pcs[1])
	}
}

// The caller's arguments are not modified when suppressed=N is added.
func TestLoggerKeepsArgs(t *testing.T) {
	t.Parallel()
	l, _, clk := newLogger(0)
	args := make([]any, 2, 4)
	args[0], args[1] = "k", "v"
	l.Warn("a", "m", args...)
	l.Warn("a", "m", args...)
	clk.advance(time.Minute)
	l.Warn("a", "m", args...)
	if full := args[:4]; full[2] != nil || full[3] != nil {
		t.Errorf("args backing array written: %v", full)
	}
}

func BenchmarkLoggerSuppressed(b *testing.B) {
	l := New(slog.New(slog.DiscardHandler), Config{})
	l.Warn("a", "m")
	b.ReportAllocs()
	for b.Loop() {
		l.Warn("a", "m", "k", 1)
	}
}
