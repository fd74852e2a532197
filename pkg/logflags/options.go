// Package logflags holds the exporter's logging flags (--log.level,
// --log.format) and builds the promslog logger they describe.
package logflags

import (
	"io"
	"log/slog"

	"github.com/prometheus/common/promslog"
	"github.com/spf13/pflag"
)

// Options are the logging flags' values.
type Options struct {
	Level  *promslog.Level
	Format *promslog.Format
}

// AddFlags declares --log.level and --log.format.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Level = promslog.NewLevel()
	o.Format = promslog.NewFormat()
	fs.Var(value{o.Level, "level"}, "log.level", "Only log messages with the given severity or above: debug, info, warn, error.")
	fs.Var(value{o.Format, "format"}, "log.format", "Output format of log messages: logfmt or json.")
}

// Logger returns a logger writing to w at the flags' level and format.
func (o *Options) Logger(w io.Writer) *slog.Logger {
	return promslog.New(&promslog.Config{Level: o.Level, Format: o.Format, Writer: w})
}

// value adapts promslog's level and format to pflag.
type value struct {
	v interface {
		String() string
		Set(string) error
	}
	typ string
}

func (p value) String() string     { return p.v.String() }
func (p value) Set(s string) error { return p.v.Set(s) }
func (p value) Type() string       { return p.typ }
