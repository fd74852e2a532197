package podresources

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim/kubelet"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// syncBuffer collects log output written from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// count returns how many log lines contain s.
func (b *syncBuffer) count(s string) int {
	n := 0
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

type harness struct {
	t    *testing.T
	sock string
	srv  *kubelet.Server
	c    *Client
	reg  *prometheus.Registry
	logs *syncBuffer
}

// newHarness starts a fake kubelet (unless serve is false) and a client on
// its socket. Refreshes are driven by calling h.refresh: the refresh
// interval is an hour, so Run, where a test starts it, refreshes once and
// then only after failures (backoff 5ms doubling to 40ms).
func newHarness(t *testing.T, serve bool, edit func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, sock: filepath.Join(t.TempDir(), "kubelet.sock"), reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	if len(h.sock) >= 104 {
		t.Fatalf("socket path %q too long for a unix socket", h.sock)
	}
	if serve {
		h.start()
	}
	cfg := DefaultConfig()
	cfg.Socket = h.sock
	cfg.RefreshInterval = time.Hour
	cfg.CallTimeout = 5 * time.Second
	cfg.MinBackoff, cfg.MaxBackoff = 5*time.Millisecond, 40*time.Millisecond
	if edit != nil {
		edit(&cfg)
	}
	logger := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := New(cfg, logger, h.reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.c = c
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if h.srv != nil {
			h.srv.Stop()
		}
	})
	return h
}

func (h *harness) start() {
	h.t.Helper()
	srv, err := kubelet.Start(h.sock)
	if err != nil {
		h.t.Fatalf("kubelet.Start: %v", err)
	}
	h.srv = srv
}

func (h *harness) stop() {
	h.srv.Stop()
	h.srv = nil
}

func (h *harness) refresh() error {
	h.t.Helper()
	return h.c.refresh(context.Background())
}

func (h *harness) mustRefresh() {
	h.t.Helper()
	if err := h.refresh(); err != nil {
		h.t.Fatalf("refresh: %v", err)
	}
	if !h.c.Up() {
		h.t.Fatal("Up() = false after a successful refresh")
	}
}

// metric returns the value of a counter or gauge, or a histogram's count.
func (h *harness) metric(name string, labels ...string) float64 {
	h.t.Helper()
	families, err := h.reg.Gather()
	if err != nil {
		h.t.Fatalf("Gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
				}
				if !found {
					continue metrics
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	h.t.Fatalf("metric %s%v not found", name, labels)
	return 0
}

func gpuPod(ns, name, resource string, ids ...string) kubelet.Pod {
	return kubelet.Pod{Namespace: ns, Name: name, Containers: []kubelet.Container{{Name: "main", Devices: []kubelet.Device{{Resource: resource, IDs: ids}}}}}
}

func names(hs []Holder) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Namespace+"/"+h.Pod+"/"+h.Container)
	}
	return out
}

func TestClientAttributionOverTheWire(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	inv := testInventory()
	gpu0, gpu1, gi1, gi2 := &inv.Entities[0], &inv.Entities[1], &inv.Entities[2], &inv.Entities[3]
	h.srv.SetPods([]kubelet.Pod{
		gpuPod("a", "p1", "nvidia.com/gpu.shared", uuid0+"::0"),
		gpuPod("a", "p2", "nvidia.com/gpu.shared", uuid0+"::1"),
		gpuPod("b", "p3", "nvidia.com/gpu.shared", uuid0+"::2"),
		gpuPod("c", "mig-small", "nvidia.com/mig-3g.40gb", mig0),
		gpuPod("c", "mig-legacy", "nvidia.com/mig-3g.40gb", "MIG-"+uuid1+"/2/0"),
		{Namespace: "d", Name: "dra", Containers: []kubelet.Container{{Name: "main", Claims: []kubelet.Claim{{
			Name: "gpu", Namespace: "d", Devices: []kubelet.ClaimDevice{{Driver: "gpu.nvidia.com", Pool: "node", Device: "gpu-0", CDIDevices: []string{"k8s.gpu.nvidia.com/device=gpu-0"}}},
		}}}}},
	})
	h.mustRefresh()
	tab := h.c.Table()
	for _, tt := range []struct {
		e    *source.Entity
		want []string
	}{
		{gpu0, []string{"a/p1/main", "a/p2/main", "b/p3/main", "d/dra/main"}},
		{gpu1, nil},
		{gi1, []string{"c/mig-small/main"}},
		{gi2, []string{"c/mig-legacy/main"}},
	} {
		if got := names(tab.Holders(tt.e)); !slices.Equal(got, tt.want) {
			t.Errorf("Holders(%s) = %q, want %q", tt.e.Key(), got, tt.want)
		}
	}
	if u := tab.Unmatched(inv); u != nil {
		t.Errorf("Unmatched = %q", u)
	}
}

func TestClientFollowsPodsBetweenRefreshes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	gpu0 := &testInventory().Entities[0]
	steps := []struct {
		pods []kubelet.Pod
		want []string
	}{
		{nil, nil},
		{[]kubelet.Pod{gpuPod("ml", "train-1", "nvidia.com/gpu", uuid0)}, []string{"ml/train-1/main"}},
		{[]kubelet.Pod{gpuPod("ml", "train-2", "nvidia.com/gpu", uuid0)}, []string{"ml/train-2/main"}},
		{[]kubelet.Pod{gpuPod("ml", "train-2", "nvidia.com/gpu", uuid1)}, nil},
		{[]kubelet.Pod{gpuPod("ml", "train-3", "nvidia.com/gpu", uuid0), gpuPod("ml", "train-2", "nvidia.com/gpu", uuid0)},
			[]string{"ml/train-2/main", "ml/train-3/main"}},
		{nil, nil},
	}
	for i, step := range steps {
		h.srv.SetPods(step.pods)
		h.mustRefresh()
		if got := names(h.c.Table().Holders(gpu0)); !slices.Equal(got, step.want) {
			t.Errorf("step %d: holders %q, want %q", i, got, step.want)
		}
	}
	if got := h.srv.ListCalls(); got != int64(len(steps)) {
		t.Errorf("ListCalls = %d, want one per refresh (%d)", got, len(steps))
	}
}

func TestClientPodsFunc(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	gpu0 := &testInventory().Entities[0]
	var mu sync.Mutex
	holder := "first"
	h.srv.SetPodsFunc(func() []kubelet.Pod {
		mu.Lock()
		defer mu.Unlock()
		return []kubelet.Pod{gpuPod("ml", holder, "nvidia.com/gpu", uuid0)}
	})
	for _, want := range []string{"first", "second"} {
		mu.Lock()
		holder = want
		mu.Unlock()
		h.mustRefresh()
		if got := names(h.c.Table().Holders(gpu0)); !slices.Equal(got, []string{"ml/" + want + "/main"}) {
			t.Errorf("holders %q, want pod %s", got, want)
		}
	}
}

func TestClientSocketMissingAtStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, false, nil)
	gpu0 := &testInventory().Entities[0]
	for range 3 {
		err := h.refresh()
		if !errors.Is(err, errSocketMissing) {
			t.Fatalf("refresh error = %v, want the socket to be missing", err)
		}
		if h.c.Up() || h.c.Table().Len() != 0 {
			t.Fatal("client up or table not empty without a kubelet")
		}
	}
	if got := h.metric("gpu_exporter_podresources_errors_total", "reason", "dial"); got != 3 {
		t.Errorf("dial errors = %v, want 3", got)
	}
	if got := h.metric("gpu_exporter_podresources_up"); got != 0 {
		t.Errorf("up = %v", got)
	}
	if n := h.logs.count("pod attribution off"); n != 1 {
		t.Errorf("logged the outage %d times, want once:\n%s", n, h.logs)
	}
	if !strings.Contains(h.logs.String(), "mounted") {
		t.Errorf("log does not hint at the missing mount:\n%s", h.logs)
	}

	h.start()
	h.srv.SetPods([]kubelet.Pod{gpuPod("ml", "train", "nvidia.com/gpu", uuid0)})
	h.mustRefresh()
	if got := names(h.c.Table().Holders(gpu0)); !slices.Equal(got, []string{"ml/train/main"}) {
		t.Errorf("holders after the socket appeared = %q", got)
	}
	if n := h.logs.count("pod attribution on"); n != 1 {
		t.Errorf("logged the recovery %d times, want once:\n%s", n, h.logs)
	}
	if got := h.metric("gpu_exporter_podresources_up"); got != 1 {
		t.Errorf("up = %v", got)
	}
}

func TestClientRunReconnectsAfterKubeletRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	gpu0 := &testInventory().Entities[0]
	h.srv.SetPods([]kubelet.Pod{gpuPod("ml", "train", "nvidia.com/gpu", uuid0)})

	// Run waits 1ms whatever it asks for, and its requested waits are kept.
	var mu sync.Mutex
	var waits []time.Duration
	h.c.after = func(d time.Duration) <-chan time.Time {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return time.After(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.c.Run(ctx)
	}()
	holders := func() []string { return names(h.c.Table().Holders(gpu0)) }
	poll.Until(t, "first refresh", func() bool { return h.c.Up() && len(holders()) == 1 })

	h.stop() // the kubelet restarts: its socket goes away...
	poll.Until(t, "the client to notice", func() bool { return !h.c.Up() && h.c.Table().Len() == 0 })
	poll.Until(t, "backoff to reach its cap", func() bool { return h.metric("gpu_exporter_podresources_errors_total", "reason", "dial") >= 6 })
	if got := holders(); got != nil {
		t.Errorf("holders while the kubelet is down = %q", got)
	}

	h.start() // ...and comes back with other pods.
	h.srv.SetPods([]kubelet.Pod{gpuPod("ml", "train-2", "nvidia.com/gpu", uuid0)})
	poll.Until(t, "reconnect", func() bool { return h.c.Up() && slices.Equal(holders(), []string{"ml/train-2/main"}) })
	poll.Until(t, "a wait after reconnecting", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return waits[len(waits)-1] == time.Hour
	})
	cancel()
	<-done

	// Waits: the refresh interval while up, then 5ms doubling to the 40ms
	// cap while down, then the refresh interval again.
	mu.Lock()
	defer mu.Unlock()
	i := slices.IndexFunc(waits, func(d time.Duration) bool { return d != time.Hour })
	j := i + slices.Index(waits[i:], time.Hour)
	if i < 1 || j < i+6 {
		t.Fatalf("waits = %v: want up, at least 6 retries, up", waits)
	}
	for k, d := range waits[i:j] {
		if want := min(5*time.Millisecond<<k, 40*time.Millisecond); d != want {
			t.Errorf("retry %d waited %s, want %s (waits %v)", k+1, d, want, waits)
		}
	}
	// Once, or twice if the first failure caught the kubelet between closing
	// connections and removing its socket (a change of cause).
	if n := h.logs.count("pod attribution off"); n < 1 || n > 2 {
		t.Errorf("logged the outage %d times, want once per cause:\n%s", n, h.logs)
	}
}

func TestBackoffDelay(t *testing.T) {
	t.Parallel()
	const minD, maxD = 100 * time.Millisecond, time.Second
	want := []time.Duration{100, 100, 200, 400, 800, 1000, 1000}
	for failures, w := range want {
		if got := backoffDelay(failures, minD, maxD); got != w*time.Millisecond && !(w >= 1000 && got == maxD) {
			t.Errorf("backoffDelay(%d) = %s, want %s", failures, got, w*time.Millisecond)
		}
	}
	if got := backoffDelay(1000, minD, maxD); got != maxD {
		t.Errorf("backoffDelay(1000) = %s, want the cap", got)
	}
}

// listBudget records the time left to each List call when it is made: the
// deadline the client sets, which gRPC sends to the kubelet.
type listBudget struct {
	podresourcesv1.PodResourcesListerClient
	mu       sync.Mutex
	left     time.Duration
	deadline bool
}

func (b *listBudget) List(ctx context.Context, req *podresourcesv1.ListPodResourcesRequest, opts ...grpc.CallOption) (*podresourcesv1.ListPodResourcesResponse, error) {
	d, ok := ctx.Deadline()
	b.mu.Lock()
	b.left, b.deadline = time.Until(d), ok
	b.mu.Unlock()
	return b.PodResourcesListerClient.List(ctx, req, opts...)
}

// TestClientKubeletHang: a List the kubelet never answers fails at the
// call timeout, the client is down and attributes nothing, and recovers
// with the kubelet. The kubelet hangs for an hour: the refresh returning
// at all shows a deadline, and the deadline the call carried shows it is
// the configured 100ms; the refresh is waited for with a deadline, not
// timed.
func TestClientKubeletHang(t *testing.T) {
	t.Parallel()
	const callTimeout = 100 * time.Millisecond
	h := newHarness(t, true, func(cfg *Config) { cfg.CallTimeout = callTimeout })
	h.srv.SetPods([]kubelet.Pod{gpuPod("ml", "train", "nvidia.com/gpu", uuid0)})
	h.mustRefresh()
	budget := &listBudget{PodResourcesListerClient: h.c.lister}
	h.c.lister = budget
	h.srv.SetHang(time.Hour)
	done := make(chan error, 1)
	go func() { done <- h.c.refresh(context.Background()) }()
	err := poll.Receive(t, "the refresh to give up on the hung kubelet", done)
	if status.Code(errors.Unwrap(err)) != codes.DeadlineExceeded {
		t.Fatalf("refresh error = %v, want a deadline", err)
	}
	budget.mu.Lock()
	left, deadline := budget.left, budget.deadline
	budget.mu.Unlock()
	if !deadline || left > callTimeout {
		t.Errorf("List called with %s left (deadline set: %v), want at most the %s call timeout", left, deadline, callTimeout)
	}
	if h.c.Up() || h.c.Table().Len() != 0 {
		t.Error("client up, or attributing, while the kubelet hangs")
	}
	if got := h.metric("gpu_exporter_podresources_errors_total", "reason", "timeout"); got != 1 {
		t.Errorf("timeout errors = %v, want 1", got)
	}
	h.srv.SetHang(0)
	h.mustRefresh()
	if h.c.Table().Len() != 1 {
		t.Errorf("table after the hang = %d allocations, want 1", h.c.Table().Len())
	}
}

func TestClientListFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		break_ func(*kubelet.Server)
		reason string
	}{
		{"error status", func(s *kubelet.Server) { s.SetError(status.Error(codes.Internal, "boom")) }, "list"},
		{"plain error", func(s *kubelet.Server) { s.SetError(errors.New("boom")) }, "list"},
		{"unavailable", func(s *kubelet.Server) { s.SetError(status.Error(codes.Unavailable, "restarting")) }, "dial"},
		{"reply that does not decode", func(s *kubelet.Server) { s.SetRawListReply([]byte{0xff, 0xff, 0xff}) }, "list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, true, nil)
			h.srv.SetPods([]kubelet.Pod{gpuPod("ml", "train", "nvidia.com/gpu", uuid0)})
			h.mustRefresh()
			tt.break_(h.srv)
			if err := h.refresh(); err == nil {
				t.Fatal("refresh succeeded")
			}
			if h.c.Up() || h.c.Table().Len() != 0 || h.c.Allocatable() != nil {
				t.Error("client up, or attributing, after a failed List")
			}
			if got := h.metric("gpu_exporter_podresources_errors_total", "reason", tt.reason); got != 1 {
				t.Errorf("errors{reason=%q} = %v, want 1", tt.reason, got)
			}
			h.srv.SetError(nil)
			h.srv.SetRawListReply(nil)
			h.mustRefresh()
			if h.c.Table().Len() != 1 {
				t.Error("table not back after the kubelet recovered")
			}
		})
	}
}

func TestClientMalformedIDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	gpu0 := &testInventory().Entities[0]
	h.srv.SetPods([]kubelet.Pod{gpuPod("ml", "train", "nvidia.com/gpu", uuid0, "GPU-bogus")})
	for range 3 {
		h.mustRefresh()
	}
	if n := h.logs.count("does not parse"); n != 1 {
		t.Errorf("malformed id logged %d times, want once:\n%s", n, h.logs)
	}
	if got := h.metric("gpu_exporter_podresources_errors_total", "reason", "malformed_id"); got != 1 {
		t.Errorf("malformed_id errors = %v, want 1", got)
	}
	if got := names(h.c.Table().Holders(gpu0)); !slices.Equal(got, []string{"ml/train/main"}) {
		t.Errorf("a malformed id stopped attribution: holders %q", got)
	}
	if u := h.c.Table().Unmatched(testInventory()); !slices.Equal(u, []string{"GPU-bogus"}) {
		t.Errorf("Unmatched = %q", u)
	}
	h.srv.SetPods([]kubelet.Pod{gpuPod("ml", "train", "nvidia.com/gpu", uuid0, "GPU-bogus", "weird")})
	h.mustRefresh()
	h.mustRefresh()
	if n := h.logs.count("does not parse"); n != 2 {
		t.Errorf("malformed ids logged %d times, want once each:\n%s", n, h.logs)
	}
	if got := h.metric("gpu_exporter_podresources_errors_total", "reason", "malformed_id"); got != 2 {
		t.Errorf("malformed_id errors = %v, want 2", got)
	}
}

func TestClientUnknownResources(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	h.srv.SetPods([]kubelet.Pod{gpuPod("net", "router", "rdma/hca", "mlx5_0"), gpuPod("ml", "train", "example.com/gpu", uuid0)})
	for range 3 {
		h.mustRefresh()
	}
	if h.c.Table().Len() != 0 {
		t.Errorf("unknown resources attributed: %d allocations", h.c.Table().Len())
	}
	if n := h.logs.count("matches the configured resource names"); n != 1 {
		t.Errorf("no-match warning logged %d times, want once:\n%s", n, h.logs)
	}
	if !strings.Contains(h.logs.String(), "example.com/gpu") {
		t.Errorf("warning does not list the reported resource names:\n%s", h.logs)
	}
	// Once a configured resource appears, the others are ignored quietly.
	h.srv.SetPods([]kubelet.Pod{gpuPod("net", "router", "rdma/hca", "mlx5_0"), gpuPod("ml", "train", "nvidia.com/gpu", uuid0)})
	h.mustRefresh()
	h.mustRefresh()
	if h.c.Table().Len() != 1 {
		t.Errorf("table has %d allocations, want the nvidia.com/gpu one", h.c.Table().Len())
	}
	if n := h.logs.count("matches the configured resource names"); n != 1 {
		t.Errorf("no-match warning logged %d times after a match, want still once", n)
	}
}

func TestClientTablePointer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	pods := []kubelet.Pod{gpuPod("ml", "a", "nvidia.com/gpu", uuid0), gpuPod("ml", "b", "nvidia.com/gpu", uuid1)}
	h.srv.SetPods(pods)
	h.mustRefresh()
	first := h.c.Table()
	h.srv.SetPods([]kubelet.Pod{pods[1], pods[0]}) // same content, other order
	h.mustRefresh()
	if h.c.Table() != first {
		t.Error("table pointer changed although the content did not")
	}
	h.srv.SetPods(pods[:1])
	h.mustRefresh()
	second := h.c.Table()
	if second == first || second.Len() != 1 {
		t.Error("table pointer kept although a pod ended")
	}
	h.srv.SetError(errors.New("down"))
	_ = h.refresh()
	down := h.c.Table()
	_ = h.refresh()
	if h.c.Table() != down || down.Len() != 0 {
		t.Error("empty table pointer not stable while down")
	}
}

func TestClientScrapesDoNotCallKubelet(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	h.srv.SetPods([]kubelet.Pod{gpuPod("ml", "a", "nvidia.com/gpu", uuid0)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.c.Run(ctx) // refresh interval: one hour
	}()
	defer func() {
		cancel()
		<-done
	}()
	poll.Until(t, "first refresh", h.c.Up)
	inv := testInventory()
	for range 100 {
		tab := h.c.Table()
		for i := range inv.Entities {
			tab.Holders(&inv.Entities[i])
		}
	}
	if got := h.srv.ListCalls(); got != 1 {
		t.Errorf("100 Table() calls within a refresh interval made %d List calls, want 1", got)
	}
	if got := h.metric("gpu_exporter_podresources_refreshes_total"); got != 1 {
		t.Errorf("refreshes = %v, want 1", got)
	}
	if got := h.metric("gpu_exporter_podresources_list_duration_seconds"); got != 1 {
		t.Errorf("list duration samples = %v, want 1", got)
	}
}

func TestClientAllocatable(t *testing.T) {
	t.Parallel()
	t.Run("supported", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, true, nil)
		h.srv.SetAllocatable(map[string][]string{
			"nvidia.com/gpu": {uuid1, uuid0},
			"rdma/hca":       {"mlx5_0"},
		})
		h.mustRefresh()
		if got := h.c.Allocatable(); !slices.Equal(got, []string{uuid1, uuid0}) { // sorted
			t.Errorf("Allocatable = %q", got)
		}
		h.mustRefresh()
		if got := h.srv.AllocatableCalls(); got != 2 {
			t.Errorf("AllocatableCalls = %d, want one per refresh", got)
		}
		// Allocatable resources count as reported: no "nothing matches" warning.
		if n := h.logs.count("matches the configured resource names"); n != 0 {
			t.Errorf("no-match warning with an allocatable GPU resource:\n%s", h.logs)
		}
	})
	t.Run("unimplemented", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, true, nil)
		for range 3 {
			h.mustRefresh()
		}
		if got := h.srv.AllocatableCalls(); got != 1 {
			t.Errorf("AllocatableCalls = %d, want 1: Unimplemented is remembered", got)
		}
		if got := h.c.Allocatable(); got != nil {
			t.Errorf("Allocatable = %q, want nil", got)
		}
		if got := h.metric("gpu_exporter_podresources_errors_total", "reason", "allocatable"); got != 0 {
			t.Errorf("allocatable errors = %v: Unimplemented is not an error", got)
		}
	})
	t.Run("feature gate off", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, true, nil)
		h.srv.SetAllocatable(map[string][]string{"nvidia.com/gpu": advertised(uuid0, 4)})
		h.srv.SetAllocatableError(kubelet.ErrAllocatableDisabled)
		for range 3 {
			h.mustRefresh()
		}
		if got := h.srv.AllocatableCalls(); got != 1 {
			t.Errorf("AllocatableCalls = %d, want 1: the gate's refusal is remembered", got)
		}
		if got := h.metric("gpu_exporter_podresources_errors_total", "reason", "allocatable"); got != 0 {
			t.Errorf("allocatable errors = %v: a kubelet with the gate off is not failing", got)
		}
		if n := h.logs.count("GetAllocatableResources failed"); n != 0 {
			t.Errorf("the gate's refusal logged as a failure:\n%s", h.logs)
		}
		if n := h.logs.count("does not serve GetAllocatableResources"); n != 1 {
			t.Errorf("the gate's refusal logged %d times, want once:\n%s", n, h.logs)
		}
		if got := h.c.Table().Replicas(&testInventory().Entities[0]); got != 0 {
			t.Errorf("Replicas = %d without GetAllocatableResources, want 0", got)
		}
	})
	t.Run("replicas", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, true, nil)
		h.srv.SetPods([]kubelet.Pod{gpuPod("ml", "a", "nvidia.com/gpu.shared", uuid0+"::1")})
		h.srv.SetAllocatable(map[string][]string{
			"nvidia.com/gpu.shared": advertised(uuid0, 4),
			"nvidia.com/gpu":        {uuid1},
		})
		h.mustRefresh()
		inv := testInventory()
		first := h.c.Table()
		if got := first.Replicas(&inv.Entities[0]); got != 4 {
			t.Errorf("Replicas(gpu 0) = %d, want 4", got)
		}
		if got := first.Replicas(&inv.Entities[1]); got != 0 {
			t.Errorf("Replicas(gpu 1) = %d, want 0: it is not shared", got)
		}
		if hs := first.Holders(&inv.Entities[0]); len(hs) != 1 || hs[0].Replicas != 1 {
			t.Errorf("Holders(gpu 0) = %+v, want one holder of one replica", hs)
		}
		h.mustRefresh()
		if h.c.Table() != first {
			t.Error("an unchanged refresh published a new table")
		}
		h.srv.SetAllocatable(map[string][]string{"nvidia.com/gpu.shared": advertised(uuid0, 8)})
		h.mustRefresh()
		if got := h.c.Table().Replicas(&inv.Entities[0]); got != 8 {
			t.Errorf("Replicas(gpu 0) after the config changed = %d, want 8", got)
		}
		h.srv.SetAllocatable(nil) // Unimplemented from now on
		h.mustRefresh()
		if got := h.c.Table().Replicas(&inv.Entities[0]); got != 0 {
			t.Errorf("Replicas(gpu 0) once GetAllocatableResources stopped answering = %d, want 0", got)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, true, nil)
		h.srv.SetAllocatable(map[string][]string{"nvidia.com/gpu": append(advertised(uuid0, 4), uuid0+"::x")})
		for range 3 {
			h.mustRefresh()
		}
		if got := h.c.Table().Replicas(&testInventory().Entities[0]); got != 0 {
			t.Errorf("Replicas = %d with a malformed replica id, want 0 (unknown)", got)
		}
		if got := h.metric("gpu_exporter_podresources_errors_total", "reason", "malformed_id"); got != 1 {
			t.Errorf("malformed_id errors = %v over three refreshes, want 1 (once per id)", got)
		}
		if n := h.logs.count("listed allocatable device ids that do not parse"); n != 1 {
			t.Errorf("malformed allocatable id logged %d times, want once:\n%s", n, h.logs)
		}
	})
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		field string
		edit  func(*Config)
	}{
		{"Socket", func(c *Config) { c.Socket = "" }},
		{"RefreshInterval", func(c *Config) { c.RefreshInterval = 0 }},
		{"CallTimeout", func(c *Config) { c.CallTimeout = 0 }},
		{"CallTimeout", func(c *Config) { c.CallTimeout = 2 * c.RefreshInterval }},
		{"ResourceNames", func(c *Config) { c.ResourceNames = nil }},
		{"ResourceNames", func(c *Config) { c.ResourceNames = []string{"nvidia.com/["} }},
		{"ResourceNames", func(c *Config) { c.ResourceNames = []string{""} }},
		{"IDType", func(c *Config) { c.IDType = 42 }},
		{"MinBackoff", func(c *Config) { c.MinBackoff = -time.Second }},
		{"MaxBackoff", func(c *Config) { c.MaxBackoff = c.MinBackoff / 2 }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			tt.edit(&cfg)
			_, err := New(cfg, nil, nil)
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Errorf("New error = %v, want one naming %s", err, tt.field)
			}
		})
	}
	c, err := New(DefaultConfig(), nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("New(DefaultConfig()) = %v", err)
	}
	if c.Up() || c.Table() == nil || c.Table().Len() != 0 {
		t.Error("a new client is up or has no empty table")
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}

func TestNewRegistersMetricsOnce(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	c, err := New(cfg, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := New(cfg, nil, reg); err == nil {
		t.Error("a second client on one registry registered its metrics twice")
	}
}
