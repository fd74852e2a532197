package main

import (
	"context"
	"io"
	"math"
	"net/http"
	"os"
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
