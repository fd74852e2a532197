package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// platformNode is a GPU (or CPU) node as a platform creates it: the labels
// and taints that platform puts on it (each preset file cites where they
// come from).
type platformNode struct {
	name   string
	labels map[string]string
	taints []corev1.Taint
	want   bool // the exporter must run there
}

// presetCase is what a preset must render for its platform.
type presetCase struct {
	file  string
	nodes []platformNode
	// mounts: host path -> mount path the exporter container must have.
	mounts map[string]string
	env    map[string]string
	args   []string // exporter arguments that must be present
	check  func(t *testing.T, objs []object)
}

var (
	gpuPresentTaint = corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	gpuTaint        = corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}
	aksSKUTaint     = corev1.Taint{Key: "sku", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
)

var presetCases = []presetCase{
	{
		file: "gke.yaml",
		nodes: []platformNode{
			{"GKE L4 node", map[string]string{"cloud.google.com/gke-accelerator": "nvidia-l4", "cloud.google.com/gke-gpu-driver-version": "default"}, []corev1.Taint{gpuPresentTaint}, true},
			{"GKE pool handed to the GPU Operator", map[string]string{"cloud.google.com/gke-accelerator": "nvidia-l4", "gke-no-default-nvidia-gpu-device-plugin": "true"}, []corev1.Taint{gpuPresentTaint}, false},
			{"GKE TPU node", map[string]string{"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice"}, []corev1.Taint{{Key: "google.com/tpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}, false},
			{"GKE CPU node", map[string]string{"cloud.google.com/gke-nodepool": "default-pool"}, nil, false},
		},
		mounts: map[string]string{"/home/kubernetes/bin/nvidia": "/usr/local/nvidia", "/dev": "/dev", "/var/lib/kubelet/pod-resources": "/var/lib/kubelet/pod-resources"},
		env:    map[string]string{"LD_LIBRARY_PATH": "/usr/local/nvidia/lib64"},
		check: func(t *testing.T, objs []object) {
			sc := get(exporterContainer(t, objs), "securityContext")
			if get(sc, "privileged") != true {
				t.Errorf("securityContext %v: the GKE device nodes need a privileged container", sc)
			}
			if m := byName(list(exporterContainer(t, objs), "volumeMounts"), "nvidia-install-dir"); m["readOnly"] != true {
				t.Errorf("driver directory mount %v, want read-only", m)
			}
		},
	},
	{
		file: "gke-gpu-operator.yaml",
		nodes: []platformNode{
			{"GKE pool for the GPU Operator", map[string]string{"cloud.google.com/gke-accelerator": "nvidia-h100-80gb", "gke-no-default-nvidia-gpu-device-plugin": "true", "nvidia.com/gpu.present": "true"}, []corev1.Taint{gpuPresentTaint}, true},
			{"GKE pool with GKE's driver", map[string]string{"cloud.google.com/gke-accelerator": "nvidia-l4"}, []corev1.Taint{gpuPresentTaint}, false},
		},
		mounts: map[string]string{"/var/lib/kubelet/pod-resources": "/var/lib/kubelet/pod-resources"},
		args:   []string{"--dcgm.mode=remote", "--dcgm.remote-address=nvidia-dcgm.gpu-operator.svc:5555", "--source=dcgm"},
	},
	{
		file: "aks.yaml",
		nodes: []platformNode{
			{"AKS GPU pool tainted sku=gpu", map[string]string{"kubernetes.azure.com/accelerator": "nvidia", "kubernetes.azure.com/agentpool": "gpunp"}, []corev1.Taint{aksSKUTaint}, true},
			{"AKS GPU pool tainted nvidia.com/gpu", map[string]string{"kubernetes.azure.com/accelerator": "nvidia"}, []corev1.Taint{gpuTaint}, true},
			{"AKS pool with the GPU Operator", map[string]string{"nvidia.com/gpu.present": "true"}, []corev1.Taint{aksSKUTaint}, true},
			{"AKS CPU pool", map[string]string{"kubernetes.azure.com/agentpool": "nodepool1"}, nil, false},
		},
		mounts: map[string]string{"/var/lib/kubelet/pod-resources": "/var/lib/kubelet/pod-resources"},
	},
	{
		file: "eks.yaml",
		nodes: []platformNode{
			{"EKS Karpenter g6", map[string]string{"karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia"}, []corev1.Taint{gpuTaint}, true},
			{"EKS Auto Mode p5", map[string]string{"eks.amazonaws.com/instance-gpu-manufacturer": "nvidia"}, []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}}, true},
			{"EKS node group labelled for the autoscaler", map[string]string{"k8s.amazonaws.com/accelerator": "nvidia-tesla-t4"}, []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}, true},
			{"EKS node with GPU Feature Discovery", map[string]string{"nvidia.com/gpu.present": "true"}, nil, true},
			{"EKS Inferentia (Karpenter)", map[string]string{"karpenter.k8s.aws/instance-gpu-manufacturer": "aws"}, nil, false},
			{"EKS CPU node", map[string]string{"eks.amazonaws.com/nodegroup": "system"}, nil, false},
		},
		mounts: map[string]string{"/var/lib/kubelet/pod-resources": "/var/lib/kubelet/pod-resources"},
	},
	{
		file: "nfd.yaml",
		nodes: []platformNode{
			{"NFD with the GPU Operator's configuration", map[string]string{"feature.node.kubernetes.io/pci-10de.present": "true"}, nil, true},
			{"stock NFD, 3D controller", map[string]string{"feature.node.kubernetes.io/pci-0302_10de.present": "true"}, []corev1.Taint{gpuTaint}, true},
			{"stock NFD, VGA controller", map[string]string{"feature.node.kubernetes.io/pci-0300_10de.present": "true"}, nil, true},
			{"stock NFD, AMD GPU", map[string]string{"feature.node.kubernetes.io/pci-0300_1002.present": "true"}, nil, false},
		},
		mounts: map[string]string{"/var/lib/kubelet/pod-resources": "/var/lib/kubelet/pod-resources"},
	},
	{
		file: "openshift.yaml",
		nodes: []platformNode{
			{"OpenShift GPU node (GPU Operator)", map[string]string{"nvidia.com/gpu.present": "true", "feature.node.kubernetes.io/pci-10de.present": "true", "node-role.kubernetes.io/worker": ""}, nil, true},
			{"OpenShift worker without GPU", map[string]string{"node-role.kubernetes.io/worker": ""}, nil, false},
		},
		mounts: map[string]string{"/var/lib/kubelet/pod-resources": "/var/lib/kubelet/pod-resources"},
		args:   []string{"--dcgm.mode=remote", "--dcgm.remote-address=nvidia-dcgm.nvidia-gpu-operator.svc:5555"},
		check:  checkOpenShift,
	},
}

// TestHelmPresets renders the chart with each platform's values preset and
// checks, with the scheduler's own rules (node affinity evaluated by
// apimachinery's label selectors, taints by corev1.Toleration), that the
// DaemonSet runs on that platform's GPU nodes, and only there, and mounts
// what the platform needs.
func TestHelmPresets(t *testing.T) {
	t.Parallel()
	tool(t, "helm")
	tool(t, "kubevalidate")
	files, err := filepath.Glob(filepath.Join(chartDir, "presets", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(presetCases) {
		t.Errorf("%d preset files, %d cases: every preset needs a render test", len(files), len(presetCases))
	}
	for _, pc := range presetCases {
		t.Run(pc.file, func(t *testing.T) {
			t.Parallel()
			out, err := run(nil, tool(t, "helm"), "template", "gpu", chartDir, "--namespace", "gpu-exporter",
				"--values", filepath.Join(chartDir, "presets", pc.file))
			if err != nil {
				t.Fatal(err)
			}
			objs := parseObjects(t, out)
			kubevalidate(t, withoutOpenShiftKinds(t, objs))
			if out, err := run(nil, tool(t, "helm"), "lint", "--strict", chartDir, "--values", filepath.Join(chartDir, "presets", pc.file)); err != nil {
				t.Errorf("helm lint --strict: %v\n%s", err, out)
			}
			pod := get(only(t, objs, "DaemonSet"), "spec", "template", "spec")
			checkPlatformScheduling(t, pod, pc.nodes)
			checkHostMounts(t, pod, exporterContainer(t, objs), pc.mounts)
			env := list(exporterContainer(t, objs), "env")
			for k, v := range pc.env {
				if e := byName(env, k); e == nil || e["value"] != v {
					t.Errorf("env %s = %v, want %s", k, e, v)
				}
			}
			args := stringList(exporterContainer(t, objs), "args")
			for _, a := range pc.args {
				if !slices.Contains(args, a) {
					t.Errorf("exporter args %v lack %s", args, a)
				}
			}
			if pc.check != nil {
				pc.check(t, objs)
			}
		})
	}
}

// checkPlatformScheduling evaluates the pod's required node affinity and
// tolerations against each node, as the scheduler does.
func checkPlatformScheduling(t *testing.T, pod any, nodes []platformNode) {
	t.Helper()
	terms := list(pod, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
	var tolerations []corev1.Toleration
	data, err := json.Marshal(get(pod, "tolerations"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &tolerations); err != nil {
		t.Fatalf("tolerations: %v", err)
	}
	for _, n := range nodes {
		matches, err := matchesNodeSelectorTerms(terms, n.labels)
		if err != nil {
			t.Fatal(err)
		}
		tolerated := true
		for _, taint := range n.taints {
			if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
				continue
			}
			ok := false
			for i := range tolerations {
				if tolerations[i].ToleratesTaint(klog.Background(), &taint, false) {
					ok = true
				}
			}
			tolerated = tolerated && ok
		}
		if got := matches && tolerated; got != n.want {
			t.Errorf("%s (labels %v, taints %v): scheduled = %v (affinity %v, taints tolerated %v), want %v",
				n.name, n.labels, n.taints, got, matches, tolerated, n.want)
		}
	}
}

// checkHostMounts checks that each host path is a hostPath volume mounted
// into the exporter container at the given path.
func checkHostMounts(t *testing.T, pod any, container map[string]any, mounts map[string]string) {
	t.Helper()
	for host, at := range mounts {
		var volume string
		for _, v := range list(pod, "volumes") {
			if get(v, "hostPath", "path") == host {
				volume, _ = v["name"].(string)
			}
		}
		if volume == "" {
			t.Errorf("no hostPath volume for %s", host)
			continue
		}
		m := byName(list(container, "volumeMounts"), volume)
		if m == nil || m["mountPath"] != at {
			t.Errorf("hostPath %s (volume %s) mounted as %v, want at %s", host, volume, m, at)
		}
	}
}

// withoutOpenShiftKinds re-encodes the objects, leaving out OpenShift's
// own kinds, which kubevalidate's scheme does not hold (their API module
// is not on the Go module proxy); checkOpenShift checks those.
func withoutOpenShiftKinds(t *testing.T, objs []object) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, o := range objs {
		if api, _ := o["apiVersion"].(string); strings.HasSuffix(strings.Split(api, "/")[0], ".openshift.io") {
			continue
		}
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(data)
		buf.WriteString("\n")
	}
	return buf.Bytes()
}

// checkOpenShift: the SCC admits the pod as rendered (hostPath, uid 0,
// runtime/default seccomp, no privilege), the service account may use it
// and the pod asks for it; the monitors leave the namespace copy out, as
// user-workload monitoring's overrideHonorLabels already renames it.
func checkOpenShift(t *testing.T, objs []object) {
	t.Helper()
	scc := only(t, objs, "SecurityContextConstraints")
	for k, want := range map[string]any{
		"allowHostDirVolumePlugin": true, "allowPrivilegedContainer": false, "allowPrivilegeEscalation": false,
		"allowHostNetwork": false, "allowHostPID": false, "allowHostIPC": false,
	} {
		if scc[k] != want {
			t.Errorf("SCC %s = %v, want %v", k, scc[k], want)
		}
	}
	if get(scc, "runAsUser", "type") != "RunAsAny" {
		t.Errorf("SCC runAsUser %v: the exporter runs as uid 0 (the pod-resources directory is root-only)", get(scc, "runAsUser"))
	}
	if !slices.Contains(stringList(scc, "seccompProfiles"), "runtime/default") {
		t.Errorf("SCC seccompProfiles %v lack runtime/default, which the pod sets", get(scc, "seccompProfiles"))
	}
	for _, v := range []string{"hostPath", "emptyDir"} {
		if !slices.Contains(stringList(scc, "volumes"), v) {
			t.Errorf("SCC volumes %v lack %s", get(scc, "volumes"), v)
		}
	}
	role := only(t, objs, "Role")
	rule := get(role, "rules", 0)
	if !slices.Contains(stringList(rule, "verbs"), "use") || !slices.Contains(stringList(rule, "resourceNames"), scc.name()) {
		t.Errorf("Role rule %v does not grant use of SCC %s", rule, scc.name())
	}
	rb := only(t, objs, "RoleBinding")
	if get(rb, "subjects", 0, "name") != get(only(t, objs, "ServiceAccount"), "metadata", "name") {
		t.Errorf("RoleBinding subjects %v: want the chart's service account", get(rb, "subjects"))
	}
	pod := get(only(t, objs, "DaemonSet"), "spec", "template")
	if get(pod, "metadata", "annotations", "openshift.io/required-scc") != scc.name() {
		t.Errorf("pod annotations %v: want openshift.io/required-scc=%s", get(pod, "metadata", "annotations"), scc.name())
	}
	sm := only(t, objs, "ServiceMonitor")
	if r := get(sm, "spec", "endpoints", 0, "metricRelabelings"); r != nil {
		t.Errorf("ServiceMonitor metricRelabelings %v: under overrideHonorLabels the copy of namespace would overwrite exported_namespace with the monitor's namespace", r)
	}
	if n := len(find(objs, "PrometheusRule")); n != 1 {
		t.Errorf("%d PrometheusRules, want 1", n)
	}
	if n := len(dashboardConfigMaps(t, objs)); n != 0 {
		t.Errorf("%d dashboard ConfigMaps: OpenShift's monitoring has no Grafana sidecar", n)
	}
}

// TestPresetsCiteSources: each preset file opens with the sources of the
// platform facts it encodes.
func TestPresetsCiteSources(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(chartDir, "presets", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte("# Sources:")) || !bytes.Contains(data, []byte("http")) && !bytes.Contains(data, []byte("@")) {
			t.Errorf("%s: no '# Sources:' comment citing where its labels, taints and paths come from", filepath.Base(f))
		}
	}
}
