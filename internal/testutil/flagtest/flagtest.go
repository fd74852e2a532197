// Package flagtest parses a package's flags and checks the error its
// validation returns, in the options tests of the packages that declare
// flags (AddFlags + Validate, docs/architecture.md). Tests only; the binary
// never links it (cmd/gpu-exporter/deps_test.go).
package flagtest

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// Parse declares flags with addFlags on a new flag set, parses args and
// returns the set (for Changed). A parse error fails t: a test's arguments
// are meant to parse, and Validate is what it checks.
func Parse(t testing.TB, addFlags func(*pflag.FlagSet), args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return fs
}

// Options is a package's options: flags declared by AddFlags, checked by
// Validate once parsed.
type Options interface {
	AddFlags(fs *pflag.FlagSet)
	Validate() error
}

// Validate parses args into o's flags, as Parse, and returns o's
// validation error.
func Validate(t testing.TB, o Options, args ...string) error {
	t.Helper()
	Parse(t, o.AddFlags, args...)
	return o.Validate()
}

// WantErr checks err against want, a substring of the error wanted, or ""
// for none: a missing, unexpected or different error fails t. It reports
// whether the caller should stop checking, which it should after any error:
// what follows checks a valid result.
func WantErr(t testing.TB, err error, want string) (stop bool) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("error %v, want none", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %v, want one containing %q", err, want)
	}
	return err != nil || want != ""
}
