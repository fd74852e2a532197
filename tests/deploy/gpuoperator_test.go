package deploy

import (
	"slices"
	"strings"
	"testing"
)

// The GPU Operator's Service, pods and ServiceMonitor for its
// dcgm-exporter (NVIDIA/gpu-operator, assets/state-dcgm-exporter/:
// 0400_service.yaml, 0500_service_monitor.yaml, 0800_daemonset.yaml): the
// label app=nvidia-dcgm-exporter on all of them, the Service port named
// gpu-metrics on 9400, and the monitor's jobLabel app with honorLabels
// unset (false; ClusterPolicy dcgmExporter.serviceMonitor.honorLabels
// overrides it, controllers/object_controls.go
// applyServiceMonitorCustomEdits).
const (
	operatorApp      = "nvidia-dcgm-exporter"
	operatorPortName = "gpu-metrics"
	operatorJobLabel = "app"
)

// TestHelmInPlaceOfOperatorDCGMExporter: gpuOperator.inPlace renders what
// the Operator renders for its own exporter, so that series keep
// job="nvidia-dcgm-exporter" and exported_namespace/exported_pod; it
// turns dcgm naming on, and the rules and dashboards, which read
// Prometheus names, are not installed.
func TestHelmInPlaceOfOperatorDCGMExporter(t *testing.T) {
	t.Parallel()
	out, err := helmTemplateArgs(t, chartDir, map[string]any{
		"gpuOperator": map[string]any{"inPlace": true},
		"podMonitor":  map[string]any{"enabled": true},
	}, monitoringAPIs)
	if err != nil {
		t.Fatal(err)
	}
	kubevalidate(t, out)
	objs := parseObjects(t, out)

	svc := only(t, objs, "Service")
	if get(svc, "metadata", "labels", "app") != operatorApp {
		t.Errorf("Service labels = %v, want app=%s", get(svc, "metadata", "labels"), operatorApp)
	}
	if p := get(svc, "spec", "ports", 0); get(p, "name") != operatorPortName || get(p, "port") != 9400 {
		t.Errorf("Service port = %v, want %s on 9400", p, operatorPortName)
	}
	pod := get(only(t, objs, "DaemonSet"), "spec", "template")
	if get(pod, "metadata", "labels", "app") != operatorApp {
		t.Errorf("pod labels = %v, want app=%s (the PodMonitor's job)", get(pod, "metadata", "labels"), operatorApp)
	}
	if args := stringList(exporterContainer(t, objs), "args"); !slices.Contains(args, "--naming=dcgm") {
		t.Errorf("exporter args %v lack --naming=dcgm", args)
	}
	for kind, key := range map[string]string{"ServiceMonitor": "endpoints", "PodMonitor": "podMetricsEndpoints"} {
		mon := only(t, objs, kind)
		if get(mon, "spec", "jobLabel") != operatorJobLabel {
			t.Errorf("%s jobLabel = %v, want %s", kind, get(mon, "spec", "jobLabel"), operatorJobLabel)
		}
		ep := get(mon, "spec", key, 0)
		if get(ep, "honorLabels") != false {
			t.Errorf("%s honorLabels = %v, want false", kind, get(ep, "honorLabels"))
		}
		// The target's namespace/pod/container must stay, so that the
		// exporter's own labels move to exported_*.
		if r := get(ep, "relabelings"); r != nil {
			t.Errorf("%s relabelings = %v, want none", kind, r)
		}
		if kind == "ServiceMonitor" && get(ep, "port") != operatorPortName {
			t.Errorf("ServiceMonitor port = %v, want %s", get(ep, "port"), operatorPortName)
		}
	}
	if n := len(find(objs, "PrometheusRule")) + len(dashboardConfigMaps(t, objs)); n != 0 {
		t.Errorf("%d PrometheusRules and dashboard ConfigMaps under dcgm naming, want none", n)
	}
}

// TestHelmNaming: the naming value passes --naming=dcgm (and nothing for
// the default, so that GPU_EXPORTER_NAMING in extraEnv still works); under
// dcgm naming from any source the rules and dashboards are left out when
// auto and refused when forced on.
func TestHelmNaming(t *testing.T) {
	t.Parallel()
	on := map[string]any{"prometheusRule": map[string]any{"enabled": "auto"}, "dashboards": map[string]any{"enabled": "auto"}}
	cases := []struct {
		name      string
		values    map[string]any
		wantArg   bool // --naming=dcgm among the chart's args
		wantRules bool // PrometheusRule and dashboards rendered
	}{
		{"default", map[string]any{}, false, true},
		{"naming=dcgm", map[string]any{"naming": "dcgm"}, true, false},
		{"dcgm through extraArgs", map[string]any{"extraArgs": []any{"--naming=dcgm"}}, true, false},
		{"dcgm through extraEnv", map[string]any{"extraEnv": []any{map[string]any{"name": "GPU_EXPORTER_NAMING", "value": "dcgm"}}}, false, false},
		{"naming=dcgm overridden in extraArgs", map[string]any{"naming": "dcgm", "extraArgs": []any{"--naming=prometheus"}}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for k, v := range on {
				tc.values[k] = v
			}
			out, err := helmTemplateArgs(t, chartDir, tc.values, monitoringAPIs)
			if err != nil {
				t.Fatal(err)
			}
			objs := parseObjects(t, out)
			if got := slices.Contains(stringList(exporterContainer(t, objs), "args"), "--naming=dcgm"); got != tc.wantArg {
				t.Errorf("--naming=dcgm in args: %v, want %v", got, tc.wantArg)
			}
			rules, dash := len(find(objs, "PrometheusRule")), len(dashboardConfigMaps(t, objs))
			if (rules > 0) != tc.wantRules || (dash > 0) != tc.wantRules {
				t.Errorf("%d PrometheusRules, %d dashboard ConfigMaps; want them rendered: %v", rules, dash, tc.wantRules)
			}
		})
	}
}

// TestHelmDCGMRelease: dcgmRelease passes --naming.dcgm-release under
// dcgm naming (naming: dcgm or gpuOperator.inPlace), nothing when empty or
// under Prometheus naming, and the schema refuses a release the exporter
// does not know.
func TestHelmDCGMRelease(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		values map[string]any
		want   string // the --naming.dcgm-release arg; "" for none
	}{
		{"default", map[string]any{"naming": "dcgm"}, ""},
		{"4.5.3-4.8.2", map[string]any{"naming": "dcgm", "dcgmRelease": "4.5.3-4.8.2"}, "--naming.dcgm-release=4.5.3-4.8.2"},
		{"in place", map[string]any{"gpuOperator": map[string]any{"inPlace": true}, "dcgmRelease": "4.6.0-4.8.3"}, "--naming.dcgm-release=4.6.0-4.8.3"},
		{"prometheus naming", map[string]any{"dcgmRelease": "4.5.3-4.8.2"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := helmTemplateArgs(t, chartDir, tc.values, monitoringAPIs)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range stringList(exporterContainer(t, parseObjects(t, out)), "args") {
				if strings.HasPrefix(a, "--naming.dcgm-release") {
					got = append(got, a)
				}
			}
			if want := slices.DeleteFunc([]string{tc.want}, func(s string) bool { return s == "" }); !slices.Equal(got, want) {
				t.Errorf("args %v, want %v", got, want)
			}
		})
	}
	if _, err := helmTemplateArgs(t, chartDir, map[string]any{"naming": "dcgm", "dcgmRelease": "4.9.0"}, monitoringAPIs); err == nil || !strings.Contains(err.Error(), "dcgmRelease") {
		t.Errorf("dcgmRelease 4.9.0: err %v, want the schema to refuse it", err)
	}
}

// TestHelmNamingAndOperatorRefusals: combinations that would mislead or
// undo what a value is for are refused at render time, saying why.
func TestHelmNamingAndOperatorRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{"process accounting beside the Operator", map[string]any{
			"gpuOperator": map[string]any{"enabled": true}, "processAccounting": map[string]any{"enabled": true},
		}, []string{"processAccounting.enabled with gpuOperator.enabled", "opens the GPU device nodes", "holds no device node"}},
		{"rules forced on under dcgm naming", map[string]any{
			"naming": "dcgm", "prometheusRule": map[string]any{"enabled": true},
		}, []string{"prometheusRule.enabled=true with dcgm naming (from the naming value)", "absent-alert would fire"}},
		{"dashboards forced on in place", map[string]any{
			"gpuOperator": map[string]any{"inPlace": true}, "dashboards": map[string]any{"enabled": true},
		}, []string{"dashboards.enabled=true with dcgm naming (from gpuOperator.inPlace)"}},
		{"in place with Prometheus naming", map[string]any{
			"gpuOperator": map[string]any{"inPlace": true}, "extraArgs": []any{"--naming=prometheus"},
		}, []string{"gpuOperator.inPlace replaces dcgm-exporter and needs dcgm naming", "from extraArgs"}},
		{"per-process accounting under the naming value", map[string]any{
			"naming": "dcgm", "processAccounting": map[string]any{"enabled": true, "mode": "process"},
		}, []string{"--naming=dcgm comes from the naming value"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := helmTemplate(t, chartDir, tc.values)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("want a refusal saying %q, got %v", w, err)
				}
			}
		})
	}
}
