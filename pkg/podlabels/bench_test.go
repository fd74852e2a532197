package podlabels

import (
	"fmt"
	"regexp"
	"testing"
)

// BenchmarkLookup: the per-target cost on the collection path, on a full
// node (110 pods, the kubelet's default maximum).
func BenchmarkLookup(b *testing.B) {
	s := newIdleStore(b, Config{Node: thisNode, Allowlist: regexp.MustCompile(".*"), UID: true})
	for i := range 110 {
		s.upsert(toAPIPod(newPod("ml", fmt.Sprintf("pod-%d", i), thisNode, map[string]string{"team": "ml", "app": "x"})))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := s.Lookup("ml", "pod-57"); !ok {
			b.Fatal("pod not found")
		}
	}
}

// BenchmarkPodInfo: the per-event cost of recomputing a pod's labels.
func BenchmarkPodInfo(b *testing.B) {
	pod := toAPIPod(newPod("ml", "train", thisNode, map[string]string{
		"app.kubernetes.io/name": "trainer", "app.kubernetes.io/instance": "t-1",
		"team": "ml", "pod-template-hash": "5d8f7", "costCenter": "42",
	}))
	allow := regexp.MustCompile(`^(?:team|costCenter|app\.kubernetes\.io/.*)$`)
	b.ReportAllocs()
	for b.Loop() {
		podInfo(pod, allow, true, DefaultMaxLabels)
	}
}
