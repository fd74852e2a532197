package podlabels

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
)

// fakePods is a fake clientset's pods client in every namespace, its pods
// converted to apiPods as the exporter's client decodes them (through
// their JSON). It tells the informer that the fake cannot stream a
// watch-list, as the fake clientset itself does
// (kubernetes/fake/clientset_generated.go, IsWatchListSemanticsUnSupported).
func fakePods(c *fake.Clientset) Pods {
	return fakePodsClient{c.CoreV1().Pods(metav1.NamespaceAll)}
}

type fakePodsClient struct{ pods corev1client.PodInterface }

func (fakePodsClient) IsWatchListSemanticsUnSupported() bool { return true }

func (f fakePodsClient) List(ctx context.Context, opts metav1.ListOptions) (*apiPodList, error) {
	list, err := f.pods.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &apiPodList{}
	return out, viaJSON(list, out)
}

func (f fakePodsClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := f.pods.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if p, ok := ev.Object.(*corev1.Pod); ok {
			ev.Object = toAPIPod(p)
		}
		return ev, true
	}), nil
}

// toAPIPod converts a pod to an apiPod through its JSON, as the API server
// sends it and the exporter's client decodes it.
func toAPIPod(p *corev1.Pod) *apiPod {
	out := &apiPod{}
	if err := viaJSON(p, out); err != nil {
		panic(err) // a core/v1 Pod always encodes, and apiPod takes any pod's JSON
	}
	return out
}

func viaJSON(in, out any) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// TestPodsClientRequests checks the requests of the exporter's own pods
// client against an API server answering in JSON, as the API server does
// when the client accepts it: JSON only, the path, the node's field
// selector, watch and the decoding of a list and of watch events into
// apiPods (the fields the Store reads, from a whole core/v1 Pod's JSON).
func TestPodsClientRequests(t *testing.T) {
	t.Parallel()
	pod := newPod("ml", "trainer-0", thisNode, map[string]string{"team": "a"})
	pod.APIVersion, pod.Kind = "v1", "Pod"
	pod.Annotations = map[string]string{"note": "x"}
	pod.Spec.Containers = []corev1.Container{{Name: "main", Image: "cuda"}}
	pod.Status.Phase = corev1.PodRunning
	pod = withStatuses(pod, "containerd://aaa", "containerd://bbb")
	pod.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debug", ContainerID: "containerd://eee"}}
	want := &apiPod{ // the decoders may clear TypeMeta: sameAPIPod ignores it
		ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "trainer-0", UID: pod.UID, Labels: pod.Labels, Annotations: pod.Annotations},
		Spec:       apiPodSpec{NodeName: thisNode, Containers: []apiContainer{{Name: "main"}}},
		Status: apiPodStatus{
			Phase:                      "Running",
			ContainerStatuses:          []apiContainerStatus{{Name: "main", ContainerID: "containerd://aaa"}},
			InitContainerStatuses:      []apiContainerStatus{{Name: "sidecar", ContainerID: "containerd://bbb"}},
			EphemeralContainerStatuses: []apiContainerStatus{{Name: "debug", ContainerID: "containerd://eee"}},
		},
	}
	seen := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("Accept") + " " + r.URL.Path + "?" + r.URL.RawQuery
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
	if got := <-seen; got != "application/json /api/v1/pods?fieldSelector=spec.nodeName%3D"+thisNode {
		t.Errorf("list request %s", got)
	}
	if len(list.Items) != 1 || !sameAPIPod(&list.Items[0], want) || list.ResourceVersion != "7" {
		t.Errorf("list decoded as %+v, want one item %+v", list, want)
	}

	w, err := c.Watch(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if got := <-seen; got != "application/json /api/v1/pods?fieldSelector=spec.nodeName%3D"+thisNode+"&watch=true" {
		t.Errorf("watch request %s", got)
	}
	select {
	case ev := <-w.ResultChan():
		p, ok := ev.Object.(*apiPod)
		if ev.Type != "ADDED" || !ok || !sameAPIPod(p, want) {
			t.Errorf("watch event %s %#v", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
}

// sameAPIPod compares two apiPods but for their TypeMeta.
func sameAPIPod(a, b *apiPod) bool {
	a, b = a.deepCopy(), b.deepCopy()
	a.TypeMeta, b.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
	return reflect.DeepEqual(a, b)
}

// TestStoreWatchListOverJSON runs a Store on the exporter's own pods client
// against an API server that streams the initial pods as a watch-list
// (the reflector's default since client-go 1.35, feature WatchListClient):
// ADDED events, then a BOOKMARK whose k8s.io/initial-events-end annotation
// ends the initial list (metav1.InitialEventsAnnotationKey), then changes
// on the same watch. The Store syncs only if the bookmark decodes with its
// annotation.
func TestStoreWatchListOverJSON(t *testing.T) {
	t.Parallel()
	events := make(chan watchEvent, 8)
	queries := make(chan url.Values, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries <- r.URL.Query()
		if r.URL.Path != "/api/v1/pods" || r.URL.Query().Get("watch") != "true" {
			http.Error(w, "this server only streams watch-lists", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		enc := json.NewEncoder(w)
		for {
			select {
			case ev := <-events:
				if err := enc.Encode(ev); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	}))
	t.Cleanup(srv.Close) // after s.Close, which ends the watch the server waits on
	train := newPod("ml", "train", thisNode, map[string]string{"team": "ml"})
	train.APIVersion, train.Kind, train.ResourceVersion = "v1", "Pod", "5"
	events <- watchEvent{Type: "ADDED", Object: train}
	events <- watchEvent{Type: "BOOKMARK", Object: &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: "6",
			Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}},
	}}

	client, err := newPodsClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(client, Config{Node: thisNode, Allowlist: regexp.MustCompile("^team$"), UID: true}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(s.m.synced); got != 1 {
		t.Fatalf("gpu_exporter_pod_informer_synced = %v after Run, want 1", got)
	}
	q := <-queries
	for k, want := range map[string]string{"sendInitialEvents": "true", "allowWatchBookmarks": "true",
		"resourceVersionMatch": "NotOlderThan", "fieldSelector": "spec.nodeName=" + thisNode} {
		if got := q.Get(k); got != want {
			t.Errorf("watch-list request %s=%q, want %q (query %v)", k, got, want, q)
		}
	}
	if info, ok := s.Lookup("ml", "train"); !ok || !info.equal(Info{UID: "uid-ml-train", Labels: []Label{{"label_team", "ml"}}}) {
		t.Errorf("Lookup after the initial events = %+v, %v", info, ok)
	}

	train = train.DeepCopy()
	train.Labels["team"] = "research"
	train.ResourceVersion = "7"
	events <- watchEvent{Type: "MODIFIED", Object: train}
	poll.Until(t, "the change on the same watch shows", func() bool { return labelValue(s, "ml", "train", "label_team") == "research" })
}

// watchEvent is a watch event as the API server writes it in JSON
// (metav1.WatchEvent with the object inline).
type watchEvent struct {
	Type   string      `json:"type"`
	Object *corev1.Pod `json:"object"`
}

// TestPodsClientStatusErrors: an API server refusal arrives as a JSON
// metav1.Status (the API concepts' "Receiving errors"), and the client
// decodes it into an API error the Store's RBAC hint recognises.
func TestPodsClientStatusErrors(t *testing.T) {
	t.Parallel()
	const msg = `pods is forbidden: User "system:serviceaccount:gpu:exporter" cannot list resource "pods" in API group "" at the cluster scope`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
			Status: metav1.StatusFailure, Message: msg, Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden})
	}))
	defer srv.Close()
	c, err := newPodsClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != msg {
		t.Errorf("List against a refusing API server: err = %v, want the Status' forbidden error %q", err, msg)
	}
}
