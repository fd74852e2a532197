package podlabels

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
)

const (
	thisNode  = "gpu-node-a"
	otherNode = "gpu-node-b"
)

func newPod(ns, name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name, Labels: labels,
			UID: types.UID("uid-" + ns + "-" + name),
		},
		Spec: corev1.PodSpec{NodeName: node},
	}
}

// apiServer is a fake clientset driving the real informer, recording the
// field selectors it is asked for and saying when the pod watch is open.
type apiServer struct {
	client   *fake.Clientset
	watching chan struct{}

	mu        sync.Mutex
	selectors []string
	forbidden bool
}

func newAPIServer(t *testing.T, pods ...*corev1.Pod) *apiServer {
	t.Helper()
	objs := make([]runtime.Object, len(pods))
	for i, p := range pods {
		objs[i] = p
	}
	a := &apiServer{client: fake.NewClientset(objs...), watching: make(chan struct{})}
	a.client.PrependReactor("list", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.selectors = append(a.selectors, action.(k8stesting.ListActionImpl).GetListRestrictions().Fields.String())
		if a.forbidden {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: no list"))
		}
		return false, nil, nil // on to the object tracker
	})
	var once sync.Once
	a.client.PrependWatchReactor("pods", func(action k8stesting.Action) (bool, watch.Interface, error) {
		wa := action.(k8stesting.WatchActionImpl)
		a.mu.Lock()
		a.selectors = append(a.selectors, wa.GetWatchRestrictions().Fields.String())
		a.mu.Unlock()
		// Open the watch before saying so: changes made after <-watching
		// are then never lost between the list and the watch.
		w, err := a.client.Tracker().Watch(action.GetResource(), action.GetNamespace(), wa.ListOptions)
		once.Do(func() { close(a.watching) })
		return true, w, err
	})
	return a
}

func (a *apiServer) setForbidden(v bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forbidden = v
}

func (a *apiServer) recordedSelectors() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.selectors...)
}

func (a *apiServer) update(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if _, err := a.client.CoreV1().Pods(pod.Namespace).Update(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (a *apiServer) create(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if _, err := a.client.CoreV1().Pods(pod.Namespace).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (a *apiServer) delete(t *testing.T, ns, name string) {
	t.Helper()
	if err := a.client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// logBuffer collects log output from several goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), substr)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// startStore runs a Store on a until its pod watch is open.
func startStore(t *testing.T, a *apiServer, cfg Config) (*Store, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	s, err := New(fakePods(a.client), cfg, newLogger(logs), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Run(t.Context()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	select {
	case <-a.watching:
	case <-time.After(10 * time.Second):
		t.Fatal("the pod watch was not opened within 10s")
	}
	return s, logs
}

func known(s *Store, ns, pod string) bool {
	_, ok := s.Lookup(ns, pod)
	return ok
}

func labelValue(s *Store, ns, pod, name string) string {
	info, _ := s.Lookup(ns, pod)
	for _, l := range info.Labels {
		if l.Name == name {
			return l.Value
		}
	}
	return ""
}

func TestStoreWatchesOnlyThisNode(t *testing.T) {
	t.Parallel()
	a := newAPIServer(t,
		newPod("ml", "train", thisNode, map[string]string{"team": "ml", "app.kubernetes.io/name": "trainer", "secret": "s"}),
		newPod("ml", "eval", thisNode, nil),
		newPod("ml", "elsewhere", otherNode, map[string]string{"team": "ml"}),
	)
	allow, err := ParseAllowlist(`team|app\.kubernetes\.io/name`)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startStore(t, a, Config{Node: thisNode, Allowlist: allow, UID: true})

	info, ok := s.Lookup("ml", "train")
	want := Info{UID: "uid-ml-train", Labels: []Label{
		{"label_app_kubernetes_io_name", "trainer"},
		{"label_team", "ml"},
	}}
	if !ok || !info.equal(want) {
		t.Errorf("Lookup(ml, train) = %+v, %v; want %+v, true", info, ok, want)
	}
	if info, ok := s.Lookup("ml", "eval"); !ok || !info.equal(Info{UID: "uid-ml-eval"}) {
		t.Errorf("Lookup(ml, eval) = %+v, %v; want its UID and no labels", info, ok)
	}
	// The fake clientset ignores field selectors and lists every pod: the
	// Store must drop the other node's pod itself.
	if known(s, "ml", "elsewhere") {
		t.Error("a pod of another node is known")
	}
	if known(s, "default", "train") {
		t.Error("a pod is known under another namespace")
	}
	// And it asks the API server for this node's pods only, on list and watch.
	sel := a.recordedSelectors()
	if len(sel) < 2 {
		t.Fatalf("recorded %d list/watch calls, want a list and a watch", len(sel))
	}
	for _, got := range sel {
		if got != "spec.nodeName="+thisNode {
			t.Errorf("list/watch field selector = %q, want spec.nodeName=%s", got, thisNode)
		}
	}
	if got := testutil.ToFloat64(s.m.synced); got != 1 {
		t.Errorf("gpu_exporter_pod_informer_synced = %v, want 1", got)
	}
	if got := testutil.ToFloat64(s.m.pods); got != 2 {
		t.Errorf("gpu_exporter_pod_informer_pods = %v, want 2", got)
	}
}

func TestStoreFollowsChanges(t *testing.T) {
	t.Parallel()
	train := newPod("ml", "train", thisNode, map[string]string{"team": "ml"})
	a := newAPIServer(t, train, newPod("ml", "eval", thisNode, map[string]string{"team": "ml"}))
	s, _ := startStore(t, a, Config{Node: thisNode, Allowlist: regexp.MustCompile("^team$"), UID: true})
	v0 := s.Version()

	// Labels updated.
	train = train.DeepCopy()
	train.Labels["team"] = "research"
	a.update(t, train)
	poll.Until(t, "the new label value shows", func() bool { return labelValue(s, "ml", "train", "label_team") == "research" })
	v1 := s.Version()
	if v1 <= v0 {
		t.Errorf("Version %d after a label change, want more than %d", v1, v0)
	}

	// A status-only update changes nothing Lookup reports: Version stays.
	// Events arrive in order, so once the later delete shows, the status
	// update has been handled.
	train = train.DeepCopy()
	train.Status.Phase = corev1.PodRunning
	a.update(t, train)
	a.delete(t, "ml", "eval")
	poll.Until(t, "the deleted pod is gone", func() bool { return !known(s, "ml", "eval") })
	if v2 := s.Version(); v2 != v1+1 {
		t.Errorf("Version %d after a status update and a delete, want %d (the delete only)", v2, v1+1)
	}
	if got := testutil.ToFloat64(s.m.pods); got != 1 {
		t.Errorf("gpu_exporter_pod_informer_pods = %v after the delete, want 1", got)
	}

	// A label removed from the allowlisted set.
	v3 := s.Version()
	train = train.DeepCopy()
	delete(train.Labels, "team")
	a.update(t, train)
	poll.Until(t, "the removed label is gone", func() bool {
		info, ok := s.Lookup("ml", "train")
		return ok && len(info.Labels) == 0
	})
	if s.Version() <= v3 {
		t.Error("Version did not move when a label was removed")
	}

	// A pod created on this node appears; one on another node does not.
	a.create(t, newPod("ml", "far", otherNode, map[string]string{"team": "x"}))
	a.create(t, newPod("ml", "new", thisNode, map[string]string{"team": "infra"}))
	poll.Until(t, "the new pod shows", func() bool { return labelValue(s, "ml", "new", "label_team") == "infra" })
	if known(s, "ml", "far") {
		t.Error("a pod created on another node is known")
	}

	// A pod recreated under the same name with a new UID.
	a.delete(t, "ml", "new")
	recreated := newPod("ml", "new", thisNode, map[string]string{"team": "infra"})
	recreated.UID = "uid-second"
	a.create(t, recreated)
	poll.Until(t, "the recreated pod's UID shows", func() bool {
		info, _ := s.Lookup("ml", "new")
		return info.UID == "uid-second"
	})
}

func TestStoreCapLogsOncePerPod(t *testing.T) {
	t.Parallel()
	many := map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}
	p1 := newPod("ml", "p1", thisNode, many)
	a := newAPIServer(t, p1, newPod("ml", "p2", thisNode, many))
	s, logs := startStore(t, a, Config{Node: thisNode, Allowlist: regexp.MustCompile(".*"), MaxLabels: 2})

	info, _ := s.Lookup("ml", "p1")
	if want := (Info{Labels: []Label{{"label_a", "1"}, {"label_b", "2"}}}); !info.equal(want) {
		t.Errorf("capped Lookup = %+v, want %+v", info, want)
	}
	// Another change to p1, still over the cap, is not logged again.
	p1 = p1.DeepCopy()
	p1.Labels["a"] = "changed"
	a.update(t, p1)
	poll.Until(t, "the update shows", func() bool { return labelValue(s, "ml", "p1", "label_a") == "changed" })
	const msg = "extra labels dropped"
	if n := logs.count(msg); n != 2 {
		t.Errorf("%d %q log lines, want 2 (one per pod):\n%s", n, msg, logs)
	}
	if !strings.Contains(logs.String(), `dropped="[c d]"`) {
		t.Errorf("log does not name the dropped keys:\n%s", logs)
	}
}

func TestStoreUIDOnly(t *testing.T) {
	t.Parallel()
	a := newAPIServer(t, newPod("ml", "train", thisNode, map[string]string{"team": "ml"}))
	s, _ := startStore(t, a, Config{Node: thisNode, UID: true})
	if info, ok := s.Lookup("ml", "train"); !ok || !info.equal(Info{UID: "uid-ml-train"}) {
		t.Errorf("Lookup = %+v, %v; want the UID and no labels", info, ok)
	}
}

func TestStoreLabelsWithoutUID(t *testing.T) {
	t.Parallel()
	a := newAPIServer(t, newPod("ml", "train", thisNode, map[string]string{"team": "ml"}))
	s, _ := startStore(t, a, Config{Node: thisNode, Allowlist: regexp.MustCompile("^team$")})
	if info, ok := s.Lookup("ml", "train"); !ok || !info.equal(Info{Labels: []Label{{"label_team", "ml"}}}) {
		t.Errorf("Lookup = %+v, %v; want the label and no UID", info, ok)
	}
}

// TestStoreForbidden: without RBAC, Run gives up waiting after the sync
// timeout, says why once, and the store syncs when access is granted.
func TestStoreForbidden(t *testing.T) {
	t.Parallel()
	a := newAPIServer(t, newPod("ml", "train", thisNode, map[string]string{"team": "ml"}))
	a.setForbidden(true)
	logs := &logBuffer{}
	s, err := New(fakePods(a.client), Config{Node: thisNode, UID: true, SyncTimeout: 300 * time.Millisecond}, newLogger(logs), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.Run(t.Context()); err != nil {
		t.Fatalf("Run must not fail when the informer does not sync: %v", err)
	}
	if got := testutil.ToFloat64(s.m.synced); got != 0 {
		t.Errorf("gpu_exporter_pod_informer_synced = %v, want 0", got)
	}
	if known(s, "ml", "train") {
		t.Error("a pod is known before any list succeeded")
	}
	for _, want := range []string{"pod informer has not synced", "grant the exporter's service account list and watch on pods"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}

	a.setForbidden(false) // the reflector retries after its backoff (about 1s)
	poll.Until(t, "the informer syncs", func() bool { return testutil.ToFloat64(s.m.synced) == 1 })
	if !known(s, "ml", "train") {
		t.Error("the pod is unknown after the informer synced")
	}
	if n := logs.count("listing or watching pods is forbidden;"); n != 1 {
		t.Errorf("%d forbidden log lines, want 1 (one per distinct error):\n%s", n, logs)
	}
	poll.Until(t, "the sync is logged", func() bool { return logs.count("pod informer synced") == 1 })
}

func TestStoreRunErrors(t *testing.T) {
	t.Parallel()
	a := newAPIServer(t)
	s, err := New(fakePods(a.client), Config{Node: thisNode, UID: true}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Run with a cancelled context: err = %v, want context.Canceled", err)
	}
	if err := s.Run(t.Context()); err == nil {
		t.Error("a second Run succeeded")
	}
}

func TestStoreEmptyNodeWarns(t *testing.T) {
	t.Parallel()
	a := newAPIServer(t, newPod("ml", "elsewhere", otherNode, nil))
	_, logs := startStore(t, a, Config{Node: thisNode, UID: true})
	poll.Until(t, "the warning is logged", func() bool { return logs.count("is NODE_NAME right?") == 1 })
}

// newIdleStore is a Store whose informer never runs: tests feed events to
// its handlers directly.
func newIdleStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := New(fakePods(fake.NewClientset()), cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestVersion(t *testing.T) {
	t.Parallel()
	s := newIdleStore(t, Config{Node: thisNode, Allowlist: regexp.MustCompile("^team$"), UID: true})
	pod := newPod("ml", "train", thisNode, map[string]string{"team": "ml", "other": "x"})
	steps := []struct {
		name  string
		event func()
		bump  bool
	}{
		{"add", func() { s.upsert(toAPIPod(pod)) }, true},
		{"same content again", func() { s.upsert(toAPIPod(pod)) }, false},
		{"non-allowlisted label changes", func() {
			p := pod.DeepCopy()
			p.Labels["other"] = "y"
			s.upsert(toAPIPod(p))
		}, false},
		{"allowlisted label changes", func() {
			pod = pod.DeepCopy()
			pod.Labels["team"] = "infra"
			s.upsert(toAPIPod(pod))
		}, true},
		{"UID changes", func() {
			pod = pod.DeepCopy()
			pod.UID = "uid-2"
			s.upsert(toAPIPod(pod))
		}, true},
		{"pod of another node", func() { s.upsert(toAPIPod(newPod("ml", "far", otherNode, nil))) }, false},
		{"delete", func() { s.onDelete(toAPIPod(pod)) }, true},
		{"delete of an unknown pod", func() { s.onDelete(toAPIPod(pod)) }, false},
		{"add without labels", func() { s.upsert(toAPIPod(newPod("ml", "bare", thisNode, nil))) }, true},
		{"tombstone delete", func() {
			s.onDelete(cacheTombstone("ml/bare"))
		}, true},
	}
	for _, step := range steps {
		before := s.Version()
		step.event()
		after := s.Version()
		if got := after > before; got != step.bump {
			t.Errorf("%s: Version %d → %d, want bump %v", step.name, before, after, step.bump)
		}
	}
	if known(s, "ml", "bare") {
		t.Error("tombstoned pod still known")
	}
}

func TestLookupAllocatesNothing(t *testing.T) {
	// Not parallel: AllocsPerRun counts every goroutine's allocations.
	s := newIdleStore(t, Config{Node: thisNode, Allowlist: regexp.MustCompile(".*"), UID: true})
	s.upsert(toAPIPod(newPod("ml", "train", thisNode, map[string]string{"team": "ml", "app": "x"})))
	ns, pod, missing := "ml", "train", "missing"
	if n := testing.AllocsPerRun(1000, func() { s.Lookup(ns, pod) }); n != 0 {
		t.Errorf("Lookup of a known pod: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { s.Lookup(ns, missing) }); n != 0 {
		t.Errorf("Lookup of an unknown pod: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { s.Version() }); n != 0 {
		t.Errorf("Version: %v allocations, want 0", n)
	}
}

func TestSlimPodKeepsWhatLookupNeeds(t *testing.T) {
	t.Parallel()
	full := newPod("ml", "train", thisNode, map[string]string{"team": "ml"})
	full.ResourceVersion = "42"
	full.Annotations = map[string]string{"big": strings.Repeat("x", 1000)}
	full.Spec.Containers = []corev1.Container{{Name: "main", Image: "cuda"}}
	full.Status.Phase = corev1.PodRunning
	got, err := slimPod(toAPIPod(full))
	if err != nil {
		t.Fatal(err)
	}
	slim := got.(*apiPod)
	if slim.Name != "train" || slim.Namespace != "ml" || slim.UID != full.UID || slim.ResourceVersion != "42" ||
		slim.Labels["team"] != "ml" || slim.Spec.NodeName != thisNode {
		t.Errorf("slimPod lost a needed field: %+v", slim)
	}
	if slim.Annotations != nil || slim.ManagedFields != nil {
		t.Errorf("slimPod kept fields nothing reads: %+v", slim)
	}
	tomb := cacheTombstone("ml/train")
	if got, _ := slimPod(tomb); got != tomb {
		t.Error("slimPod changed a non-pod object")
	}
}

func cacheTombstone(key string) cache.DeletedFinalStateUnknown {
	return cache.DeletedFinalStateUnknown{Key: key}
}
