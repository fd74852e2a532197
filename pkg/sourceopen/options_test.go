package sourceopen

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/flagtest"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// parse declares --source and every source's flags, in every place of
// --help, and parses args.
func parse(t *testing.T, args ...string) *Options {
	t.Helper()
	o := &Options{}
	flagtest.Parse(t, func(fs *pflag.FlagSet) {
		o.AddFlags(fs)
		o.AddFlagsAt(fs, source.AfterProcesses)
		o.AddFlagsAt(fs, source.Last)
	}, args...)
	return o
}

func TestOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ kind, want string }{
		{"auto", ""}, {"dcgm", ""}, {"nvml", ""}, {"sim", ""},
		{"cuda", `--source: unknown source "cuda" (want auto, dcgm, nvml or sim)`},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			o := parse(t, "--source="+tc.kind)
			flagtest.WantErr(t, o.Validate(), tc.want)
		})
	}
}

// TestAccountant: process accounting names pods from the simulator when
// it can, and without pods or NODE_NAME starts no informer of its own.
func TestAccountant(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := parse(t, "--source=sim", "--sim.scenario=timeslicing")
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	opened, err := o.Open(ctx, Settings{Processes: processes.ModeContainer}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	if opened.Processes == nil || opened.Processes.Pods == nil {
		t.Fatal("the simulator opened no process sampling with pods")
	}
	cases := []struct {
		name    string
		simPods bool
		node    string
		log     string
	}{
		{"the simulator's pods", true, "node-1", "process accounting on"},
		{"no pods, not in a pod", false, "", "process accounting on"},
		{"no pods, outside a cluster", false, "node-1", "process accounting cannot watch pods"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps := *opened.Processes
			if !tc.simPods {
				ps.Pods = nil
			}
			var log bytes.Buffer
			acc, started, err := ps.Accountant(processes.ModeContainer, nil, tc.node, slog.New(slog.NewTextHandler(&log, nil)), prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			defer acc.Close()
			if started != nil {
				started.Close()
				t.Error("an informer started outside a cluster")
			}
			if !strings.Contains(log.String(), tc.log) {
				t.Errorf("log %q lacks %q", log.String(), tc.log)
			}
			if warned := strings.Contains(log.String(), "cannot watch pods"); warned != (tc.node != "" && !tc.simPods) {
				t.Errorf("log %q: warned about pods %v", log.String(), warned)
			}
		})
	}
}
