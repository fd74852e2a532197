package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/promslog"
	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/doctor"
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/server"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// doctorCommand is the subcommand's name: gpu-exporter doctor [flags].
const doctorCommand = "doctor"

// runDoctor checks the configuration the exporter's flags and environment
// describe, prints one line per check and returns 1 when a check failed,
// 2 on a usage error. --output (text or json) and --args-from are its own
// flags; every other flag is the exporter's.
func runDoctor(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	output, rest, err := doctorOutput(args)
	if err == nil {
		rest, err = argsFrom(rest)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpu-exporter doctor: %v\n", err)
		return 2
	}
	o, fs, err := parseFlags(rest, getenv, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintln(stderr, "\ngpu-exporter doctor [--output=text|json] [--args-from=/proc/1/cmdline] [exporter flags]: check what the exporter with these flags needs, once, and say how to fix what is broken.\n"+
			"--args-from reads the flags of a running exporter from its command line (NUL-separated, as /proc/PID/cmdline), before the flags given here.")
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpu-exporter doctor: %v\n", err)
		return 2
	}
	logger := promslog.New(&promslog.Config{Level: o.logLevel, Format: o.logFormat, Writer: stderr})
	a := &app{o: o, fs: fs, logger: logger, reg: prometheus.NewRegistry()}
	defer a.close()
	if a.cat, err = fields.New(); err != nil {
		fmt.Fprintf(stderr, "gpu-exporter doctor: %v\n", err)
		return 1
	}
	cfg, err := a.doctorConfig()
	if err != nil {
		fmt.Fprintf(stderr, "gpu-exporter doctor: %v\n", err)
		return 2
	}
	report := doctor.Run(ctx, cfg)
	if output == "json" {
		err = report.WriteJSON(stdout)
	} else {
		err = report.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpu-exporter doctor: writing the report: %v\n", err)
		return 1
	}
	if report.Failed() {
		return 1
	}
	return 0
}

// doctorOutput takes --output=FORMAT (or --output FORMAT) out of args.
func doctorOutput(args []string) (output string, rest []string, err error) {
	output = "text"
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--output" || arg == "-output":
			if i+1 == len(args) {
				return "", nil, errors.New("--output needs a value: text or json")
			}
			i++
			output = args[i]
		case strings.HasPrefix(arg, "--output="):
			output = strings.TrimPrefix(arg, "--output=")
		default:
			rest = append(rest, arg)
		}
	}
	if output != "text" && output != "json" {
		return "", nil, fmt.Errorf("--output=%q: want text or json", output)
	}
	return output, rest, nil
}

// argsFrom takes --args-from=FILE out of args and puts the flags of the
// command line FILE holds (NUL-separated, as /proc/PID/cmdline: the program
// name first) before the remaining args, so that a doctor started with
// kubectl exec checks the flags the running exporter was given.
func argsFrom(args []string) ([]string, error) {
	var file string
	var rest []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--args-from":
			if i+1 == len(args) {
				return nil, errors.New("--args-from needs a file, such as /proc/1/cmdline")
			}
			i++
			file = args[i]
		case strings.HasPrefix(a, "--args-from="):
			file = strings.TrimPrefix(a, "--args-from=")
		default:
			rest = append(rest, a)
		}
	}
	if file == "" {
		return rest, nil
	}
	data, err := os.ReadFile(file) //nolint:gosec // G304: the operator names the command line to read
	if err != nil {
		return nil, fmt.Errorf("--args-from: %w", err)
	}
	from := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	if len(from) == 0 || from[0] == "" {
		return nil, fmt.Errorf("--args-from %s: empty command line", file)
	}
	from = from[1:] // the program
	if len(from) > 0 && from[0] == doctorCommand {
		from = from[1:]
	}
	return append(from, rest...), nil
}

// doctorConfig describes the exporter's configuration to the doctor, with
// the exporter's own source opener and web config reader.
func (a *app) doctorConfig() (doctor.Config, error) {
	o := a.o
	idType, err := podresources.ParseIDType(o.k8sIDType)
	if err != nil {
		return doctor.Config{}, fmt.Errorf("--kubernetes.gpu-id-type: %w", err)
	}
	defaults := a.cat.Defaults()
	if o.namingMode == exposition.NamingDCGM {
		defaults, _ = a.cat.DCGMDefaults()
	}
	return doctor.Config{
		Source: o.source, Scenario: o.scenario, DCGMMode: o.dcgmMode, DCGMRemoteAddress: o.dcgmRemoteAddress,
		Open: func(ctx context.Context) (source.Source, string, error) {
			socket, err := a.openSource(ctx)
			return a.src, socket, err
		},
		Catalog: a.cat, CountersFile: o.countersCSV, DefaultFields: defaults,
		WebConfigFile: o.webConfigFile, WebConfigFiles: server.CheckWebConfigFiles,
		Kubernetes: doctor.Kubernetes{
			Enabled: o.k8sEnabled, Socket: o.k8sSocket,
			ResourceNames: append(podresources.DefaultResourceNames(), o.k8sResources...),
			IDType:        idType, CallTimeout: o.k8sCallTimeout,
		},
		Settle:    2 * o.interval,
		PodLabels: o.podAllow != nil || o.podUID,
		NodeName:  o.nodeName,
	}, nil
}
