package flagtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// recorder is a testing.TB that records failures instead of stopping the
// goroutine, so that a test can check that a check fails.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(f string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(f, args...))
}

func TestWantErr(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		err      error
		want     string
		fails    string // part of the failure; "" for none
		wantStop bool
	}{
		{"no error wanted, none", nil, "", "", false},
		{"no error wanted, one", errors.New("--x: bad"), "", "error --x: bad, want none", true},
		{"error wanted, none", nil, "--x must be positive", `no error, want one containing "--x must be positive"`, true},
		{"error wanted, another", errors.New("--y: bad"), "--x", `error --y: bad, want one containing "--x"`, true},
		{"error wanted, it", fmt.Errorf("options: %w", errors.New("--x must be positive, got 0")), "--x must be positive", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			stop := WantErr(r, tc.err, tc.want)
			if stop != tc.wantStop {
				t.Errorf("stop = %v, want %v", stop, tc.wantStop)
			}
			switch {
			case tc.fails == "" && len(r.failures) != 0:
				t.Errorf("failures %q, want none", r.failures)
			case tc.fails != "" && (len(r.failures) != 1 || !strings.Contains(r.failures[0], tc.fails)):
				t.Errorf("failures %q, want one containing %q", r.failures, tc.fails)
			}
		})
	}
}

// options is an Options with one flag, which must be positive.
type options struct{ every time.Duration }

func (o *options) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.every, "x.every", time.Second, "how often")
}

func (o *options) Validate() error {
	if o.every <= 0 {
		return fmt.Errorf("--x.every must be positive, got %s", o.every)
	}
	return nil
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		args  []string
		want  string // Validate's error; "" for none
		every time.Duration
	}{
		{"defaults", nil, "", time.Second},
		{"given", []string{"--x.every=2s"}, "", 2 * time.Second},
		{"refused", []string{"--x.every=0s"}, "--x.every must be positive, got 0s", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var o options
			err := Validate(t, &o, tc.args...)
			if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
				t.Errorf("Validate: %v, want %q", err, tc.want)
			}
			if o.every != tc.every {
				t.Errorf("every %s, want %s", o.every, tc.every)
			}
		})
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		args    []string
		fails   string // part of the failure; "" for none
		every   time.Duration
		changed bool
	}{
		{"defaults", nil, "", time.Second, false},
		{"given", []string{"--x.every=2s"}, "", 2 * time.Second, true},
		{"unknown flag", []string{"--x.never=1s"}, "unknown flag: --x.never", time.Second, false},
		{"bad value", []string{"--x.every=soon"}, `parsing ["--x.every=soon"]`, time.Second, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{TB: t}
			var every time.Duration
			fs := Parse(r, func(fs *pflag.FlagSet) { fs.DurationVar(&every, "x.every", time.Second, "how often") }, tc.args...)
			switch {
			case tc.fails == "" && len(r.failures) != 0:
				t.Fatalf("failures %q, want none", r.failures)
			case tc.fails != "" && (len(r.failures) != 1 || !strings.Contains(r.failures[0], tc.fails)):
				t.Fatalf("failures %q, want one containing %q", r.failures, tc.fails)
			}
			if every != tc.every || fs.Changed("x.every") != tc.changed {
				t.Errorf("every %s (changed %v), want %s (changed %v)", every, fs.Changed("x.every"), tc.every, tc.changed)
			}
		})
	}
}
