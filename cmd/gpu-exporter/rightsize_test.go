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
	"time"
)

// TestRightsizeCommand: the subcommand's flags are checked before any
// query, and its answer reaches stderr with the exit code. The report
// itself is tested in pkg/rightsize.
func TestRightsizeCommand(t *testing.T) {
	t.Parallel()
	// A Prometheus with the rules loaded but nothing recorded yet.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/rules":
			fmt.Fprint(w, `{"status":"success","data":{"groups":[{"name":"g","file":"f","interval":60,"rules":[`+
				`{"type":"recording","name":"namespace_workload:gpu_allocated_hours:sum_1d","query":"vector(1)","health":"ok"}]}]}}`)
		default:
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		}
	}))
	t.Cleanup(srv.Close)
	url := "--prometheus.url=" + srv.URL
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no url", []string{}, 2, "--prometheus.url is required"},
		{"bad output", []string{url, "--output=yaml"}, 2, `--output="yaml"`},
		{"bad window", []string{url, "--window=2d"}, 2, `--window="2d"`},
		{"bad headroom", []string{url, "--headroom=-1"}, 2, "--headroom=-1"},
		{"bad coverage", []string{url, "--min-coverage=2"}, 2, "--min-coverage=2"},
		{"bad timeout", []string{url, "--timeout=0s"}, 2, "--timeout=0s"},
		{"timeout under the floor", []string{url, "--timeout=1ns"}, 2, "--timeout=1ns: want at least 100ms"},
		{"unknown flag", []string{url, "--nope"}, 2, "unknown flag: --nope"},
		{"url without a scheme", []string{"--prometheus.url=prometheus:9090"}, 2, `--prometheus.url="prometheus:9090": want an http:// or https:// URL`},
		{"url without a scheme or port", []string{"--prometheus.url=prometheus"}, 2, `--prometheus.url="prometheus"`},
		{"ftp url", []string{"--prometheus.url=ftp://prometheus:9090"}, 2, `--prometheus.url="ftp://prometheus:9090"`},
		{"file url", []string{"--prometheus.url=file:///run/prometheus"}, 2, `--prometheus.url="file:///run/prometheus"`},
		{"unix url", []string{"--prometheus.url=unix:///run/prometheus.sock"}, 2, `--prometheus.url="unix:///run/prometheus.sock"`},
		{"bad response cap", []string{url, "--prometheus.max-response-bytes=0"}, 2, "--prometheus.max-response-bytes=0"},
		{"bad namespace label", []string{url, "--namespace-label=a-b"}, 2, `--namespace-label="a-b": not a label name`},
		{"bad series cap", []string{url, "--prometheus.max-series=-1"}, 2, "--prometheus.max-series=-1"},
		{"rules missing for the window", []string{url, "--window=7d"}, 1, "no rule records namespace_workload:gpu_allocated_hours:sum_7d"},
		{"no data yet", []string{url, "--window=1d", "--output=csv"}, 1, "no right-sizing data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"rightsize"}, tt.args...), func(string) string { return "" }, &stdout, &stderr, nil)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), tt.code, tt.want)
			}
		})
	}
}

// TestRightsizeCommandReplies: what the operator sees for replies that
// once failed the run or misled: a NaN figure (a 0/0 in a recording)
// still prints JSON, exit 0; a server that answers but never finishes
// its reply ends the run at --timeout, named, exit 1, not "unreachable".
func TestRightsizeCommandReplies(t *testing.T) {
	t.Parallel()
	const rules = `{"status":"success","data":{"groups":[{"name":"g","file":"f","interval":60,"rules":[` +
		`{"type":"recording","name":"namespace_workload:gpu_allocated_hours:sum_1d","query":"vector(1)","health":"ok"}]}]}}`
	nan := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/rules" {
			fmt.Fprint(w, rules)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`+
			`{"metric":{"namespace":"ns","workload":"w","workload_type":"Job","model":"NVIDIA H100 80GB HBM3"},"value":[1.7e9,"NaN"]}]}}`)
	}))
	t.Cleanup(nan.Close)
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/rules" {
			fmt.Fprint(w, rules)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`)
		for r.Context().Err() == nil {
			if _, err := fmt.Fprint(w, `{"metric":{"workload":"w"},"value":[1,"1"]},`); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(time.Millisecond):
			}
		}
	}))
	t.Cleanup(endless.Close)
	tests := []struct {
		name    string
		args    []string
		code    int
		stdout  string
		stderr  string
		notWant string
	}{
		{"NaN as json", []string{"--prometheus.url=" + nan.URL, "--window=1d", "--output=json"}, 0, `"confidence": "low"`, "", "unsupported value"},
		{"NaN as table", []string{"--prometheus.url=" + nan.URL, "--window=1d"}, 0, "allocated GPU-hours is NaN", "", "high"},
		{"a reply that never ends", []string{"--prometheus.url=" + endless.URL, "--window=1d", "--timeout=500ms"}, 1, "",
			"the report did not finish within --timeout=500ms", "unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			done := make(chan int, 1)
			go func() {
				done <- run(context.Background(), append([]string{"rightsize"}, tt.args...), func(string) string { return "" }, &stdout, &stderr, nil)
			}()
			var code int
			select {
			case code = <-done:
			case <-time.After(time.Minute):
				t.Fatal("rightsize still running a minute in")
			}
			out := stdout.String() + stderr.String()
			if code != tt.code || !strings.Contains(stdout.String(), tt.stdout) || !strings.Contains(stderr.String(), tt.stderr) ||
				strings.Contains(out, tt.notWant) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, %q and %q, not %q", code, stdout.String(), stderr.String(),
					tt.code, tt.stdout, tt.stderr, tt.notWant)
			}
			if strings.Contains(tt.args[len(tt.args)-1], "json") {
				var rows []map[string]any
				if err := json.Unmarshal(stdout.Bytes(), &rows); err != nil || len(rows) != 1 {
					t.Errorf("json %v: %s", err, stdout.String())
				}
			}
		})
	}
}
