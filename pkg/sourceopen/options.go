package sourceopen

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Options is --source and the flags of every source in the table.
type Options struct {
	// Kind is the --source value: a name in the table.
	Kind  string
	kinds []source.Kind
	opts  []source.Options
}

// init makes the options of kinds (the table, unless a test adds to it)
// once.
func (o *Options) init(kinds []source.Kind) {
	if o.kinds != nil {
		return
	}
	o.kinds = kinds
	o.opts = make([]source.Options, len(kinds))
	for i, k := range kinds {
		if k.NewOptions != nil {
			o.opts[i] = k.NewOptions()
		}
	}
	for i, k := range kinds {
		if k.Name == auto {
			o.opts[i] = o.newAuto()
		}
	}
}

// AddFlags declares --source on fs, bound to o, and right after it the
// flags of the sources that have no other place in --help.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.init(table())
	usage := make([]string, len(o.kinds))
	for i, k := range o.kinds {
		usage[i] = k.Usage
	}
	fs.StringVar(&o.Kind, "source", auto, "GPU data source: "+either(usage)+".")
}

// AddFlagsAt declares the flags of the sources whose place in --help is
// place.
func (o *Options) AddFlagsAt(fs *pflag.FlagSet, place source.HelpPlace) {
	o.init(table())
	for i, k := range o.kinds {
		if k.HelpPlace == place {
			o.opts[i].AddFlags(fs)
		}
	}
}

// Validate checks --source and every source's flags, whichever is used.
func (o *Options) Validate() error {
	o.init(table())
	if o.selected() == nil {
		names := make([]string, len(o.kinds))
		for i, k := range o.kinds {
			names[i] = k.Name
		}
		return fmt.Errorf("--source: unknown source %q (want %s)", o.Kind, either(names))
	}
	for _, opt := range o.opts {
		if err := opt.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// Traits are the properties of the source --source names.
func (o *Options) Traits() source.Traits {
	return o.selected().Traits()
}

// selected is the options of the source --source names, or nil.
func (o *Options) selected() source.Options {
	for i, k := range o.kinds {
		if k.Name == o.Kind {
			return o.opts[i]
		}
	}
	return nil
}

// either joins "a, b, c or d".
func either(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
