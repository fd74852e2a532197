package podlabels

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
)

func withStatuses(p *corev1.Pod, main, sidecar string) *corev1.Pod {
	p = p.DeepCopy()
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", ContainerID: main, Image: "cuda"}}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "sidecar", ContainerID: sidecar}}
	return p
}

func TestStoreLookupContainer(t *testing.T) {
	t.Parallel()
	train := withStatuses(newPod("ml", "train", thisNode, nil), "containerd://aaa111", "cri-o://bbb222")
	a := newAPIServer(t, train)
	s, _ := startStore(t, a, Config{Node: thisNode, Containers: true})

	cases := []struct {
		uid, id string
		want    ContainerRef
		ok      bool
	}{
		{"uid-ml-train", "aaa111", ContainerRef{"ml", "train", "main"}, true},
		{"uid-ml-train", "bbb222", ContainerRef{"ml", "train", "sidecar"}, true},
		{"uid-ml-train", "unknown", ContainerRef{"ml", "train", ""}, true},
		{"uid-other", "aaa111", ContainerRef{}, false},
	}
	for _, tc := range cases {
		got, ok := s.LookupContainer(tc.uid, tc.id)
		if got != tc.want || ok != tc.ok {
			t.Errorf("LookupContainer(%q, %q) = %+v, %v; want %+v, %v", tc.uid, tc.id, got, ok, tc.want, tc.ok)
		}
	}

	// A restarted container gets a new id in the pod's status; the
	// Version (label sets) does not move for it.
	v := s.Version()
	a.update(t, withStatuses(train, "containerd://ccc333", "cri-o://bbb222"))
	poll.Until(t, "the new container id shows", func() bool {
		got, _ := s.LookupContainer("uid-ml-train", "ccc333")
		return got.Container == "main"
	})
	if s.Version() != v {
		t.Error("a container status change moved Version")
	}

	// Recreated under the same name with a new UID: the old UID is gone.
	a.delete(t, "ml", "train")
	again := withStatuses(newPod("ml", "train", thisNode, nil), "containerd://ddd444", "")
	again.UID = "uid-second"
	a.create(t, again)
	poll.Until(t, "the recreated pod shows", func() bool {
		_, ok := s.LookupContainer("uid-second", "ddd444")
		return ok
	})
	if _, ok := s.LookupContainer("uid-ml-train", "ccc333"); ok {
		t.Error("the deleted pod's UID is still known")
	}
}

func TestRuntimeID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"containerd://0123abcd": "0123abcd",
		"cri-o://0123abcd":      "0123abcd",
		"docker://0123abcd":     "0123abcd",
		"0123abcd":              "0123abcd",
		"":                      "",
	} {
		if got := RuntimeID(in); got != want {
			t.Errorf("RuntimeID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSlimPodKeepsContainerIDs(t *testing.T) {
	t.Parallel()
	full := withStatuses(newPod("ml", "train", thisNode, nil), "containerd://aaa", "containerd://bbb")
	full.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debug", ContainerID: "containerd://eee", Image: "busybox"}}
	got, err := slimPod(toAPIPod(full))
	if err != nil {
		t.Fatal(err)
	}
	ids := containerIDs(got.(*apiPod))
	if ids["aaa"] != "main" || ids["bbb"] != "sidecar" || ids["eee"] != "debug" || len(ids) != 3 {
		t.Errorf("container ids after slimPod = %v", ids)
	}
}

func TestConfigContainersOnly(t *testing.T) {
	t.Parallel()
	if _, err := (Config{Node: thisNode, Containers: true}).withDefaults(); err != nil {
		t.Errorf("a store for container lookups alone was refused: %v", err)
	}
}

// A static pod runs under the UID the kubelet derives from its manifest
// (the cgroup's pod<uid>); the API shows its mirror pod, with a UID of its
// own and the kubelet's in the kubernetes.io/config.mirror annotation.
func TestStoreLookupContainerStaticPod(t *testing.T) {
	t.Parallel()
	const hash = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	mirror := withStatuses(newPod("kube-system", "gpu-agent-node1", thisNode, nil), "containerd://aaa111", "")
	mirror.UID = "uid-of-the-mirror"
	mirror.Annotations = map[string]string{"kubernetes.io/config.mirror": hash, "kubernetes.io/config.hash": hash}
	a := newAPIServer(t, mirror)
	s, _ := startStore(t, a, Config{Node: thisNode, Containers: true})

	for _, uid := range []string{hash, "uid-of-the-mirror"} {
		got, ok := s.LookupContainer(uid, "aaa111")
		if want := (ContainerRef{"kube-system", "gpu-agent-node1", "main"}); !ok || got != want {
			t.Errorf("LookupContainer(%q) = %+v, %v; want %+v", uid, got, ok, want)
		}
	}
	a.delete(t, "kube-system", "gpu-agent-node1")
	poll.Until(t, "the mirror pod is forgotten", func() bool {
		_, ok := s.LookupContainer("uid-of-the-mirror", "aaa111")
		return !ok
	})
	if _, ok := s.LookupContainer(hash, "aaa111"); ok {
		t.Error("the deleted static pod's UID is still known")
	}
}
