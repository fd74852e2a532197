package main

import (
	"fmt"
	"regexp"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// validate applies the server-side checks that strict decoding does not
// cover. It is a subset of the API server's validation: the rules a chart
// template most easily breaks.
func validate(obj runtime.Object) []error {
	var errs []error
	if m, ok := obj.(metav1.Object); ok {
		errs = append(errs, validateMeta(m)...)
	}
	switch o := obj.(type) {
	case *appsv1.DaemonSet:
		errs = append(errs, validateSelector("spec.selector", o.Spec.Selector, o.Spec.Template.Labels)...)
		errs = append(errs, validatePodSpec("spec.template.spec", &o.Spec.Template.Spec)...)
	case *appsv1.Deployment:
		errs = append(errs, validateSelector("spec.selector", o.Spec.Selector, o.Spec.Template.Labels)...)
		errs = append(errs, validatePodSpec("spec.template.spec", &o.Spec.Template.Spec)...)
	case *corev1.Service:
		errs = append(errs, validateService(o)...)
	case *monitoringv1.ServiceMonitor:
		for i, ep := range o.Spec.Endpoints {
			errs = append(errs, validateRelabelings(fmt.Sprintf("spec.endpoints[%d].relabelings", i), ep.RelabelConfigs)...)
			errs = append(errs, validateRelabelings(fmt.Sprintf("spec.endpoints[%d].metricRelabelings", i), ep.MetricRelabelConfigs)...)
		}
	case *monitoringv1.PodMonitor:
		for i, ep := range o.Spec.PodMetricsEndpoints {
			errs = append(errs, validateRelabelings(fmt.Sprintf("spec.podMetricsEndpoints[%d].relabelings", i), ep.RelabelConfigs)...)
			errs = append(errs, validateRelabelings(fmt.Sprintf("spec.podMetricsEndpoints[%d].metricRelabelings", i), ep.MetricRelabelConfigs)...)
		}
	case *monitoringv1.PrometheusRule:
		errs = append(errs, validateRules(o)...)
	}
	return errs
}

func validateMeta(m metav1.Object) []error {
	var errs []error
	if m.GetName() == "" {
		errs = append(errs, fmt.Errorf("metadata.name: required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(m.GetName()) {
			errs = append(errs, fmt.Errorf("metadata.name %q: %s", m.GetName(), msg))
		}
	}
	for k, v := range m.GetLabels() {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, fmt.Errorf("metadata.labels key %q: %s", k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, fmt.Errorf("metadata.labels[%s] value %q: %s", k, v, msg))
		}
	}
	for k := range m.GetAnnotations() {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, fmt.Errorf("metadata.annotations key %q: %s", k, msg))
		}
	}
	return errs
}

func validateSelector(path string, sel *metav1.LabelSelector, podLabels map[string]string) []error {
	if sel == nil {
		return []error{fmt.Errorf("%s: required", path)}
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", path, err)}
	}
	if s.Empty() {
		return []error{fmt.Errorf("%s: empty selector", path)}
	}
	if !s.Matches(labels.Set(podLabels)) {
		return []error{fmt.Errorf("%s does not match the pod template's labels %v", path, podLabels)}
	}
	return nil
}

func validatePodSpec(path string, spec *corev1.PodSpec) []error {
	var errs []error
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		if volumes[v.Name] {
			errs = append(errs, fmt.Errorf("%s.volumes: duplicate name %q", path, v.Name))
		}
		volumes[v.Name] = true
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			errs = append(errs, fmt.Errorf("%s.volumes name %q: %s", path, v.Name, msg))
		}
	}
	if len(spec.Containers) == 0 {
		errs = append(errs, fmt.Errorf("%s.containers: at least one container is required", path))
	}
	names := map[string]bool{}
	for _, group := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range group {
			c := &group[i]
			if names[c.Name] {
				errs = append(errs, fmt.Errorf("%s: duplicate container name %q", path, c.Name))
			}
			names[c.Name] = true
			errs = append(errs, validateContainer(fmt.Sprintf("%s.containers[%s]", path, c.Name), c, volumes)...)
		}
	}
	return errs
}

func validateContainer(path string, c *corev1.Container, volumes map[string]bool) []error {
	var errs []error
	for _, msg := range validation.IsDNS1123Label(c.Name) {
		errs = append(errs, fmt.Errorf("%s name: %s", path, msg))
	}
	if c.Image == "" {
		errs = append(errs, fmt.Errorf("%s.image: required", path))
	}
	ports := map[string]bool{}
	for _, p := range c.Ports {
		if p.ContainerPort < 1 || p.ContainerPort > 65535 {
			errs = append(errs, fmt.Errorf("%s.ports: containerPort %d out of range", path, p.ContainerPort))
		}
		if p.Name == "" {
			continue
		}
		if ports[p.Name] {
			errs = append(errs, fmt.Errorf("%s.ports: duplicate name %q", path, p.Name))
		}
		ports[p.Name] = true
		for _, msg := range validation.IsValidPortName(p.Name) {
			errs = append(errs, fmt.Errorf("%s.ports name %q: %s", path, p.Name, msg))
		}
	}
	for _, e := range c.Env {
		for _, msg := range validation.IsEnvVarName(e.Name) {
			errs = append(errs, fmt.Errorf("%s.env name %q: %s", path, e.Name, msg))
		}
		if e.Value != "" && e.ValueFrom != nil {
			errs = append(errs, fmt.Errorf("%s.env %q: value and valueFrom are exclusive", path, e.Name))
		}
	}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			errs = append(errs, fmt.Errorf("%s.volumeMounts: no volume named %q", path, m.Name))
		}
		if !strings.HasPrefix(m.MountPath, "/") {
			errs = append(errs, fmt.Errorf("%s.volumeMounts %q: mountPath %q is not absolute", path, m.Name, m.MountPath))
		}
	}
	for name, p := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe, "startupProbe": c.StartupProbe} {
		if p == nil || p.HTTPGet == nil {
			continue
		}
		if port := p.HTTPGet.Port; port.StrVal != "" && !ports[port.StrVal] {
			errs = append(errs, fmt.Errorf("%s.%s: port %q is not a named port of the container", path, name, port.StrVal))
		}
	}
	return errs
}

func validateService(s *corev1.Service) []error {
	var errs []error
	for _, msg := range validation.IsDNS1035Label(s.Name) {
		errs = append(errs, fmt.Errorf("metadata.name %q (a Service name): %s", s.Name, msg))
	}
	if len(s.Spec.Selector) == 0 {
		errs = append(errs, fmt.Errorf("spec.selector: empty (the Service would select no pods)"))
	}
	for _, p := range s.Spec.Ports {
		if p.Port < 1 || p.Port > 65535 {
			errs = append(errs, fmt.Errorf("spec.ports: port %d out of range", p.Port))
		}
		if len(s.Spec.Ports) > 1 && p.Name == "" {
			errs = append(errs, fmt.Errorf("spec.ports: names are required when a Service has several ports"))
		}
		if p.Name != "" {
			for _, msg := range validation.IsDNS1123Label(p.Name) {
				errs = append(errs, fmt.Errorf("spec.ports name %q: %s", p.Name, msg))
			}
		}
	}
	return errs
}

// relabelActions are the actions prometheus-operator's CRDs accept.
var relabelActions = map[string]bool{
	"": true, "replace": true, "keep": true, "drop": true, "hashmod": true, "labelmap": true,
	"labeldrop": true, "labelkeep": true, "lowercase": true, "uppercase": true,
	"keepequal": true, "dropequal": true,
}

func validateRelabelings(path string, rcs []monitoringv1.RelabelConfig) []error {
	var errs []error
	for i, rc := range rcs {
		if !relabelActions[strings.ToLower(rc.Action)] {
			errs = append(errs, fmt.Errorf("%s[%d]: unknown action %q", path, i, rc.Action))
		}
		if rc.Regex != "" {
			// Prometheus anchors relabelling regexes; RE2 is its syntax.
			if _, err := regexp.Compile("^(?:" + rc.Regex + ")$"); err != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: regex: %w", path, i, err))
			}
		}
		action := strings.ToLower(rc.Action)
		if (action == "" || action == "replace") && (rc.TargetLabel == "") {
			errs = append(errs, fmt.Errorf("%s[%d]: action replace needs targetLabel", path, i))
		}
	}
	return errs
}

func validateRules(r *monitoringv1.PrometheusRule) []error {
	var errs []error
	if len(r.Spec.Groups) == 0 {
		errs = append(errs, fmt.Errorf("spec.groups: empty"))
	}
	for _, g := range r.Spec.Groups {
		for i, rule := range g.Rules {
			if (rule.Record == "") == (rule.Alert == "") {
				errs = append(errs, fmt.Errorf("group %q rule %d: exactly one of record and alert is required", g.Name, i))
			}
			if rule.Expr.String() == "" {
				errs = append(errs, fmt.Errorf("group %q rule %d: expr is required", g.Name, i))
			}
		}
	}
	return errs
}
