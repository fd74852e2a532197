package podlabels

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// T4 and A100 UUIDs as nvidia-smi prints them. hamiT4 is from a real
// cluster's capture of the annotation (two pods sharing one T4, 4000 MiB
// each: "GPU-859b872c-0ba2-97b0-10b4-8b7185c55039,NVIDIA,4000,0:;").
const (
	hamiT4 = "GPU-859b872c-0ba2-97b0-10b4-8b7185c55039"
	gpuA   = "GPU-76f93f2b-8cd8-4dd0-e555-56418bde1457"
	gpuB   = "GPU-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
)

func TestParseVGPUAllocation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     [][]string
		err      string
	}{
		{"hami one container", hamiT4 + ",NVIDIA,4000,0:;", [][]string{{hamiT4}}, ""},
		// EncodePodSingleDevice: init container without devices, then two
		// containers, the second with two GPUs.
		{"hami init and containers", ";" + gpuA + ",NVIDIA,4096,25:;" + gpuA + ",NVIDIA,1000,0:" + gpuB + ",NVIDIA,1000,0:;",
			[][]string{nil, {gpuA}, {gpuA, gpuB}}, ""},
		// Volcano's encodePodDevices joins without a trailing ";".
		{"volcano two containers", gpuA + ",NVIDIA,1126,0:;" + gpuB + ",NVIDIA,1126,0:", [][]string{{gpuA}, {gpuB}}, ""},
		{"empty", "", nil, ""},
		{"only separators", ";", nil, ""},
		{"missing fields", gpuA + ",NVIDIA:;", nil, "2 fields"},
		{"no uuid", ",NVIDIA,4000,0:;", nil, "no UUID"},
		{"too long", strings.Repeat(gpuA+",NVIDIA,1,0:", 2000), nil, "more than"},
	} {
		got, err := parseVGPUAllocation(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want one saying %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	// Bytes that are not UTF-8 are replaced, not passed on to labels.
	got, err := parseVGPUAllocation("GPU-\xff,NVIDIA,1,0:")
	if err != nil || len(got) != 1 || got[0][0] != "GPU-\uFFFD" {
		t.Errorf("not UTF-8: %q, %v", got, err)
	}
}

func TestVGPUContainers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		a       vgpuAlloc
		holding []string
		want    map[string][]string
		ok      bool
	}{
		{"current hami: init containers listed first",
			vgpuAlloc{entries: [][]string{nil, {gpuA}, nil, {gpuB}}, init: []string{"fetch"}, ctrs: []string{"main", "log", "train"}},
			nil, map[string][]string{"main": {gpuA}, "train": {gpuB}}, true},
		{"older hami: regular containers only",
			vgpuAlloc{entries: [][]string{nil, {gpuB}}, init: []string{"fetch"}, ctrs: []string{"log", "train"}},
			nil, map[string][]string{"train": {gpuB}}, true},
		{"volcano: only the containers that ask, matched to the kubelet's holders",
			vgpuAlloc{entries: [][]string{{gpuB}}, ctrs: []string{"log", "train"}},
			[]string{"train"}, map[string][]string{"train": {gpuB}}, true},
		{"entries and holders disagree",
			vgpuAlloc{entries: [][]string{{gpuB}}, ctrs: []string{"log", "train", "eval"}},
			[]string{"train", "eval"}, nil, false},
		{"no annotation", vgpuAlloc{ctrs: []string{"main"}}, []string{"main"}, nil, false},
	} {
		got, ok := tc.a.containers(tc.holding)
		if ok != tc.ok || !maps.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// hamiPod is a pod HAMi's scheduler placed: its allocation annotation and
// its containers, init containers first.
func hamiPod(ns, name, annotation string, init, containers []string) *corev1.Pod {
	p := newPod(ns, name, thisNode, nil)
	p.Annotations = map[string]string{hamiAllocated: annotation, "hami.io/vgpu-node": thisNode}
	for _, c := range init {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: c, Image: "busybox"})
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "nvidia/cuda:13.0.2-base-ubi8"})
	}
	return p
}

// The store keeps what AnnotatedGPUs reads through the informer's
// slimming, updates it, and says why an annotation it cannot read is
// ignored.
func TestStoreAnnotatedGPUs(t *testing.T) {
	t.Parallel()
	a := newAPIServer(t,
		hamiPod("ml", "train", ";"+gpuA+",NVIDIA,4096,25:;"+gpuB+",NVIDIA,4096,25:;", []string{"fetch"}, []string{"main", "eval"}),
		hamiPod("ml", "broken", gpuA+",NVIDIA:;", nil, []string{"main"}),
		newPod("ml", "plain", thisNode, nil),
	)
	s, logs := startStore(t, a, Config{Node: thisNode, Containers: true})
	got, ok := s.AnnotatedGPUs("ml", "train", nil)
	if want := map[string][]string{"main": {gpuA}, "eval": {gpuB}}; !ok || !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("AnnotatedGPUs(train) = %v, %v; want %v", got, ok, want)
	}
	for _, p := range []string{"broken", "plain", "unknown"} {
		if got, ok := s.AnnotatedGPUs("ml", p, []string{"main"}); ok {
			t.Errorf("AnnotatedGPUs(%s) = %v; want none", p, got)
		}
	}
	if n := logs.count(hamiAllocated); n != 1 {
		t.Errorf("%d warnings name the annotation; want 1:\n%s", n, logs)
	}
}
