package podlabels

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// fakePods is a fake clientset's pods client in every namespace. It tells
// the informer that the fake cannot stream a watch-list, as the fake
// clientset itself does (kubernetes/fake/clientset_generated.go,
// IsWatchListSemanticsUnSupported).
func fakePods(c *fake.Clientset) Pods {
	return fakePodsClient{c.CoreV1().Pods(metav1.NamespaceAll)}
}

type fakePodsClient struct{ corev1client.PodInterface }

func (fakePodsClient) IsWatchListSemanticsUnSupported() bool { return true }

// TestPodsClientRequests checks the requests of the exporter's own pods
// client against an API server answering in JSON, as the API server does
// when the client accepts it: the path, the node's field selector, watch
// and the decoding of a list and of watch events.
func TestPodsClientRequests(t *testing.T) {
	t.Parallel()
	pod := newPod("ml", "trainer-0", thisNode, map[string]string{"team": "a"})
	pod.APIVersion, pod.Kind = "v1", "Pod"
	seen := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.URL.Path + "?" + r.URL.RawQuery
		if r.URL.Path != "/api/v1/pods" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "true" {
			raw, _ := json.Marshal(pod)
			_ = json.NewEncoder(w).Encode(map[string]any{"type": "ADDED", "object": json.RawMessage(raw)})
			return
		}
		_ = json.NewEncoder(w).Encode(corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"},
			ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []corev1.Pod{*pod}})
	}))
	defer srv.Close()

	c, err := newPodsClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.ListOptions{FieldSelector: "spec.nodeName=" + thisNode}
	list, err := c.List(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := <-seen; got != "/api/v1/pods?fieldSelector=spec.nodeName%3D"+thisNode {
		t.Errorf("list request %s", got)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "trainer-0" || list.Items[0].Labels["team"] != "a" || list.ResourceVersion != "7" {
		t.Errorf("list decoded as %+v", list)
	}

	w, err := c.Watch(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := <-seen; got != "/api/v1/pods?fieldSelector=spec.nodeName%3D"+thisNode+"&watch=true" {
		t.Errorf("watch request %s", got)
	}
	select {
	case ev := <-w.ResultChan():
		p, ok := ev.Object.(*corev1.Pod)
		if ev.Type != "ADDED" || !ok || p.Name != "trainer-0" || p.UID != pod.UID {
			t.Errorf("watch event %s %#v", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
}
