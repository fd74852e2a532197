package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// What `make demo SCENARIO=timeslicing` shows: per-container utilization
// on shared GPUs, different for the pods sharing GPU 0, adding up to each
// GPU's utilization; and nothing of it with --collect.processes=off.
func TestTimeslicingDemoAttributesProcesses(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"container", "off"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			addr := freeAddr(t)
			ctx, cancel := context.WithCancel(t.Context())
			var stderr syncBuffer
			done := make(chan int, 1)
			go func() {
				done <- run(ctx, []string{"--source=sim", "--sim.scenario=timeslicing", "--web.listen-address=" + addr,
					"--collect.interval=200ms", "--collect.processes=" + mode}, noEnv, io.Discard, &stderr, make(chan os.Signal, 1))
			}()
			defer func() {
				cancel()
				<-done
			}()
			base := "http://" + addr
			waitFor(t, base+"/readyz", http.StatusOK)
			fams, _ := scrape(t, base+"/metrics")
			if mode == "off" {
				if fams["gpu_container_utilization_ratio"] != nil || fams["gpu_exporter_process_accounting_pod_names"] != nil {
					t.Error("process accounting families with --collect.processes=off")
				}
				return
			}
			checkSharesAddUp(t, fams)
		})
	}
}

func checkSharesAddUp(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	device := map[string]float64{}
	for _, m := range fams["gpu_utilization_ratio"].GetMetric() {
		device[labels(m)["uuid"]] = m.GetGauge().GetValue()
	}
	sum := map[string]float64{}
	gpu0 := map[string]float64{}
	for _, m := range fams["gpu_container_utilization_ratio"].GetMetric() {
		l := labels(m)
		sum[l["uuid"]] += m.GetGauge().GetValue()
		if l["gpu"] == "0" {
			gpu0[l["pod"]] = m.GetGauge().GetValue()
		}
	}
	if len(sum) != 4 {
		t.Fatalf("per-container utilization on %d GPUs, want 4", len(sum))
	}
	for uuid, s := range sum {
		if math.Abs(s-device[uuid]) > 0.005 {
			t.Errorf("%s: containers add up to %v, the GPU reports %v", uuid, s, device[uuid])
		}
	}
	if gpu0["shared-a"] <= gpu0["shared-b"] || gpu0["shared-b"] != 0 {
		t.Errorf("GPU 0 per pod = %v; want busy shared-a and idle shared-b told apart", gpu0)
	}
}

// Dcgm naming has no process accounting families, so process accounting
// does not run under it: --collect.processes=process given there, on the
// command line or through its environment twin, is refused with both
// flags named; container given there starts with a warning; the default
// and off start silently.
func TestProcessesUnderDCGMNaming(t *testing.T) {
	t.Parallel()
	const idleWarning = "--collect.processes has no effect with this naming"
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		refused bool
		warned  bool
	}{
		{"process, dcgm naming", []string{"--collect.processes=process", "--naming=dcgm"}, nil, true, false},
		{"process from its environment twin", []string{"--naming=dcgm"}, map[string]string{"GPU_EXPORTER_COLLECT_PROCESSES": "process"}, true, false},
		{"dcgm naming from its environment twin", []string{"--collect.processes=process"}, map[string]string{"GPU_EXPORTER_NAMING": "dcgm"}, true, false},
		{"container given, dcgm naming", []string{"--collect.processes=container", "--naming=dcgm"}, nil, false, true},
		{"default mode, dcgm naming", []string{"--naming=dcgm"}, nil, false, false},
		{"off, dcgm naming", []string{"--collect.processes=off", "--naming=dcgm"}, nil, false, false},
		{"process, prometheus naming", []string{"--collect.processes=process"}, nil, false, false},
		{"container, prometheus naming", []string{"--collect.processes=container", "--naming=prometheus"}, nil, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, fs, err := parseFlags(tc.args, envFrom(tc.env), io.Discard)
			if tc.refused {
				if err == nil || !strings.Contains(err.Error(), "--collect.processes=process") || !strings.Contains(err.Error(), "--naming=dcgm") {
					t.Fatalf("error = %v; want a refusal naming --collect.processes=process and --naming=dcgm", err)
				}
				var stderr syncBuffer
				if code := run(t.Context(), tc.args, envFrom(tc.env), io.Discard, &stderr, nil); code != 2 {
					t.Errorf("exit code = %d, want 2 (stderr %q)", code, stderr.String())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			logCompat(slog.New(slog.NewTextHandler(&logs, nil)), o, fs)
			if got := strings.Contains(logs.String(), idleWarning); got != tc.warned {
				t.Errorf("warned %v, want %v:\n%s", got, tc.warned, logs.String())
			}
		})
	}
}
