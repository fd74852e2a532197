package sourceopen

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Options is the --source flag.
type Options struct {
	// Kind is auto, dcgm, nvml or sim.
	Kind string
}

// AddFlags declares --source on fs, bound to o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kind, "source", "auto", "GPU data source: auto (DCGM, else NVML), dcgm, nvml or sim (built-in simulator).")
}

// Validate checks --source.
func (o *Options) Validate() error {
	switch o.Kind {
	case "auto", "dcgm", "nvml", "sim":
		return nil
	}
	return fmt.Errorf("--source: unknown source %q (want auto, dcgm, nvml or sim)", o.Kind)
}
