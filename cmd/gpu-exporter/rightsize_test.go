package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
		{"unknown flag", []string{url, "--nope"}, 2, "unknown flag: --nope"},
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
