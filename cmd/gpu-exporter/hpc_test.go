package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestHPCJobMappingDir runs the exporter in-process with a job-mapping
// directory written as a prolog would: series of GPU 0 carry the job, a job
// written later shows at a later refresh, and an epilog removing the file
// takes the label away.
func TestHPCJobMappingDir(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("0", "4242 user=alice partition=gpu\n")
	ctx, cancel := context.WithCancel(t.Context())
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--source=sim", "--kubernetes.enabled=false", "--web.listen-address=" + addr,
			"--collect.interval=100ms", "--hpc.job-mapping-dir=" + dir}, noEnv, io.Discard, &stderr, nil)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit code %d; log:\n%s", code, stderr.String())
		}
	}()
	base := "http://" + addr
	waitFor(t, base+"/readyz", http.StatusOK)

	jobsOf := func(fams map[string]*dto.MetricFamily, gpu string) map[string]map[string]string {
		out := map[string]map[string]string{}
		for _, m := range fams["gpu_temperature_celsius"].GetMetric() {
			if l := labels(m); l["gpu"] == gpu && l["hpc_job"] != "" {
				out[l["hpc_job"]] = l
			}
		}
		return out
	}
	poll := func(what string, ok func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			fams, _ := scrape(t, base+"/metrics")
			if ok(fams) {
				return fams
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never happened; log:\n%s", what, stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	fams := poll("job 4242 on GPU 0", func(f map[string]*dto.MetricFamily) bool { return jobsOf(f, "0")["4242"] != nil })
	if l := jobsOf(fams, "0")["4242"]; l["hpc_user"] != "alice" || l["hpc_partition"] != "gpu" || l["pod"] != "" {
		t.Errorf("job series labels = %v", l)
	}
	if fams["gpu_exporter_hpc_job_mapping_up"].GetMetric()[0].GetGauge().GetValue() != 1 {
		t.Error("gpu_exporter_hpc_job_mapping_up is not 1")
	}

	write("0", "4242 user=alice partition=gpu\n4243\n") // a second job shares GPU 0
	poll("two jobs on GPU 0", func(f map[string]*dto.MetricFamily) bool { return len(jobsOf(f, "0")) == 2 })
	if err := os.Remove(filepath.Join(dir, "0")); err != nil { // the epilog
		t.Fatal(err)
	}
	poll("no job on GPU 0", func(f map[string]*dto.MetricFamily) bool { return len(jobsOf(f, "0")) == 0 })
}

// TestHPCScenario is `make demo SCENARIO=hpc`: the simulator writes its
// jobs into a job-mapping directory of its own and the real reader labels
// the series, with no flag but the scenario.
func TestHPCScenario(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--source=sim", "--sim.scenario=hpc", "--web.listen-address=" + addr, "--collect.interval=100ms"}, noEnv, io.Discard, &stderr, nil)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit code %d; log:\n%s", code, stderr.String())
		}
	}()
	base := "http://" + addr
	waitFor(t, base+"/readyz", http.StatusOK)
	want := map[string]string{"0": "4242", "1": "4242", "2": "5001,5002", "3": "6001", "5": ""}
	deadline := time.Now().Add(20 * time.Second)
	for {
		fams, _ := scrape(t, base+"/metrics")
		got := map[string]string{}
		for _, m := range fams["gpu_utilization_ratio"].GetMetric() {
			l := labels(m)
			if got[l["gpu"]] != "" && l["hpc_job"] != "" {
				got[l["gpu"]] += ","
			}
			got[l["gpu"]] += l["hpc_job"]
		}
		ok := true
		for gpu, jobs := range want {
			ok = ok && got[gpu] == jobs
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hpc_job by GPU %v, want %v; log:\n%s", got, want, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
