package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// fakeSource counts calls and returns what the test sets.
type fakeSource struct {
	mu      sync.Mutex
	inv     *source.Inventory
	set     []fields.Field
	err     error
	block   chan struct{} // when non-nil, Read waits on it, ignoring ctx
	xids    []source.XIDEvent
	fabric  int // Sample.FabricErrors of the next Read
	reads   atomic.Int64
	watches atomic.Int64
}

func newFakeSource(gpus int) *fakeSource {
	inv := &source.Inventory{DriverVersion: "550.54.15"}
	for i := 0; i < gpus; i++ {
		inv.Entities = append(inv.Entities, source.Entity{
			Kind: source.GPU, GPU: i, UUID: "GPU-" + strings.Repeat(string(rune('a'+i)), 8) + "-0000-0000-0000-000000000000",
			Device: "nvidia" + string(rune('0'+i)), Model: "NVIDIA H100 80GB HBM3", GPUInstance: -1, ComputeInstance: -1,
		})
	}
	return &fakeSource{inv: inv}
}

func (f *fakeSource) Name() string { return "fake" }
func (f *fakeSource) Inventory(context.Context) (*source.Inventory, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inv, nil
}
func (f *fakeSource) Watch(_ context.Context, set []fields.Field) error {
	f.watches.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set = set
	return nil
}
func (f *fakeSource) Read(ctx context.Context) (*source.Sample, error) {
	f.reads.Add(1)
	f.mu.Lock()
	block, err, inv, set, xids, fabric := f.block, f.err, f.inv, f.set, f.xids, f.fabric
	f.xids, f.fabric = nil, 0
	f.mu.Unlock()
	if block != nil {
		<-block
	}
	if err != nil {
		return nil, err
	}
	s := source.NewSample(time.Now(), inv, set)
	for e := range inv.Entities {
		for c := range set {
			s.Set(e, c, source.IntValue(int64(e*10+c)))
		}
	}
	s.XIDs = xids
	s.FabricErrors = fabric
	return s, nil
}
func (f *fakeSource) Close() error { return nil }

func (f *fakeSource) update(fn func(f *fakeSource)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

type staticAttribution struct{ t *podresources.Table }

func (s staticAttribution) Table() *podresources.Table { return s.t }

func testFields(t *testing.T) []fields.Field {
	t.Helper()
	cat := fields.MustNew()
	var out []fields.Field
	for _, n := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP"} {
		f, _ := cat.Lookup(n)
		out = append(out, f)
	}
	return out
}

func newTestCollector(t *testing.T, src source.Source, attr Attribution, timeout time.Duration) (*Collector, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	c, err := New(Config{Interval: time.Hour, Timeout: timeout, Fields: testFields(t)}, src, attr, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	return c, reg
}

func TestCollectPublishesPage(t *testing.T) {
	t.Parallel()
	src := newFakeSource(2)
	c, reg := newTestCollector(t, src, nil, time.Second)
	if c.Ready() || len(c.Page().Text) != 0 {
		t.Fatal("ready or non-empty before the first collection")
	}
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !c.Ready() {
		t.Error("not ready after a successful collection")
	}
	p := c.Page()
	if !bytes.Contains(p.Text, []byte(`gpu_temperature_celsius{gpu="1"`)) {
		t.Errorf("page lacks GPU 1 temperature:\n%s", p.Text)
	}
	if got := testutil.ToFloat64(c.m.up); got != 1 {
		t.Errorf("source_up = %v, want 1", got)
	}
	if got := testutil.ToFloat64(c.m.series); got != float64(p.Series) || p.Series != 2+2*2 {
		t.Errorf("series gauge = %v, page series = %d, want 6", got, p.Series)
	}
	if n, err := testutil.GatherAndCount(reg, "gpu_exporter_last_collection_timestamp_seconds"); err != nil || n != 1 {
		t.Errorf("last collection timestamp missing: %d %v", n, err)
	}
}

func TestScrapesNeverCallTheSource(t *testing.T) {
	t.Parallel()
	src := newFakeSource(2)
	c, _ := newTestCollector(t, src, nil, time.Second)
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	reads := src.reads.Load()
	for i := 0; i < 1000; i++ {
		_ = c.Page()
		_ = c.Ready()
	}
	if got := src.reads.Load(); got != reads {
		t.Errorf("source read %d times during page reads", got-reads)
	}
}

func TestSourceErrorDropsSeriesAndRecovers(t *testing.T) {
	t.Parallel()
	src := newFakeSource(1)
	c, _ := newTestCollector(t, src, nil, time.Second)
	ctx := context.Background()
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	src.update(func(f *fakeSource) { f.err = source.ErrUnavailable })
	if err := c.Collect(ctx); !errors.Is(err, source.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if len(c.Page().Text) != 0 {
		t.Error("stale GPU series kept after a failed collection")
	}
	if testutil.ToFloat64(c.m.up) != 0 || testutil.ToFloat64(c.m.errors.WithLabelValues("read")) != 1 {
		t.Error("failure not reflected in source_up and errors_total{stage=read}")
	}
	if !c.Ready() {
		t.Error("readiness lost: /readyz reports whether a first collection ever succeeded")
	}
	src.update(func(f *fakeSource) { f.err = nil })
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if len(c.Page().Text) == 0 || testutil.ToFloat64(c.m.up) != 1 {
		t.Error("did not recover")
	}
}

// Not parallel: it counts goroutines.
func TestHungSourceTimesOutWithoutPilingUp(t *testing.T) {
	src := newFakeSource(1)
	c, _ := newTestCollector(t, src, nil, 50*time.Millisecond)
	ctx := context.Background()
	release := make(chan struct{})
	src.update(func(f *fakeSource) { f.block = release })
	before := runtime.NumGoroutine()
	if err := c.Collect(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	for i := 0; i < 20; i++ {
		if err := c.Collect(ctx); !errors.Is(err, ErrReadInFlight) {
			t.Fatalf("collection %d: err = %v, want ErrReadInFlight", i, err)
		}
	}
	if got := src.reads.Load(); got != 1 {
		t.Errorf("source read %d times while hung, want 1", got)
	}
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Errorf("goroutines grew from %d to %d", before, after)
	}
	src.update(func(f *fakeSource) { f.block = nil })
	close(release)
	poll.Within(t, 5*time.Second, time.Millisecond, "a collection to succeed after the hung read returned", func() bool { return c.Collect(ctx) == nil })
}

func TestWatchOnceAndAgainAfterSetFields(t *testing.T) {
	t.Parallel()
	src := newFakeSource(1)
	c, _ := newTestCollector(t, src, nil, time.Second)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		_ = c.Collect(ctx)
	}
	if got := src.watches.Load(); got != 1 {
		t.Errorf("watches = %d, want 1", got)
	}
	c.SetFields(testFields(t)[:1])
	_ = c.Collect(ctx)
	if got := src.watches.Load(); got != 2 {
		t.Errorf("watches after SetFields = %d, want 2", got)
	}
	if bytes.Contains(c.Page().Text, []byte("gpu_temperature_celsius")) {
		t.Error("field removed from the set is still exported")
	}
}

// A fabric read the source reports failed (Sample.FabricErrors) is counted
// in collection_errors_total{stage="fabric"}; the collection succeeds.
func TestFabricErrorsCounted(t *testing.T) {
	t.Parallel()
	src := newFakeSource(1)
	c, _ := newTestCollector(t, src, nil, time.Second)
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		errors      int
		wantCounted float64
	}{
		{"no failure", 0, 0},
		{"one failure", 1, 1},
		{"none since", 0, 1},
		{"two failures in one sample", 2, 3},
	} {
		src.update(func(f *fakeSource) { f.fabric = tc.errors })
		if err := c.Collect(ctx); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := testutil.ToFloat64(c.m.errors.WithLabelValues("fabric")); got != tc.wantCounted {
			t.Errorf("%s: errors_total{stage=fabric} = %v, want %v", tc.name, got, tc.wantCounted)
		}
		if testutil.ToFloat64(c.m.up) != 1 || testutil.ToFloat64(c.m.errors.WithLabelValues("read")) != 0 {
			t.Errorf("%s: a fabric failure failed the collection", tc.name)
		}
	}
}

func TestXIDsCounted(t *testing.T) {
	t.Parallel()
	src := newFakeSource(2)
	c, _ := newTestCollector(t, src, nil, time.Second)
	ctx := context.Background()
	src.update(func(f *fakeSource) {
		f.xids = []source.XIDEvent{{Entity: 1, XID: 79}, {Entity: 1, XID: 79}, {Entity: 0, XID: 13}}
	})
	_ = c.Collect(ctx)
	src.update(func(f *fakeSource) { f.xids = []source.XIDEvent{{Entity: 1, XID: 79}} })
	_ = c.Collect(ctx)
	text := string(c.Page().Text)
	for _, want := range []string{`gpu="1"`, `xid="79"} 3`, `xid="13"} 1`} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %s:\n%s", want, text)
		}
	}
}

func TestJoinWithAttribution(t *testing.T) {
	t.Parallel()
	src := newFakeSource(2)
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{{
		Name: "trainer", Namespace: "ml",
		Containers: []*podresourcesv1.ContainerResources{{
			Name:    "main",
			Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{src.inv.Entities[0].UUID}}},
		}},
	}}}
	table := podresources.NewTable(resp, []string{"nvidia.com/gpu"}, podresources.IDTypeUID)
	c, _ := newTestCollector(t, src, staticAttribution{table}, time.Second)
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	text := string(c.Page().Text)
	if !strings.Contains(text, `gpu_utilization_ratio{gpu="0",uuid="`+src.inv.Entities[0].UUID+`",device="nvidia0",model="NVIDIA H100 80GB HBM3",namespace="ml",pod="trainer",container="main"}`) {
		t.Errorf("held GPU lacks pod labels:\n%s", text)
	}
	if !strings.Contains(text, `gpu_utilization_ratio{gpu="1",uuid="`+src.inv.Entities[1].UUID+`",device="nvidia1",model="NVIDIA H100 80GB HBM3"}`) {
		t.Errorf("free GPU changed:\n%s", text)
	}
	if !strings.Contains(text, `gpu_pod_allocation_info{gpu="0"`) {
		t.Error("allocation info missing")
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	src := newFakeSource(1)
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Interval: 0, Fields: testFields(t)}, "interval must be positive"},
		{Config{Interval: time.Second}, "no fields"},
		{Config{Interval: time.Second, Fields: testFields(t), MaxSeries: -1}, "max series"},
	}
	for _, tc := range cases {
		_, err := New(tc.cfg, src, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) error = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

type fakePodInfo struct {
	info    map[string]podlabels.Info
	version atomic.Uint64
}

func (f *fakePodInfo) Lookup(ns, pod string) (podlabels.Info, bool) {
	i, ok := f.info[ns+"/"+pod]
	return i, ok
}
func (f *fakePodInfo) Version() uint64 { return f.version.Load() }

func TestPodInfoLabelsHeldSeries(t *testing.T) {
	t.Parallel()
	src := newFakeSource(2)
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{{
		Name: "trainer", Namespace: "ml",
		Containers: []*podresourcesv1.ContainerResources{{
			Name:    "main",
			Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{src.inv.Entities[0].UUID}}},
		}},
	}}}
	table := podresources.NewTable(resp, []string{"nvidia.com/gpu"}, podresources.IDTypeUID)
	info := &fakePodInfo{info: map[string]podlabels.Info{
		"ml/trainer": {UID: "uid-1", Labels: []podlabels.Label{{Name: "label_team", Value: "vision"}},
			Workload: podlabels.Workload{Kind: "JobSet", Name: "pretrain", Queue: "team-a", ClusterQueue: "gpu-pool"}},
	}}
	reg := prometheus.NewRegistry()
	c, err := New(Config{Interval: time.Hour, Fields: testFields(t), PodInfo: info}, src, staticAttribution{table},
		slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	text := string(c.Page().Text)
	if !strings.Contains(text, `container="main",pod_uid="uid-1",label_team="vision"}`) {
		t.Errorf("held series lack pod_uid and pod labels:\n%s", text)
	}
	if strings.Contains(text, `gpu="1",uuid="`+src.inv.Entities[1].UUID+`",device="nvidia1",model="NVIDIA H100 80GB HBM3",pod_uid`) {
		t.Error("free GPU got pod information")
	}
	if !strings.Contains(text, `gpu_workload_info{namespace="ml",pod="trainer",pod_uid="uid-1",workload_kind="JobSet",workload_name="pretrain",queue="team-a",cluster_queue="gpu-pool"} 1`) {
		t.Errorf("the pod's workload is not stated:\n%s", text)
	}
	// A label change shows at the next collection once the version moves.
	info.info["ml/trainer"] = podlabels.Info{UID: "uid-1", Labels: []podlabels.Label{{Name: "label_team", Value: "speech"}}}
	info.version.Add(1)
	if err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if text := string(c.Page().Text); !strings.Contains(text, `label_team="speech"`) || strings.Contains(text, `label_team="vision"`) {
		t.Errorf("pod label change not reflected:\n%s", text)
	}
}

// healthySource adds lost GPUs and health incidents to the fake source.
type healthySource struct {
	*fakeSource
	lost []source.LostGPU
	inc  []source.HealthIncident
	err  error
}

func (h *healthySource) LostGPUs() []source.LostGPU { return h.lost }
func (h *healthySource) HealthIncidents(context.Context) ([]source.HealthIncident, error) {
	return h.inc, h.err
}

func TestLostGPUsAndHealthIncidents(t *testing.T) {
	t.Parallel()
	src := &healthySource{fakeSource: newFakeSource(2),
		lost: []source.LostGPU{{GPU: 2, UUID: "GPU-lost", Since: time.Unix(1700000000, 0)}},
		inc: []source.HealthIncident{
			{GPU: 0, UUID: "GPU-a", Subsystem: "memory", Status: source.HealthFail},
			{GPU: 1, UUID: "GPU-b", Subsystem: "thermal", Status: source.HealthWarn},
			{GPU: 1, UUID: "GPU-b", Subsystem: "pcie", Status: source.HealthPass},
		},
	}
	c, _ := newTestCollector(t, src, nil, time.Second)
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	text := string(c.Page().Text)
	for _, want := range []string{
		`gpu_lost_since_timestamp_seconds{gpu="2",uuid="GPU-lost"} 1.7e+09`,
		`gpu_health_status{gpu="0",uuid="GPU-a",subsystem="memory"} 2`,
		`gpu_health_status{gpu="1",uuid="GPU-b",subsystem="thermal"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, `subsystem="pcie"`) {
		t.Error("a passing subsystem is exported")
	}
	src.err = errors.New("no health watches")
	if err := c.Collect(context.Background()); err != nil {
		t.Fatalf("a failed health check failed the collection: %v", err)
	}
	if strings.Contains(string(c.Page().Text), "gpu_health_status") || testutil.ToFloat64(c.m.errors.WithLabelValues("health")) != 1 {
		t.Error("failed health check: want no health series and errors_total{stage=health} 1")
	}
}

// The empty page, before the first collection and after a failed one, is
// compressed with the collector's encoder (shared with the server's self-
// metrics): its first gzip scrape makes no gzip writer of its own (0.8 MiB).
// Not parallel: it measures the bytes the process allocates.
func TestEmptyPageUsesTheSharedEncoder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(c *Collector, src *fakeSource)
	}{
		{"before the first collection", func(*Collector, *fakeSource) {}},
		{"after a failed collection", func(c *Collector, src *fakeSource) {
			if err := c.Collect(context.Background()); err != nil {
				t.Fatal(err)
			}
			src.update(func(f *fakeSource) { f.err = source.ErrUnavailable })
			if err := c.Collect(context.Background()); err == nil {
				t.Fatal("a failing source's collection succeeded")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newFakeSource(1)
			c, _ := newTestCollector(t, src, nil, time.Second)
			tc.setup(c, src)
			page := c.Page()
			if len(page.Text) != 0 {
				t.Fatalf("page not empty:\n%s", page.Text)
			}
			c.Encoder().Encode(exposition.Gzip, nil) // the shared writer exists, as after the first scrape
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			body := page.TextGzip()
			runtime.ReadMemStats(&after)
			if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
				t.Errorf("the empty page's first gzip body allocated %d KiB: it made a gzip writer of its own", n>>10)
			}
			zr, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if b, err := io.ReadAll(zr); err != nil || len(b) != 0 {
				t.Errorf("gzip body holds %q, %v; want it empty", b, err)
			}
		})
	}
}
