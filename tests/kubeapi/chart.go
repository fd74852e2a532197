package kubeapi

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/tests/testbin"
)

// RenderChart renders the project's Helm chart as release into namespace,
// with helm's further args (--set, --api-versions), and returns its
// objects.
func RenderChart(t testing.TB, release, namespace string, args ...string) []map[string]any {
	t.Helper()
	args = append([]string{"template", release, filepath.Join(testbin.Root(), "deployment", "helm", "gpu-exporter"),
		"--namespace", namespace}, args...)
	cmd := exec.Command(testbin.Tool(t, "helm"), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, stderr.String())
	}
	var objs []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var o map[string]any
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatal(err)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
}

// ApplyChartRBAC creates namespace and applies the ServiceAccount and
// every RBAC object of the chart's objs; it returns the ServiceAccount's
// name.
func (s *Server) ApplyChartRBAC(t testing.TB, namespace string, objs []map[string]any) string {
	t.Helper()
	s.CreateNamespace(t, namespace)
	sa := ""
	for _, o := range objs {
		switch o["kind"] {
		case "ServiceAccount":
			sa = o["metadata"].(map[string]any)["name"].(string)
			s.Apply(t, o)
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			s.Apply(t, o)
		}
	}
	if sa == "" {
		t.Fatal("the chart renders no ServiceAccount")
	}
	return sa
}
