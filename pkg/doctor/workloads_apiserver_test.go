package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/gpu-exporter/gpu-exporter/tests/kubeapi"
)

// chartRBAC renders the chart as release namespace into namespace (its
// cluster-scoped RBAC named apart from other releases') with sets and
// applies its ServiceAccount and RBAC objects to srv; it returns a client
// config with the ServiceAccount's token.
func chartRBAC(t *testing.T, srv *kubeapi.Server, namespace string, sets ...string) *rest.Config {
	t.Helper()
	var args []string
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	sa := srv.ApplyChartRBAC(t, namespace, kubeapi.RenderChart(t, namespace, namespace, args...))
	return srv.Config(srv.Token(t, namespace, sa))
}

// The workload-info check against a real API server serving JobSet's CRD
// and Kueue's LocalQueue in v1beta2 only, with the chart's RBAC: every
// resource the workload resolution reads is allowed, the LocalQueues in
// the version served. Without kubernetes.workloadInfo the chart grants
// none of them, and the check says so.
func TestCheckWorkloadInfoChartRBAC(t *testing.T) {
	srv := kubeapi.Shared(t)
	srv.Create(t, kubeapi.CRDs, kubeapi.JobSetCRD())
	srv.Create(t, kubeapi.CRDs, kubeapi.LocalQueueCRD(kubeapi.Version{Name: "v1beta2", Served: true}))
	srv.WaitServed(t, schema.GroupVersionResource{Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"}, true)
	srv.WaitServed(t, schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"}, true)

	for _, tc := range []struct {
		namespace, set string
		status         Status
		found          []string
	}{
		{"wl-chart-on", "kubernetes.workloadInfo=true", OK, []string{"get allowed on replicasets, jobs, jobsets and localqueues"}},
		{"wl-chart-off", "kubernetes.workloadInfo=false", Fail, []string{
			"replicasets.apps forbidden (403)", "jobs.batch forbidden (403)",
			"jobsets.jobset.x-k8s.io forbidden (403)", "localqueues.kueue.x-k8s.io forbidden (403)",
		}},
	} {
		cfg := chartRBAC(t, srv, tc.namespace, "kubernetes.attribution=true", tc.set)
		check := func() Result {
			return checkWorkloadInfo(context.Background(), Config{Timeout: DefaultTimeout, NodeName: "n1",
				WorkloadInfo: WorkloadInfo{Enabled: true, RESTConfig: func() (*rest.Config, error) { return cfg, nil }}})
		}
		// The RBAC authorizer sees a new binding through its informers, a
		// moment after it is created.
		res := check()
		for deadline := time.Now().Add(30 * time.Second); res.Status != tc.status && time.Now().Before(deadline); res = check() {
			time.Sleep(100 * time.Millisecond)
		}
		if res.Status != tc.status {
			t.Errorf("%s: status %s, want %s; found %q", tc.set, res.Status, tc.status, res.Found)
		}
		for _, f := range tc.found {
			if !strings.Contains(res.Found, f) {
				t.Errorf("%s: found %q lacks %q", tc.set, res.Found, f)
			}
		}
	}
}
