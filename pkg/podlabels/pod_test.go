package podlabels

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAPIPodDeepCopy: the informer hands copies to handlers and keeps its
// own; a copy equals the original and shares nothing mutable with it.
func TestAPIPodDeepCopy(t *testing.T) {
	t.Parallel()
	orig := withStatuses(newPod("ml", "train", thisNode, map[string]string{"team": "ml"}), "containerd://aaa", "containerd://bbb")
	pod := toAPIPod(orig)
	list := &apiPodList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: []apiPod{*toAPIPod(orig)}}

	podCopy := pod.DeepCopyObject().(*apiPod)
	listCopy := list.DeepCopyObject().(*apiPodList)
	if !reflect.DeepEqual(podCopy, pod) || !reflect.DeepEqual(listCopy, list) {
		t.Fatalf("copies differ from the originals:\n%+v\n%+v", podCopy, listCopy)
	}
	for _, p := range []*apiPod{podCopy, &listCopy.Items[0]} {
		p.Labels["team"] = "changed"
		p.Status.ContainerStatuses[0].ContainerID = "changed"
		p.Status.InitContainerStatuses[0].Name = "changed"
	}
	for _, p := range []*apiPod{pod, &list.Items[0]} {
		if p.Labels["team"] != "ml" || p.Status.ContainerStatuses[0].ContainerID != "containerd://aaa" || p.Status.InitContainerStatuses[0].Name != "sidecar" {
			t.Errorf("changing a copy changed the original: %+v", p)
		}
	}
	if (*apiPod)(nil).DeepCopyObject() != nil || (*apiPodList)(nil).DeepCopyObject() != nil {
		t.Error("a nil object's copy is not nil")
	}
}
