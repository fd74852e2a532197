package doctor

import (
	"context"
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/tests/kubeapi"
)

func TestMain(m *testing.M) { os.Exit(kubeapi.Main(m)) }

// The dra check against a real API server: what it says for a service
// account without the role (403, the verb named), with a role lacking
// watch, with the role and no driver publishing for the node, and with
// NVIDIA's driver publishing; and without API access at all.
func TestCheckDRA(t *testing.T) {
	srv := kubeapi.Shared(t)
	srv.Create(t, kubeapi.ResourceSlices, map[string]any{
		"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": map[string]any{"name": "doctor-gpu"},
		"spec": map[string]any{"driver": "gpu.nvidia.com", "nodeName": "node-dr",
			"pool":    map[string]any{"name": "node-dr", "generation": int64(1), "resourceSliceCount": int64(1)},
			"devices": []any{map[string]any{"name": "gpu-0", "attributes": map[string]any{"type": map[string]any{"string": "gpu"}}}}},
	})
	account := func(ns string, verbs ...string) func() (*rest.Config, error) {
		srv.CreateNamespace(t, ns)
		srv.CreateServiceAccount(t, ns, "exporter")
		if len(verbs) > 0 {
			vs := make([]any, len(verbs))
			for i, v := range verbs {
				vs[i] = v
			}
			srv.Apply(t, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
				"metadata": map[string]any{"name": ns},
				"rules":    []any{map[string]any{"apiGroups": []any{"resource.k8s.io"}, "resources": []any{"resourceslices"}, "verbs": vs}}})
			srv.Apply(t, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
				"metadata": map[string]any{"name": ns},
				"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ns},
				"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "exporter", "namespace": ns}}})
		}
		cfg := srv.Config(srv.Token(t, ns, "exporter"))
		return func() (*rest.Config, error) { return cfg, nil }
	}
	full := account("dr-full", "get", "list", "watch")
	tests := []struct {
		name   string
		mode   string
		node   string
		config func() (*rest.Config, error)
		status Status
		found  string
	}{
		{"no role", "auto", "node-dr", account("dr-none"), Fail, "RBAC refuses list on resourceslices.resource.k8s.io/v1 (403)"},
		{"no watch", "auto", "node-dr", account("dr-list", "get", "list"), Fail, "RBAC refuses watch"},
		{"driver seen", "auto", "node-dr", full, OK, "ResourceSlices of gpu.nvidia.com"},
		{"no driver on node", "auto", "node-other", full, Warn, "no attributed DRA driver publishes for this node"},
		{"not in a pod", "auto", "node-dr", func() (*rest.Config, error) { return nil, rest.ErrNotInCluster }, Warn, "no in-cluster API access"},
		{"not in a pod, required", "true", "node-dr", func() (*rest.Config, error) { return nil, rest.ErrNotInCluster }, Fail, "no in-cluster API access"},
		{"no NODE_NAME", "auto", "", full, Warn, "NODE_NAME is empty"},
		{"off", "false", "node-dr", full, OK, "DRA attribution off"},
	}
	for _, tt := range tests {
		cfg := Config{Timeout: DefaultTimeout, NodeName: tt.node, DRA: DRA{Mode: tt.mode, RESTConfig: tt.config},
			Kubernetes: Kubernetes{Enabled: "auto", ResourceNames: podresources.DefaultResourceNames()}}
		res := checkDRA(context.Background(), cfg)
		if res.Status != tt.status || !strings.Contains(res.Found, tt.found) {
			t.Errorf("%s: %s %q, want %s containing %q", tt.name, res.Status, res.Found, tt.status, tt.found)
		}
		if res.Status != OK && res.Fix == "" && tt.name != "no driver on node" {
			t.Errorf("%s: no fix", tt.name)
		}
	}
}
