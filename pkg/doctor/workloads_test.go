package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// apiServerFor answers the access probe: 404 naming the object for the
// resources allowed, 403 for those forbidden, the mux's 404 for the rest.
func apiServerFor(t *testing.T, allowed, forbidden []string) func() (*rest.Config, error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(r.URL.Path, "/") // /apis/<group>/<version>/namespaces/<ns>/<resource>/<name>
		code, reason := 0, metav1.StatusReason("")
		switch {
		case contains(allowed, parts[6]):
			code, reason = http.StatusNotFound, metav1.StatusReasonNotFound
		case contains(forbidden, parts[6]):
			code, reason = http.StatusForbidden, metav1.StatusReasonForbidden
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure,
			Reason: reason, Code: int32(code), Details: &metav1.StatusDetails{Name: parts[7], Group: parts[2], Kind: parts[6]}})
	}))
	t.Cleanup(srv.Close)
	return func() (*rest.Config, error) { return &rest.Config{Host: srv.URL}, nil }
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestCheckWorkloadInfo(t *testing.T) {
	t.Parallel()
	all := []string{"replicasets", "jobs", "jobsets", "localqueues"}
	cases := []struct {
		name    string
		node    string
		config  func(t *testing.T) func() (*rest.Config, error)
		status  Status
		found   []string
		withFix bool
	}{
		{"all allowed", "n1", func(t *testing.T) func() (*rest.Config, error) { return apiServerFor(t, all, nil) }, OK, []string{"get allowed on replicasets, jobs, jobsets and localqueues"}, false},
		{"jobs forbidden", "n1", func(t *testing.T) func() (*rest.Config, error) {
			return apiServerFor(t, []string{"replicasets", "jobsets", "localqueues"}, []string{"jobs"})
		}, Fail, []string{"jobs.batch forbidden (403)", "pods of jobs have no gpu_workload_info"}, true},
		{"localqueues forbidden", "n1", func(t *testing.T) func() (*rest.Config, error) {
			return apiServerFor(t, []string{"replicasets", "jobs", "jobsets"}, []string{"localqueues"})
		}, Fail, []string{"localqueues.kueue.x-k8s.io forbidden (403): Kueue pods lack cluster_queue"}, true},
		{"jobsets forbidden", "n1", func(t *testing.T) func() (*rest.Config, error) {
			return apiServerFor(t, []string{"replicasets", "jobs", "localqueues"}, []string{"jobsets"})
		}, Fail, []string{"jobsets.jobset.x-k8s.io forbidden (403)", "lack queue and cluster_queue"}, true},
		{"no kueue", "n1", func(t *testing.T) func() (*rest.Config, error) {
			return apiServerFor(t, []string{"replicasets", "jobs", "jobsets"}, nil)
		},
			OK, []string{"localqueues.kueue.x-k8s.io not served"}, false},
		{"no jobset", "n1", func(t *testing.T) func() (*rest.Config, error) {
			return apiServerFor(t, []string{"replicasets", "jobs", "localqueues"}, nil)
		},
			OK, []string{"jobsets.jobset.x-k8s.io not served (JobSet not installed?)"}, false},
		{"no node name", "", func(t *testing.T) func() (*rest.Config, error) { return apiServerFor(t, all, nil) }, Fail, []string{"NODE_NAME"}, true},
		{"outside a cluster", "n1", func(*testing.T) func() (*rest.Config, error) {
			return func() (*rest.Config, error) { return nil, errors.New("not in a pod") }
		}, Fail, []string{"no in-cluster API access (not in a pod)"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Timeout: DefaultTimeout, NodeName: tc.node, WorkloadInfo: WorkloadInfo{Enabled: true, RESTConfig: tc.config(t)}}
			res := checkWorkloadInfo(context.Background(), cfg)
			if res.Status != tc.status || (res.Fix != "") != tc.withFix {
				t.Errorf("status %s fix %q, want %s (fix: %v); found %q", res.Status, res.Fix, tc.status, tc.withFix, res.Found)
			}
			for _, f := range tc.found {
				if !strings.Contains(res.Found, f) {
					t.Errorf("found %q lacks %q", res.Found, f)
				}
			}
		})
	}
}
