package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// promVector is a Prometheus API instant-query answer holding samples
// given as label sets and values.
func promVector(samples ...string) string {
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",") + `]}}`
}

func promSample(labels, value string) string {
	return fmt.Sprintf(`{"metric":{%s},"value":[1700000000,"%s"]}`, labels, value)
}

// fakePrometheus answers /api/v1/query from answers, keyed by a prefix of
// the query; any other query gets an empty vector.
func fakePrometheus(t *testing.T, answers map[string]string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query().Get("query")
		for prefix, a := range answers {
			if strings.HasPrefix(q, prefix) {
				fmt.Fprint(w, a)
				return
			}
		}
		fmt.Fprint(w, promVector())
	}))
	t.Cleanup(srv.Close)
	return srv
}

const (
	trainer  = `"namespace":"ml","workload":"trainer"`
	notebook = `"namespace":"research","workload":"notebook"`
	finetune = `"namespace":"ml","workload":"finetune"`
)

var cannedWeek = map[string]string{
	"namespace_workload:gpu_allocated_hours:sum_7d": promVector(
		promSample(trainer, "1344"), promSample(notebook, "168"), promSample(finetune, "84")),
	"namespace_workload:gpu_device_memory_used_bytes:max_7d": promVector(
		promSample(trainer, "70e9"), promSample(notebook, "8e9"), promSample(finetune, "30e9")),
	"namespace_workload:gpu_device_utilization_ratio:p95_7d": promVector(
		promSample(trainer, "0.97"), promSample(notebook, "0.02"), promSample(finetune, "0.9")),
	"max by (namespace, workload, model, mig_profile)": promVector(
		promSample(trainer+`,"model":"NVIDIA H100 80GB HBM3"`, "8"),
		promSample(notebook+`,"model":"NVIDIA H100 80GB HBM3"`, "1"),
		promSample(finetune+`,"model":"NVIDIA H100 80GB HBM3","mig_profile":"3g.40gb"`, "1")),
}

func TestRightsizeJSON(t *testing.T) {
	t.Parallel()
	srv := fakePrometheus(t, cannedWeek)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"rightsize", "--prometheus.url=" + srv.URL, "--output=json"}, func(string) string { return "" }, &stdout, &stderr, nil)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	var rows []struct {
		Namespace, Workload, Current, Recommendation string
		FreedGPUHours                                float64 `json:"freed_gpu_hours"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rows); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	want := []struct {
		ns, wl, cur, rec string
		freed            float64
	}{
		{"ml", "finetune", "3g.40gb", "keep", 0},
		{"ml", "trainer", "8 GPU", "keep", 0},
		{"research", "notebook", "1 GPU", "1g.10gb", 168 * (1 - 10.0/80)},
	}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d:\n%s", len(rows), len(want), stdout.String())
	}
	for i, w := range want {
		r := rows[i]
		if r.Namespace != w.ns || r.Workload != w.wl || r.Current != w.cur || r.Recommendation != w.rec || r.FreedGPUHours != w.freed {
			t.Errorf("row %d = %+v, want %+v", i, r, w)
		}
	}
}

func TestRightsizeText(t *testing.T) {
	t.Parallel()
	srv := fakePrometheus(t, cannedWeek)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"rightsize", "--prometheus.url=" + srv.URL}, func(string) string { return "" }, &stdout, &stderr, nil); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	for _, want := range []string{"GPU-H (7d)", "notebook", "1g.10gb", "147.0"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestRightsizeErrors(t *testing.T) {
	t.Parallel()
	empty := fakePrometheus(t, nil)
	bad := fakePrometheus(t, map[string]string{"namespace_workload": `{"status":"error","error":"parse error"}`})
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no url", []string{"rightsize"}, 2, "--prometheus.url is required"},
		{"bad output", []string{"rightsize", "--prometheus.url=" + empty.URL, "--output=csv"}, 2, `--output="csv"`},
		{"bad window", []string{"rightsize", "--prometheus.url=" + empty.URL, "--window=2d"}, 1, `window "2d"`},
		{"no recordings", []string{"rightsize", "--prometheus.url=" + empty.URL}, 1, "no right-sizing recordings"},
		{"query error", []string{"rightsize", "--prometheus.url=" + bad.URL}, 1, "parse error"},
		{"unreachable", []string{"rightsize", "--prometheus.url=" + down.URL}, 1, "unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, func(string) string { return "" }, &stdout, &stderr, nil)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), tt.code, tt.want)
			}
		})
	}
}
