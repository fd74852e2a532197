// Package sourceopen opens the GPU source that --source names. Its table
// (table.go) is the one place that knows every source: each source package
// describes itself (its flags, opener and doctor checks, source.Kind), and
// the rest of the exporter acts on the properties the table hands on
// (source.Traits), never on a source's name.
package sourceopen

import (
	"context"
	"log/slog"

	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Settings are what other packages' flags tell the source and the process
// sampling beside it.
type Settings struct {
	source.Settings
	// Processes opens process sampling beside the source unless
	// processes.ModeOff; Procfs is --path.procfs.
	Processes processes.Mode
	Procfs    string
}

// Opened is an open source, what was started with it, and the process
// sampling beside it.
type Opened struct {
	*source.Opened
	// Processes is process sampling (processes.go); nil when off.
	Processes *ProcessSampling
	// Pods answers for the pods of a simulated node what the Kubernetes
	// API would (their workloads), when its kubelet runs; nil otherwise.
	Pods *podlabels.Static
}

// Open opens the source --source names. On error nothing stays open.
func (o *Options) Open(ctx context.Context, s Settings, logger *slog.Logger) (_ *Opened, err error) {
	o.init(table())
	opened, err := o.selected().Open(ctx, s.Settings, logger)
	if err != nil {
		return nil, err
	}
	out := &Opened{Opened: opened}
	if sp, ok := opened.Source.(podlabels.Simulated); ok && s.Kubelet {
		out.Pods = sp.SimulatedPods()
	}
	if err := out.openProcesses(s, logger); err != nil {
		out.Close()
		return nil, err
	}
	return out, nil
}
