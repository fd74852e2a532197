package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/doctor"
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
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
	output, rest, err := doctor.Args(args, doctorCommand)
	if err != nil {
		fmt.Fprintf(stderr, "gpu-exporter doctor: %v\n", err)
		return 2
	}
	o, fs, err := parseFlags(rest, getenv, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintln(stderr, "\n"+doctor.Usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpu-exporter doctor: %v\n", err)
		return 2
	}
	logger := o.log.Logger(stderr)
	a := &app{o: o, logger: logger, reg: prometheus.NewRegistry()}
	defer a.close()
	if a.cat, err = fields.New(); err != nil {
		fmt.Fprintf(stderr, "gpu-exporter doctor: %v\n", err)
		return 1
	}
	cfg := a.doctorConfig()
	cfg.Processes.Given = fs.Changed("collect.processes")
	report := doctor.Run(ctx, cfg)
	if err = report.Write(stdout, output); err != nil {
		fmt.Fprintf(stderr, "gpu-exporter doctor: writing the report: %v\n", err)
		return 1
	}
	if report.Failed() {
		return 1
	}
	return 0
}

// doctorConfig describes the exporter's configuration to the doctor, with
// the exporter's own source opener and web config reader.
func (a *app) doctorConfig() doctor.Config {
	o := a.o
	k := o.kubernetes.Config()
	return doctor.Config{
		Source: o.source.Kind, Traits: o.source.Traits(),
		Open: func(ctx context.Context) (source.Source, string, error) {
			socket, err := a.openSource(ctx)
			return a.src, socket, err
		},
		Catalog: a.cat, CountersFile: o.collect.CountersFile, DefaultFields: exposition.BuiltinCounters(o.naming.Naming, a.cat).Fields,
		WebConfigFile: o.web.WebConfigFile, WebConfigFiles: server.CheckWebConfigFiles,
		Kubernetes: doctor.Kubernetes{
			Enabled: o.kubernetes.Enabled, Socket: o.kubernetes.Socket,
			ResourceNames: k.ResourceNames, IDType: k.IDType, CallTimeout: k.CallTimeout,
		},
		Settle:    2 * o.collect.Interval,
		PodLabels: o.podLabels.Enabled(), WorkloadInfo: doctor.WorkloadInfo{Enabled: o.podLabels.Workloads},
		NodeName: o.nodeName, DRA: doctor.DRA{Mode: o.dra.Mode},
		Processes: doctor.Processes{
			Mode: o.processes.Mode, Naming: o.naming.Name, Runs: exposition.ExportsProcesses(o.naming.Naming),
			Sampling: func() *doctor.ProcessSampling {
				ps := a.procSampling // set by the opener when process accounting runs
				if ps == nil {
					return nil
				}
				return &doctor.ProcessSampling{Sampler: ps.Sampler, Procfs: ps.Procfs, HostPIDs: ps.HostPIDs, Pods: ps.Pods != nil}
			},
		},
	}
}
