package resourceslices_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/resourceslices"
	"github.com/gpu-exporter/gpu-exporter/tests/kubeapi"
)

// grant binds a ClusterRole with verbs on resourceslices to a new
// ServiceAccount of namespace ns and returns its token.
func grant(t *testing.T, srv *kubeapi.Server, ns string, verbs ...string) string {
	t.Helper()
	srv.CreateNamespace(t, ns)
	srv.CreateServiceAccount(t, ns, "exporter")
	if len(verbs) > 0 {
		vs := make([]any, len(verbs))
		for i, v := range verbs {
			vs[i] = v
		}
		srv.Apply(t, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]any{"name": ns + "-slices"},
			"rules":    []any{map[string]any{"apiGroups": []any{"resource.k8s.io"}, "resources": []any{"resourceslices"}, "verbs": vs}}})
		srv.Apply(t, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
			"metadata": map[string]any{"name": ns + "-slices"},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ns + "-slices"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "exporter", "namespace": ns}}})
	}
	return srv.Token(t, ns, "exporter")
}

// gathered maps each series of reg ("name{l="v"}") to its value.
func gathered(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			k := mf.GetName()
			for _, l := range m.GetLabel() {
				k += `{` + l.GetName() + `="` + l.GetValue() + `"}`
			}
			out[k] = m.GetGauge().GetValue()
		}
	}
	return out
}

// ProbeNode names what is missing: the verb RBAC refuses, or nothing and
// the drivers publishing for the node.
func TestProbeNode(t *testing.T) {
	srv := kubeapi.Shared(t)
	srv.Create(t, kubeapi.ResourceSlices, nvidiaSlice("probe-gpu", "node-probe", 1, gpuDevice("0", gpu0, "0000:07:00.0")))
	ctx := context.Background()
	tests := []struct {
		ns        string
		verbs     []string
		condition string
		verb      string
	}{
		{"probe-none", nil, resourceslices.ConditionForbidden, "list"},
		{"probe-list", []string{"list"}, resourceslices.ConditionForbidden, "watch"},
		{"probe-all", []string{"get", "list", "watch"}, resourceslices.ConditionSynced, ""},
	}
	for _, tt := range tests {
		p := resourceslices.ProbeNode(ctx, srv.Config(grant(t, srv, tt.ns, tt.verbs...)), "node-probe")
		if p.Condition != tt.condition || p.Verb != tt.verb || p.Version != "v1" {
			t.Errorf("%s: probe %+v, want %s (verb %q) on v1", tt.ns, p, tt.condition, tt.verb)
		}
		if tt.condition == resourceslices.ConditionSynced && (strings.Join(p.Drivers, ",") != driver || p.Devices != 1) {
			t.Errorf("%s: drivers %v, %d devices; want %s, 1", tt.ns, p.Drivers, p.Devices, driver)
		}
	}
}

// The store's condition is a self-metric: forbidden without RBAC, synced
// with it, with the index's device count.
func TestStoreStateMetric(t *testing.T) {
	srv := kubeapi.Shared(t)
	srv.Create(t, kubeapi.ResourceSlices, nvidiaSlice("metric-gpu", "node-metric", 1,
		gpuDevice("0", gpu0, "0000:07:00.0"), gpuDevice("1", gpu1, "0000:0f:00.0")))
	for _, tc := range []struct {
		ns      string
		verbs   []string
		state   string
		devices float64
	}{
		{"metric-none", nil, resourceslices.ConditionForbidden, 0},
		{"metric-all", []string{"get", "list", "watch"}, resourceslices.ConditionSynced, 2},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		st, err := resourceslices.Start(ctx, srv.Config(grant(t, srv, tc.ns, tc.verbs...)), "node-metric", nil)
		if err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewPedanticRegistry()
		if err := st.Register(reg); err != nil {
			t.Fatal(err)
		}
		poll.Within(t, 10*time.Second, 20*time.Millisecond, tc.ns+": state "+tc.state, func() bool {
			return st.State().Condition() == tc.state
		})
		got := gathered(t, reg)
		for _, s := range resourceslices.Conditions() {
			want := 0.0
			if s == tc.state {
				want = 1
			}
			if v := got[`gpu_exporter_resourceslices_state{state="`+s+`"}`]; v != want {
				t.Errorf("%s: state %s = %v, want %v", tc.ns, s, v, want)
			}
		}
		if v := got["gpu_exporter_resourceslices_devices"]; v != tc.devices {
			t.Errorf("%s: %v devices, want %v", tc.ns, v, tc.devices)
		}
		if n, err := testutil.GatherAndCount(reg, "gpu_exporter_resourceslices_state"); err != nil || n != len(resourceslices.Conditions()) {
			t.Errorf("%s: %d state series (%v), want one per condition", tc.ns, n, err)
		}
		if lint, err := testutil.GatherAndLint(reg); err != nil || len(lint) > 0 {
			t.Errorf("%s: lint %v %v", tc.ns, lint, err)
		}
		cancel()
		st.Wait()
	}
}
