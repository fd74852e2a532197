package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/collector"
	"github.com/gpu-exporter/gpu-exporter/pkg/dcgmflags"
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/hpcjobs"
	"github.com/gpu-exporter/gpu-exporter/pkg/logflags"
	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/resourceslices"
	"github.com/gpu-exporter/gpu-exporter/pkg/server"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/sourceopen"
)

// envPrefix prefixes the environment twin of every flag:
// --collect.interval is GPU_EXPORTER_COLLECT_INTERVAL.
const envPrefix = "GPU_EXPORTER_"

// options holds every command-line setting: each package's options, in
// the order --help lists them, and the logging flags.
type options struct {
	web server.Options
	// source is --source and every source's own flags, which stand in
	// --help where their source places them.
	source     sourceopen.Options
	collect    collector.Options
	processes  processes.Options
	naming     exposition.NamingOptions
	kubernetes podresources.Options
	podLabels  podlabels.Options
	dra        resourceslices.Options
	hpc        hpcjobs.Options

	log logflags.Options

	version bool

	// nodeName is $NODE_NAME: the node whose pods the informer watches,
	// the hostname label's value in dcgm naming.
	nodeName string
	// dcgmExporter records the dcgm-exporter flags and environment
	// variables given, for the start-up log.
	dcgmExporter dcgmflags.Use
}

func newFlagSet(o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("gpu-exporter", pflag.ContinueOnError)
	fs.SortFlags = false
	o.web.AddFlags(fs)
	o.source.AddFlags(fs)
	o.collect.AddFlags(fs)
	o.processes.AddFlags(fs)
	o.source.AddFlagsAt(fs, source.AfterProcesses)
	o.naming.AddFlags(fs)
	o.kubernetes.AddFlags(fs)
	o.podLabels.AddFlags(fs)
	o.dra.AddFlags(fs)
	o.hpc.AddFlags(fs)
	o.source.AddFlagsAt(fs, source.Last)
	o.log.AddFlags(fs)
	fs.BoolVarP(&o.version, "version", "v", false, "Print version information and exit.")
	return fs
}

// envName returns the environment twin of a flag name.
func envName(flag string) string {
	r := strings.NewReplacer(".", "_", "-", "_")
	return envPrefix + strings.ToUpper(r.Replace(flag))
}

// validate checks every flag, each package its own, and fills the values
// derived from them; then the checks across packages' flags. Each error
// names its flag. Files (counters, scenario, web config) are checked when
// they are read, with a deadline. changed says which flags were given.
func (o *options) validate(changed func(flag string) bool) error {
	for _, check := range []func() error{
		o.web.Validate, o.source.Validate, o.collect.Validate, o.processes.Validate, o.naming.Validate,
		func() error { return o.kubernetes.Validate(o.collect.Interval) }, o.podLabels.Validate, o.dra.Validate,
		func() error { return o.hpc.Validate(o.collect.Interval) },
	} {
		if err := check(); err != nil {
			return err
		}
	}
	_, err := o.processesIdle(changed)
	return err
}

// processesIdle is processes.Options.CheckNaming under the naming given.
func (o *options) processesIdle(changed func(flag string) bool) (idle bool, err error) {
	return o.processes.CheckNaming(exposition.ExportsProcesses(o.naming.Naming), o.naming.Name, changed("collect.processes"))
}

// parseFlags parses args, then fills every flag not given on the command
// line from its GPU_EXPORTER_* environment twin, then validates.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (*options, *pflag.FlagSet, error) {
	o := &options{}
	fs := newFlagSet(o)
	aliases := dcgmflags.Declare(fs)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: gpu-exporter [flags]\n       gpu-exporter <command> [flags]   (gpu-exporter <command> --help: its flags)\n\nCommands:\n")
		for _, c := range commands(getenv) {
			fmt.Fprintf(stderr, "  %-10s %s\n", c.name, c.summary)
		}
		fmt.Fprintf(stderr, "\nFlags (serving /metrics). Every flag can also be set through its environment twin, e.g. --collect.interval through %s.\n"+
			"dcgm-exporter's flags and environment variables are accepted where they mean something here (listed last).\n\n", envName("collect.interval"))
		fs.PrintDefaults()
	}
	if err := fs.Parse(dcgmflags.LongForms(args)); err != nil {
		return nil, fs, err
	}
	if fs.NArg() > 0 {
		return nil, fs, fmt.Errorf("unexpected argument %q: gpu-exporter takes flags, or a command first (doctor, rightsize, help; see --help)", fs.Arg(0))
	}
	// Precedence: the command line (our flags or dcgm-exporter's), then
	// GPU_EXPORTER_* variables, then dcgm-exporter's variables.
	if err := aliases.ApplyFlags(fs, &o.dcgmExporter); err != nil {
		return nil, fs, err
	}
	if err := aliases.ApplyEnv(fs, getenv, envName, &o.dcgmExporter); err != nil {
		return nil, fs, err
	}
	o.nodeName = getenv("NODE_NAME")
	if err := o.validate(fs.Changed); err != nil {
		return o, fs, o.dcgmExporter.Explain(err)
	}
	return o, fs, nil
}
