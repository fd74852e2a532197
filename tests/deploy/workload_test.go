package deploy

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// want describes what a rendering must contain; the zero value is the
// chart's defaults.
type want struct {
	noAttribution bool   // kubernetes.attribution=false
	profiling     bool   // SYS_ADMIN added
	rbacProxy     bool   // kube-rbac-proxy sidecar
	https         bool   // probes and monitors over TLS
	basicAuth     bool   // probes are TCP checks
	healthPort    int    // probes use the plain health listener on this port
	podReader     bool   // pod labels or UIDs: the exporter reads pods
	remoteDCGM    string // --dcgm.remote-address, when remote
	hostProcesses bool   // processAccounting: hostPID and the host's /proc
	// noDRA: no DRA attribution (kubernetes.dra=false, or auto on a cluster
	// that serves no resource.k8s.io; `helm template` says it does).
	noDRA bool
}

// dra reports whether the exporter reads ResourceSlices: the chart then
// grants the dra-reader ClusterRole and mounts the token.
func (w want) dra() bool { return !w.noAttribution && !w.noDRA }

const podResourcesDir = "/var/lib/kubelet/pod-resources"

// checkWorkload asserts the facts every rendering of the exporter must
// hold, for the chart and the kustomize manifests alike.
func checkWorkload(t *testing.T, objs []object, w want) {
	t.Helper()
	ds := only(t, objs, "DaemonSet")
	pod := get(ds, "spec", "template", "spec")
	containers := list(pod, "containers")
	exp := byName(containers, "exporter")
	if exp == nil {
		t.Fatalf("no container named exporter in %v", containers)
	}

	checkScheduling(t, pod)
	checkSecurity(t, pod, exp, w)
	checkPodResourcesMount(t, pod, exp, w)
	checkEnv(t, exp)
	checkProbes(t, exp, w)
	checkExporterArgs(t, exp, w)

	if r := get(exp, "resources"); get(r, "requests", "cpu") == nil || get(r, "requests", "memory") == nil || get(r, "limits", "memory") == nil {
		t.Errorf("exporter resources: want cpu and memory requests and a memory limit, got %v", r)
	}
	if got, wantToken := get(pod, "automountServiceAccountToken"), w.rbacProxy || w.podReader || w.dra(); got != wantToken {
		t.Errorf("automountServiceAccountToken = %v, want %v (only kube-rbac-proxy, the pod informer and the ResourceSlice informer need the API)", got, wantToken)
	}
	checkDRARBAC(t, objs, exp, w)

	proxy := byName(containers, "kube-rbac-proxy")
	if (proxy != nil) != w.rbacProxy {
		t.Fatalf("kube-rbac-proxy container present = %v, want %v", proxy != nil, w.rbacProxy)
	}
	metricsOwner := exp
	if w.rbacProxy {
		metricsOwner = proxy
		checkRBACProxy(t, objs, proxy)
	}
	port := byName(list(metricsOwner, "ports"), "metrics")
	if port == nil || port["containerPort"] != 9400 {
		t.Errorf("container %v: want port metrics 9400, got %v", metricsOwner["name"], list(metricsOwner, "ports"))
	}
	for _, svc := range find(objs, "Service") {
		p := list(svc, "spec", "ports")
		if len(p) != 1 || p[0]["name"] != "metrics" || p[0]["port"] != 9400 || p[0]["targetPort"] != "metrics" {
			t.Errorf("Service %s ports = %v, want one port metrics 9400 -> metrics", svc.name(), p)
		}
	}
}

// gpuNodeLabelKeys are the node labels that mark an NVIDIA GPU node, one
// per source (docs/deployment.md lists them); the default affinity must
// select each. TestHelmAffinityMatchesGPUNodes evaluates the terms.
var gpuNodeLabelKeys = []string{
	"nvidia.com/gpu.present",
	"feature.node.kubernetes.io/pci-10de.present",
	"feature.node.kubernetes.io/pci-0302_10de.present",
	"feature.node.kubernetes.io/pci-0300_10de.present",
	"cloud.google.com/gke-accelerator",
	"kubernetes.azure.com/accelerator",
	"k8s.amazonaws.com/accelerator",
	"karpenter.k8s.aws/instance-gpu-manufacturer",
	"eks.amazonaws.com/instance-gpu-manufacturer",
}

func checkScheduling(t *testing.T, pod any) {
	t.Helper()
	tolerated := false
	for _, tol := range list(pod, "tolerations") {
		if tol["key"] == "nvidia.com/gpu" && tol["operator"] == "Exists" {
			tolerated = true
		}
	}
	if !tolerated {
		t.Errorf("no toleration for the nvidia.com/gpu taint: %v", get(pod, "tolerations"))
	}
	terms := list(pod, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
	var keys []string
	for _, term := range terms {
		for _, e := range list(term, "matchExpressions") {
			keys = append(keys, fmt.Sprint(e["key"]))
		}
	}
	for _, k := range gpuNodeLabelKeys {
		if !slices.Contains(keys, k) {
			t.Errorf("node affinity does not select on %s (keys: %v)", k, keys)
		}
	}
}

func checkSecurity(t *testing.T, pod any, exp map[string]any, w want) {
	t.Helper()
	sc := get(exp, "securityContext")
	for key, v := range map[string]any{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true} {
		if got := get(sc, key); got != v {
			t.Errorf("exporter securityContext.%s = %v, want %v", key, got, v)
		}
	}
	if p := get(sc, "privileged"); p == true {
		t.Error("exporter is privileged")
	}
	if got := stringList(sc, "capabilities", "drop"); !reflect.DeepEqual(got, []string{"ALL"}) {
		t.Errorf("capabilities.drop = %v, want [ALL]", got)
	}
	wantAdd := []string{}
	if w.profiling {
		wantAdd = []string{"SYS_ADMIN"}
	}
	if got := stringList(sc, "capabilities", "add"); !reflect.DeepEqual(got, wantAdd) {
		t.Errorf("capabilities.add = %v, want %v", got, wantAdd)
	}
	seccomp := get(sc, "seccompProfile", "type")
	if seccomp == nil {
		seccomp = get(pod, "securityContext", "seccompProfile", "type")
	}
	if seccomp != "RuntimeDefault" {
		t.Errorf("seccompProfile.type = %v, want RuntimeDefault", seccomp)
	}
	if w.noAttribution {
		if get(sc, "runAsNonRoot") != true || get(sc, "runAsUser") == 0 {
			t.Errorf("without pod attribution the exporter must run as non-root, got %v", sc)
		}
	}
	if get(pod, "hostNetwork") == true || (get(pod, "hostPID") == true && !w.hostProcesses) {
		t.Error("pod uses the host's network or PID namespace")
	}
}

func checkPodResourcesMount(t *testing.T, pod any, exp map[string]any, w want) {
	t.Helper()
	vol := byName(list(pod, "volumes"), "pod-resources")
	mount := byName(list(exp, "volumeMounts"), "pod-resources")
	if w.noAttribution {
		if vol != nil || mount != nil {
			t.Error("pod-resources mounted although attribution is off")
		}
		return
	}
	if vol == nil || get(vol, "hostPath", "path") != podResourcesDir || get(vol, "hostPath", "type") != "Directory" {
		t.Errorf("pod-resources volume = %v, want hostPath %s (Directory)", vol, podResourcesDir)
	}
	if mount == nil || mount["mountPath"] != podResourcesDir || mount["readOnly"] != true {
		t.Errorf("pod-resources mount = %v, want %s readOnly: true", mount, podResourcesDir)
	}
	for _, v := range list(pod, "volumes") {
		if hp := get(v, "hostPath", "path"); hp != nil && hp != podResourcesDir && (!w.hostProcesses || hp != "/proc") {
			t.Errorf("unexpected hostPath volume %v", v)
		}
	}
}

func checkEnv(t *testing.T, exp map[string]any) {
	t.Helper()
	node := byName(list(exp, "env"), "NODE_NAME")
	if get(node, "valueFrom", "fieldRef", "fieldPath") != "spec.nodeName" {
		t.Errorf("NODE_NAME env = %v, want valueFrom.fieldRef.fieldPath spec.nodeName", node)
	}
}

func checkProbes(t *testing.T, exp map[string]any, w want) {
	t.Helper()
	scheme := "HTTP"
	if w.https {
		scheme = "HTTPS"
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
		p := get(exp, probe)
		if w.healthPort != 0 {
			if get(p, "httpGet", "path") != path || get(p, "httpGet", "scheme") != "HTTP" || get(p, "httpGet", "port") != "health" {
				t.Errorf("%s = %v, want httpGet %s over HTTP on the health port", probe, p, path)
			}
			port := byName(list(exp, "ports"), "health")
			if port == nil || port["containerPort"] != w.healthPort {
				t.Errorf("exporter ports %v: want health %d", list(exp, "ports"), w.healthPort)
			}
			if arg := fmt.Sprintf("--web.health-listen-address=:%d", w.healthPort); !slices.Contains(stringList(exp, "args"), arg) {
				t.Errorf("args %v lack %s", stringList(exp, "args"), arg)
			}
			continue
		}
		if w.basicAuth {
			if get(p, "tcpSocket", "port") == nil {
				t.Errorf("%s = %v, want a TCP check (basic auth guards every path)", probe, p)
			}
			continue
		}
		if get(p, "httpGet", "path") != path || get(p, "httpGet", "scheme") != scheme {
			t.Errorf("%s = %v, want httpGet %s over %s", probe, p, path, scheme)
		}
		if port := get(p, "httpGet", "port"); port != "metrics" && port != 9400 {
			t.Errorf("%s port = %v, want metrics or 9400", probe, port)
		}
	}
}

func checkExporterArgs(t *testing.T, exp map[string]any, w want) {
	t.Helper()
	args := stringList(exp, "args")
	has := func(a string) bool { return slices.Contains(args, a) }
	listen := "--web.listen-address=:9400"
	if w.rbacProxy {
		listen = "--web.listen-address=127.0.0.1:9401"
	}
	if !has(listen) {
		t.Errorf("args %v lack %s", args, listen)
	}
	if w.noAttribution != has("--kubernetes.enabled=false") || w.noAttribution == has("--kubernetes.enabled=true") {
		t.Errorf("args %v: --kubernetes.enabled does not match attribution=%v", args, !w.noAttribution)
	}
	if w.remoteDCGM != "" {
		if !has("--dcgm.mode=remote") || !has("--dcgm.remote-address="+w.remoteDCGM) {
			t.Errorf("args %v: want remote DCGM at %s", args, w.remoteDCGM)
		}
	} else if !has("--dcgm.mode=embedded") || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--dcgm.remote-address") }) {
		t.Errorf("args %v: want embedded DCGM", args)
	}
}

func checkRBACProxy(t *testing.T, objs []object, proxy map[string]any) {
	t.Helper()
	args := stringList(proxy, "args")
	for _, a := range []string{"--secure-listen-address=0.0.0.0:9400", "--upstream=http://127.0.0.1:9401/", "--ignore-paths=/healthz,/readyz"} {
		if !slices.Contains(args, a) {
			t.Errorf("kube-rbac-proxy args %v lack %s", args, a)
		}
	}
	sc := get(proxy, "securityContext")
	if get(sc, "runAsNonRoot") != true || get(sc, "readOnlyRootFilesystem") != true || !reflect.DeepEqual(stringList(sc, "capabilities", "drop"), []string{"ALL"}) {
		t.Errorf("kube-rbac-proxy securityContext not hardened: %v", sc)
	}
	var verbs []string
	for _, cr := range find(objs, "ClusterRole") {
		if strings.HasSuffix(cr.name(), "-dra-reader") {
			continue // checkDRARBAC's
		}
		for _, r := range list(cr, "rules") {
			for _, res := range stringList(r, "resources") {
				verbs = append(verbs, res+":"+strings.Join(stringList(r, "verbs"), ","))
			}
			for _, u := range stringList(r, "nonResourceURLs") {
				verbs = append(verbs, u+":"+strings.Join(stringList(r, "verbs"), ","))
			}
		}
	}
	slices.Sort(verbs)
	wantVerbs := []string{"/metrics:get", "subjectaccessreviews:create", "tokenreviews:create"}
	if !reflect.DeepEqual(verbs, wantVerbs) {
		t.Errorf("ClusterRole rules = %v, want exactly %v", verbs, wantVerbs)
	}
}

// wantRelabelings is the relabelling DESIGN.md asks for: set node from the
// pod's node, drop the exporter pod's own namespace/pod/container; job and
// instance stay.
const wantRelabelings = `
- action: replace
  sourceLabels: [__meta_kubernetes_pod_node_name]
  targetLabel: node
- action: labeldrop
  regex: (namespace|pod|container)
`

// checkMonitor asserts a ServiceMonitor's or PodMonitor's endpoint.
func checkMonitor(t *testing.T, mon object, endpointsKey string, w want) {
	t.Helper()
	eps := list(mon, "spec", endpointsKey)
	if len(eps) != 1 {
		t.Fatalf("%s %s: want one endpoint, got %d", mon.kind(), mon.name(), len(eps))
	}
	ep := eps[0]
	if ep["honorLabels"] != true {
		t.Errorf("%s honorLabels = %v, want true", mon.kind(), ep["honorLabels"])
	}
	if ep["port"] != "metrics" || ep["path"] != "/metrics" {
		t.Errorf("%s endpoint port/path = %v %v, want metrics /metrics", mon.kind(), ep["port"], ep["path"])
	}
	if got, exp := ep["relabelings"], mustYAML(t, wantRelabelings); !reflect.DeepEqual(got, exp) {
		t.Errorf("%s relabelings =\n%v\nwant exactly\n%v", mon.kind(), got, exp)
	}
	scheme, _ := ep["scheme"].(string)
	if w.https != (scheme == "https") {
		t.Errorf("%s scheme = %q, want https=%v", mon.kind(), scheme, w.https)
	}
	// Over HTTPS the certificate is checked against a CA, or verification
	// is skipped because the values asked for it; over HTTP no TLS settings.
	tls, _ := ep["tlsConfig"].(map[string]any)
	switch {
	case w.https && tls["ca"] == nil && tls["insecureSkipVerify"] != true:
		t.Errorf("%s scrapes HTTPS without a CA or an explicit insecureSkipVerify: %v", mon.kind(), tls)
	case !w.https && tls != nil:
		t.Errorf("%s has tlsConfig %v over HTTP", mon.kind(), tls)
	}
	sel := get(mon, "spec", "selector", "matchLabels")
	if get(sel, "app.kubernetes.io/name") != "gpu-exporter" {
		t.Errorf("%s selector = %v", mon.kind(), sel)
	}
}

// checkDRARBAC: with DRA attribution, one ClusterRole granting get, list
// and watch on resourceslices and nothing else, bound to the exporter's
// ServiceAccount, and --kubernetes.dra on; without, neither.
func checkDRARBAC(t *testing.T, objs []object, exp map[string]any, w want) {
	t.Helper()
	var roles []object
	for _, cr := range find(objs, "ClusterRole") {
		if strings.HasSuffix(cr.name(), "-dra-reader") {
			roles = append(roles, cr)
		}
	}
	args := stringList(exp, "args")
	if !w.dra() {
		if len(roles) != 0 {
			t.Errorf("DRA off but %d dra-reader ClusterRoles", len(roles))
		}
		if !w.noAttribution && !slices.Contains(args, "--kubernetes.dra=false") {
			t.Errorf("DRA off: args %v lack --kubernetes.dra=false", args)
		}
		return
	}
	if len(roles) != 1 {
		t.Fatalf("DRA on: %d dra-reader ClusterRoles, want 1", len(roles))
	}
	rules := list(roles[0], "rules")
	if len(rules) != 1 || !reflect.DeepEqual(stringList(rules[0], "apiGroups"), []string{"resource.k8s.io"}) ||
		!reflect.DeepEqual(stringList(rules[0], "resources"), []string{"resourceslices"}) ||
		!reflect.DeepEqual(stringList(rules[0], "verbs"), []string{"get", "list", "watch"}) {
		t.Errorf("dra-reader rules = %v, want exactly resource.k8s.io resourceslices get, list, watch", rules)
	}
	bound := false
	for _, b := range find(objs, "ClusterRoleBinding") {
		if get(b, "roleRef", "name") == roles[0].name() {
			bound = true
		}
	}
	if !bound {
		t.Errorf("no ClusterRoleBinding of %s", roles[0].name())
	}
	if !slices.ContainsFunc(args, func(a string) bool { return a == "--kubernetes.dra=auto" || a == "--kubernetes.dra=true" }) {
		t.Errorf("DRA on: args %v lack --kubernetes.dra=auto or true", args)
	}
}
