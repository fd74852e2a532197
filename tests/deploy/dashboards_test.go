package deploy

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// lastAppliedKey is the annotation in which client-side `kubectl apply`
// (and Argo CD's default apply) keeps a copy of the whole object.
const lastAppliedKey = "kubectl.kubernetes.io/last-applied-configuration"

// annotationsLimit is the API server's cap on an object's annotations, keys
// and values together (TotalAnnotationSizeLimitB in k8s.io/apimachinery's
// pkg/api/validation/objectmeta.go: 256 KiB).
const annotationsLimit = 256 * 1024

// lastAppliedSize is the size of an object's annotations once client-side
// apply has added its copy of the object: the copy (compact JSON, with the
// object's own annotations inside) plus the key, plus the object's own
// annotations.
func lastAppliedSize(t *testing.T, o object) int {
	t.Helper()
	copyJSON, err := json.Marshal(map[string]any(o))
	if err != nil {
		t.Fatal(err)
	}
	n := len(lastAppliedKey) + len(copyJSON)
	if ann, ok := get(o, "metadata", "annotations").(map[string]any); ok {
		for k, v := range ann {
			n += len(k) + len(v.(string))
		}
	}
	return n
}

// dashboardConfigMaps returns the ConfigMaps the chart renders for the
// Grafana dashboards.
func dashboardConfigMaps(t *testing.T, objs []object) []object {
	t.Helper()
	var out []object
	for _, cm := range find(objs, "ConfigMap") {
		if strings.Contains(cm.name(), "-dashboard-") {
			out = append(out, cm)
		}
	}
	return out
}

// dashboardData gathers the dashboards of every dashboard ConfigMap by
// file name, failing unless each ConfigMap holds exactly one.
func dashboardData(t *testing.T, objs []object) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, cm := range dashboardConfigMaps(t, objs) {
		data, _ := get(cm, "data").(map[string]any)
		if len(data) != 1 {
			t.Errorf("ConfigMap %s holds %d dashboards, want one", cm.name(), len(data))
		}
		for k, v := range data {
			out[k], _ = v.(string)
		}
	}
	if len(out) == 0 {
		t.Fatal("no dashboard ConfigMap")
	}
	return out
}

// chartDashboards lists the chart's dashboard files for a namespace label
// ("" or "namespace": files/dashboards/*.json).
func chartDashboards(t *testing.T, label string) []string {
	t.Helper()
	dir := filepath.Join(chartDir, "files", "dashboards")
	if label != "" && label != "namespace" {
		dir = filepath.Join(dir, label)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		files[i] = filepath.Base(f)
	}
	return files
}

// TestHelmDashboardsFitClientSideApply: the chart ships its dashboards one
// per ConfigMap, and each ConfigMap, once `kubectl apply` has copied it into
// its last-applied annotation, stays under the API server's annotation
// limit; a dashboard that grows past it fails here, not at a user's apply.
func TestHelmDashboardsFitClientSideApply(t *testing.T) {
	t.Parallel()
	for _, label := range []string{"namespace", "exported_namespace"} {
		t.Run(label, func(t *testing.T) {
			t.Parallel()
			files := chartDashboards(t, label)
			if len(files) == 0 {
				t.Skip("the chart holds no dashboards (make chart-sync)")
			}
			_, objs := render(t, chartDir, map[string]any{
				"dashboards": map[string]any{"enabled": true, "annotations": map[string]any{"grafana_folder": "GPUs"}},
				"monitoring": map[string]any{"namespaceLabel": label},
			})
			data := dashboardData(t, objs)
			var got []string
			for k := range data {
				got = append(got, k)
			}
			slices.Sort(got)
			if !slices.Equal(got, files) {
				t.Errorf("dashboards shipped = %v, want the chart's files %v", got, files)
			}
			for _, cm := range dashboardConfigMaps(t, objs) {
				if n := lastAppliedSize(t, cm); n > annotationsLimit {
					t.Errorf("ConfigMap %s: %d bytes of annotations after client-side apply, over the API server's %d", cm.name(), n, annotationsLimit)
				} else {
					t.Logf("ConfigMap %s: %d of %d bytes", cm.name(), n, annotationsLimit)
				}
			}
		})
	}
}

// TestLastAppliedSize: the size check counts what the API server counts,
// so the dashboards' single ConfigMap of old (417,637 bytes) would fail it.
func TestLastAppliedSize(t *testing.T) {
	t.Parallel()
	big := object{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "x", "annotations": map[string]any{"a": "b"}},
		"data":     map[string]any{"d.json": strings.Repeat(`{"x":"y"}`, 30000)}}
	n := lastAppliedSize(t, big)
	// 270,000 bytes of data, each quote escaped: 390,000 in the copy.
	if n <= annotationsLimit || n < 390000 {
		t.Errorf("lastAppliedSize = %d, want over %d (escaped copy of 270,000 bytes)", n, annotationsLimit)
	}
}
