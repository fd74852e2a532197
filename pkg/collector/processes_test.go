package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// fakeAccounting returns the usage the test sets and counts calls.
type fakeAccounting struct {
	devs     []processes.DeviceUsage
	err      error
	calls    int
	deadline time.Time // of the last call's context
	calledAt time.Time
}

func (f *fakeAccounting) Collect(ctx context.Context) ([]processes.DeviceUsage, error) {
	f.calls++
	f.deadline, _ = ctx.Deadline()
	f.calledAt = time.Now()
	return f.devs, f.err
}

func newProcessCollector(t *testing.T, src *fakeSource, acc ProcessAccounting, naming exposition.Naming) (*Collector, *prometheus.Registry, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	c, err := New(Config{Interval: time.Hour, Fields: testFields(t), Processes: acc, Naming: naming}, src, nil,
		slog.New(slog.NewTextHandler(&logs, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	return c, reg, &logs
}

func TestCollectorProcessAccounting(t *testing.T) {
	t.Parallel()
	src := newFakeSource(2)
	uuid1 := src.inv.Entities[1].UUID
	acc := &fakeAccounting{devs: []processes.DeviceUsage{
		{UUID: uuid1, GPU: 1, GPUInstance: -1, Utilization: true, Containers: []processes.Usage{
			{Who: processes.Who{Namespace: "ml", Pod: "busy", Container: "train"}, Processes: 1, SM: 0.7, MemoryBytes: 1 << 30, MemoryKnown: true},
			{Who: processes.Who{Namespace: "ml", Pod: "idle", Container: "nb"}, Processes: 1, MemoryBytes: 1 << 20, MemoryKnown: true},
		}},
		{UUID: "GPU-not-in-inventory", GPUInstance: -1, Containers: []processes.Usage{{Processes: 1}}},
	}}
	c, _, logs := newProcessCollector(t, src, acc, exposition.NamingPrometheus)
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	text := string(c.Page().Text)
	for _, want := range []string{
		`gpu_container_utilization_ratio{gpu="1",uuid="` + uuid1 + `",device="nvidia1",model="NVIDIA H100 80GB HBM3",namespace="ml",pod="busy",container="train"} 0.7`,
		`gpu_container_utilization_ratio{gpu="1",uuid="` + uuid1 + `",device="nvidia1",model="NVIDIA H100 80GB HBM3",namespace="ml",pod="idle",container="nb"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(text, "GPU-not-in-inventory") {
		t.Error("a device outside the inventory was rendered")
	}

	// A failure is counted and logged once; what came is still rendered.
	acc.err = errors.New("nvml: GPU-x: unknown error")
	for range 2 {
		if err := c.Collect(context.Background()); err != nil {
			t.Fatalf("a process accounting failure failed the collection: %v", err)
		}
	}
	if v := testutil.ToFloat64(c.m.errors.WithLabelValues("processes")); v != 2 {
		t.Errorf("processes errors = %v, want 2", v)
	}
	if n := strings.Count(logs.String(), "process accounting failed"); n != 1 {
		t.Errorf("failure logged %d times, want once", n)
	}
	if !strings.Contains(string(c.Page().Text), `pod="busy"`) {
		t.Error("partial usage was not rendered")
	}
}

// A GPU fallen off the bus fails process accounting on that GPU alone:
// the other GPUs' containers are rendered, the failed collection is
// counted once however many GPUs failed in it, and each failed GPU is
// logged by index and UUID, at most once a window, a GPU failing later
// included.
func TestCollectorProcessAccountingLostGPU(t *testing.T) {
	t.Parallel()
	src := newFakeSource(3)
	uuids := []string{src.inv.Entities[0].UUID, src.inv.Entities[1].UUID, src.inv.Entities[2].UUID}
	busy := []processes.Usage{{Who: processes.Who{Namespace: "ml", Pod: "busy", Container: "train"}, Processes: 1, MemoryBytes: 1 << 30, MemoryKnown: true}}
	lost := func(gpu int) error {
		return &processes.DeviceError{GPU: gpu, UUID: uuids[gpu], Err: errors.New("nvml DeviceGetHandleByIndex: ERROR_GPU_IS_LOST")}
	}
	acc := &fakeAccounting{}
	c, _, logs := newProcessCollector(t, src, acc, exposition.NamingPrometheus)
	for i, step := range []struct {
		name      string
		ok        []int // GPUs the accountant read
		lost      []int // GPUs it could not
		wantLines map[int]int
	}{
		{"GPU 1 lost", []int{0, 2}, []int{1}, map[int]int{1: 1}},
		{"GPU 1 still lost", []int{0, 2}, []int{1}, map[int]int{1: 1}},
		{"GPU 2 lost too", []int{0}, []int{1, 2}, map[int]int{1: 1, 2: 1}},
	} {
		acc.devs, acc.err = nil, nil
		var errs []error
		for _, g := range step.ok {
			acc.devs = append(acc.devs, processes.DeviceUsage{GPU: g, UUID: uuids[g], GPUInstance: -1, Containers: busy})
		}
		for _, g := range step.lost {
			errs = append(errs, lost(g))
		}
		acc.err = errors.Join(errs...)
		if err := c.Collect(context.Background()); err != nil {
			t.Fatalf("%s: a GPU's process accounting failure failed the collection: %v", step.name, err)
		}
		text := string(c.Page().Text)
		for g, uuid := range uuids {
			has := strings.Contains(text, `gpu_container_memory_used_bytes{gpu="`+strconv.Itoa(g)+`",uuid="`+uuid+`"`)
			if want := slices.Contains(step.ok, g); has != want {
				t.Errorf("%s: GPU %d container rows rendered = %v, want %v", step.name, g, has, want)
			}
		}
		if v := testutil.ToFloat64(c.m.errors.WithLabelValues("processes")); v != float64(i+1) {
			t.Errorf("%s: processes errors = %v, want %d (one per failed collection)", step.name, v, i+1)
		}
		for g, n := range step.wantLines {
			line := "gpu=" + strconv.Itoa(g) + " uuid=" + uuids[g]
			if got := strings.Count(logs.String(), line); got != n || !strings.Contains(logs.String(), "GPU process accounting cannot read a GPU") {
				t.Errorf("%s: GPU %d logged %d times, want %d:\n%s", step.name, g, got, n, logs)
			}
		}
	}
}

// Process accounting unavailable on the node (no NVML: a DCGM-only or CPU
// node) is a state the accountant reports, not a failed collection: it is
// not counted nor logged by the collector, however many collections pass.
// A failure once it works again is counted.
func TestCollectorProcessAccountingUnavailable(t *testing.T) {
	t.Parallel()
	acc := &fakeAccounting{err: fmt.Errorf("%w: nvml init: ERROR_LIBRARY_NOT_FOUND", processes.ErrUnavailable)}
	c, _, logs := newProcessCollector(t, newFakeSource(1), acc, exposition.NamingPrometheus)
	for range 3 {
		if err := c.Collect(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if v := testutil.ToFloat64(c.m.errors.WithLabelValues("processes")); v != 0 {
		t.Errorf("processes errors = %v while accounting is unavailable, want 0", v)
	}
	if strings.Contains(logs.String(), "process accounting failed") {
		t.Errorf("unavailability logged as a failure:\n%s", logs)
	}
	acc.err = errors.New("nvml GPU-0 GetComputeRunningProcesses: ERROR_UNKNOWN")
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(c.m.errors.WithLabelValues("processes")); v != 1 {
		t.Errorf("processes errors = %v after a failure, want 1", v)
	}
}

// Dcgm naming exports no process families, so accounting does not run.
func TestCollectorProcessAccountingDCGMNaming(t *testing.T) {
	t.Parallel()
	acc := &fakeAccounting{}
	c, _, _ := newProcessCollector(t, newFakeSource(1), acc, exposition.NamingDCGM)
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if acc.calls != 0 {
		t.Errorf("process accounting ran %d times under dcgm naming", acc.calls)
	}
}

// Process accounting shares the collection's --collect.timeout with the
// source read: its deadline is the collection's start plus the timeout,
// not the time it is called plus the timeout.
func TestCollectorProcessAccountingDeadline(t *testing.T) {
	t.Parallel()
	acc := &fakeAccounting{}
	c, err := New(Config{Interval: time.Hour, Timeout: time.Minute, Fields: testFields(t), Processes: acc}, slowSource{newFakeSource(1)}, nil,
		slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := acc.deadline.Sub(acc.calledAt); left > time.Minute-readTime {
		t.Errorf("accounting had %s left, want at most the timeout less the %s read", left, readTime)
	}
}

// readTime is how long slowSource's Read takes.
const readTime = 50 * time.Millisecond

// slowSource takes readTime to read: time passes in a collection before
// process accounting runs.
type slowSource struct{ *fakeSource }

func (s slowSource) Read(ctx context.Context) (*source.Sample, error) {
	time.Sleep(readTime) // the time a source read takes, not a wait for state
	return s.fakeSource.Read(ctx)
}
