package deploy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var kustomizeDir = filepath.Join(repoRoot, "deployment", "kubernetes")

// kustomizeBuild builds a kustomization, or a throwaway one that composes
// the base with components.
func kustomizeBuild(t *testing.T, dir string) ([]byte, []object) {
	t.Helper()
	out, err := run(nil, tool(t, "kustomize"), "build", dir)
	if err != nil {
		t.Fatal(err)
	}
	return out, parseObjects(t, out)
}

func TestKustomize(t *testing.T) {
	t.Parallel()
	tool(t, "kustomize")
	tool(t, "kubevalidate")
	// A kustomization that adds both monitor components to the base, as a
	// user's overlay would.
	both := filepath.Join(t.TempDir(), "both")
	if err := os.MkdirAll(both, 0o755); err != nil {
		t.Fatal(err)
	}
	rel := func(p string) string {
		r, err := filepath.Rel(both, filepath.Join(kustomizeDir, p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: gpu-exporter\nresources:\n  - " + rel("base") +
		"\ncomponents:\n  - " + rel("components/servicemonitor") + "\n  - " + rel("components/podmonitor") + "\n"
	if err := os.WriteFile(filepath.Join(both, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		dir      string
		want     want
		monitors []string
	}{
		{"base", filepath.Join(kustomizeDir, "base"), want{}, nil},
		{"overlays/remote-hostengine", filepath.Join(kustomizeDir, "overlays", "remote-hostengine"),
			want{remoteDCGM: "nvidia-dcgm.gpu-operator.svc:5555"}, []string{"ServiceMonitor"}},
		{"base+components", both, want{}, []string{"ServiceMonitor", "PodMonitor"}},
		{"overlays/process-accounting", filepath.Join(kustomizeDir, "overlays", "process-accounting"),
			want{podReader: true, hostProcesses: true}, nil},
		{"overlays/workload-info", filepath.Join(kustomizeDir, "overlays", "workload-info"),
			want{podReader: true}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, objs := kustomizeBuild(t, tc.dir)
			kubevalidate(t, out)
			checkWorkload(t, objs, tc.want)
			for _, o := range objs {
				if ns := get(o, "metadata", "namespace"); o.kind() != "Namespace" && !strings.HasPrefix(o.kind(), "Cluster") && ns != "gpu-exporter" {
					t.Errorf("%s %s in namespace %v, want gpu-exporter", o.kind(), o.name(), ns)
				}
			}
			var kinds []string
			for _, m := range append(find(objs, "ServiceMonitor"), find(objs, "PodMonitor")...) {
				kinds = append(kinds, m.kind())
				key := "endpoints"
				if m.kind() == "PodMonitor" {
					key = "podMetricsEndpoints"
				}
				checkMonitor(t, m, key, tc.want)
			}
			if !reflect.DeepEqual(kinds, tc.monitors) {
				t.Errorf("monitors = %v, want %v", kinds, tc.monitors)
			}
		})
	}
}

// The process-accounting overlay renders what the chart's
// processAccounting.enabled does.
func TestKustomizeProcessAccounting(t *testing.T) {
	t.Parallel()
	_, kobjs := kustomizeBuild(t, filepath.Join(kustomizeDir, "overlays", "process-accounting"))
	_, hobjs := render(t, chartDir, map[string]any{"processAccounting": map[string]any{"enabled": true}})
	kpod := get(only(t, kobjs, "DaemonSet"), "spec", "template", "spec")
	hpod := get(only(t, hobjs, "DaemonSet"), "spec", "template", "spec")
	for _, key := range []string{"hostPID", "volumes", "automountServiceAccountToken"} {
		if !equalYAML(get(kpod, key), get(hpod, key)) {
			t.Errorf("pod %s differs:\nkustomize %v\nhelm      %v", key, get(kpod, key), get(hpod, key))
		}
	}
	kexp, hexp := byName(list(kpod, "containers"), "exporter"), byName(list(hpod, "containers"), "exporter")
	for _, key := range []string{"args", "volumeMounts"} {
		if !equalYAML(kexp[key], hexp[key]) {
			t.Errorf("exporter %s differs:\nkustomize %v\nhelm      %v", key, kexp[key], hexp[key])
		}
	}
	var role object
	for _, o := range find(kobjs, "ClusterRole") {
		if o.name() == "gpu-exporter-pod-reader" {
			role = o
		}
	}
	if rules := list(role, "rules"); len(rules) != 1 || !reflect.DeepEqual(stringList(rules[0], "verbs"), []string{"list", "watch"}) {
		t.Errorf("pod-reader rules = %v, want list and watch on pods", rules)
	}
}

// The workload-info overlay renders what the chart's
// kubernetes.workloadInfo does: the flag at the same place, and the same
// pod-reader and workload-reader rules.
func TestKustomizeWorkloadInfo(t *testing.T) {
	t.Parallel()
	_, kobjs := kustomizeBuild(t, filepath.Join(kustomizeDir, "overlays", "workload-info"))
	_, hobjs := render(t, chartDir, map[string]any{"kubernetes": map[string]any{"workloadInfo": true}})
	kexp := byName(list(get(only(t, kobjs, "DaemonSet"), "spec", "template", "spec"), "containers"), "exporter")
	hexp := byName(list(get(only(t, hobjs, "DaemonSet"), "spec", "template", "spec"), "containers"), "exporter")
	if !equalYAML(kexp["args"], hexp["args"]) {
		t.Errorf("exporter args differ:\nkustomize %v\nhelm      %v", kexp["args"], hexp["args"])
	}
	rules := func(objs []object, name string) any {
		for _, o := range find(objs, "ClusterRole") {
			if strings.HasSuffix(o.name(), name) {
				return get(o, "rules")
			}
		}
		return nil
	}
	for _, name := range []string{"-pod-reader", "-workload-reader"} {
		k, h := rules(kobjs, name), rules(hobjs, name)
		if k == nil || !equalYAML(k, h) {
			t.Errorf("ClusterRole *%s rules differ:\nkustomize %v\nhelm      %v", name, k, h)
		}
	}
}

// TestKustomizeMatchesChart keeps the hand-written base in step with the
// chart's default rendering: the exporter container and the pod's
// scheduling and security must be the same.
func TestKustomizeMatchesChart(t *testing.T) {
	t.Parallel()
	_, kobjs := kustomizeBuild(t, filepath.Join(kustomizeDir, "base"))
	_, hobjs := render(t, chartDir, nil)
	kpod := get(only(t, kobjs, "DaemonSet"), "spec", "template", "spec")
	hpod := get(only(t, hobjs, "DaemonSet"), "spec", "template", "spec")
	for _, key := range []string{"affinity", "tolerations", "securityContext", "volumes", "priorityClassName", "automountServiceAccountToken"} {
		if !equalYAML(get(kpod, key), get(hpod, key)) {
			t.Errorf("pod %s differs:\nkustomize %v\nhelm      %v", key, get(kpod, key), get(hpod, key))
		}
	}
	kexp, hexp := byName(list(kpod, "containers"), "exporter"), byName(list(hpod, "containers"), "exporter")
	for _, key := range []string{"args", "env", "ports", "livenessProbe", "readinessProbe", "resources", "securityContext", "volumeMounts"} {
		if !equalYAML(kexp[key], hexp[key]) {
			t.Errorf("exporter %s differs:\nkustomize %v\nhelm      %v", key, kexp[key], hexp[key])
		}
	}
}
