//go:build cgo && linux

package dcgm

// These tests run the real go-dcgm bindings against the fake libdcgm.so.4
// of tests/fakedcgm, loaded into the test process by absolute path (see
// that package). go-dcgm holds one connection per process, so tests that
// open a Source run one after another, each with its own state file.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// count returns how many log lines carry msg.
func (l *logBuffer) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), "msg=\""+msg+"\"")
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// harness is one Source on one fake hostengine.
type harness struct {
	t   *testing.T
	src *Source
	env *fakedcgm.Env
	log *logBuffer
}

func testConfig() Config {
	return Config{
		Interval:    time.Second,
		CallTimeout: 2 * time.Second,
		BackoffMin:  5 * time.Millisecond,
		BackoffMax:  20 * time.Millisecond,
	}
}

// start loads the fake library, writes the state and opens a Source.
func start(t *testing.T, state fakedcgm.State, cfg Config) *harness {
	t.Helper()
	fakedcgm.Load(t)
	env := fakedcgm.NewEnv(t, state)
	env.Setenv(t)
	logs := &logBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	src, err := New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, src: src, env: env, log: logs}
	t.Cleanup(func() {
		if err := src.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if t.Failed() {
			t.Logf("source log:\n%s", logs)
		}
	})
	return h
}

func (h *harness) watch(names ...string) []fields.Field {
	h.t.Helper()
	set := catalogFields(h.t, names...)
	if err := h.src.Watch(context.Background(), set); err != nil {
		h.t.Fatalf("Watch: %v", err)
	}
	return set
}

func (h *harness) read() *source.Sample {
	h.t.Helper()
	s, err := h.src.Read(context.Background())
	if err != nil {
		h.t.Fatalf("Read: %v", err)
	}
	return s
}

// eventually polls cond until it holds or the deadline passes.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	poll.Within(h.t, 10*time.Second, 2*time.Millisecond, what, cond)
}

// readUntil reads until cond holds for a sample.
func (h *harness) readUntil(what string, cond func(*source.Sample) bool) *source.Sample {
	h.t.Helper()
	var got *source.Sample
	h.eventually(what, func() bool {
		s, err := h.src.Read(context.Background())
		if err != nil {
			return false
		}
		got = s
		return cond(s)
	})
	return got
}

// value returns the sample's value for an entity key and a field id.
func value(t *testing.T, s *source.Sample, key string, id uint16) source.Value {
	t.Helper()
	for e := range s.Inventory.Entities {
		if s.Inventory.Entities[e].Key() != key {
			continue
		}
		for f := range s.Fields {
			if s.Fields[f].ID == id {
				return s.At(e, f)
			}
		}
		t.Fatalf("field %d not in sample", id)
	}
	t.Fatalf("entity %s not in sample", key)
	return source.Value{}
}

const (
	uuid0 = "GPU-00000000-1111-2222-3333-444444444444"
	uuid1 = "GPU-11111111-1111-2222-3333-444444444444"
	uuid2 = "GPU-22222222-1111-2222-3333-444444444444"
	migA  = "MIG-aaaaaaaa-1111-2222-3333-444444444444"
	migB  = "MIG-bbbbbbbb-1111-2222-3333-444444444444"
)

// node is two GPUs: GPU 0 an H100 with profiling, GPU 1 an A100 in MIG
// mode with two GPU instances, without profiling.
func node() fakedcgm.State {
	return fakedcgm.State{
		Driver: "550.54.15",
		GPUs: []fakedcgm.GPU{
			{ID: 0, UUID: uuid0, Name: "NVIDIA H100 80GB HBM3", BusID: "00000000:3B:00.0", Minor: 0, FBMiB: 81559,
				Profiling: []int{1001, 1002, 1003, 1004, 1005}},
			{ID: 1, UUID: uuid1, Name: "NVIDIA A100-SXM4-40GB", BusID: "00000000:5E:00.0", Minor: 3, FBMiB: 40960},
		},
		Instances: []fakedcgm.Instance{
			{EntityID: 8, GPU: 1, Instance: 2, Profile: "1g.5gb", ProfileID: 19, Slices: 1, FBMiB: 4864},
			{EntityID: 7, GPU: 1, Instance: 1, Profile: "3g.20gb", ProfileID: 9, Slices: 3, UUID: migA, FBMiB: 19968},
		},
		ComputeInstances: []fakedcgm.ComputeInstance{
			{EntityID: 20, GI: 7, Instance: 0},
			{EntityID: 21, GI: 8, Instance: 0, UUID: migB},
		},
	}
}

func sentinelCases() []struct{ kind, which string } {
	var out []struct{ kind, which string }
	for _, kind := range []string{"i", "i32", "d", "s"} {
		for _, which := range []string{"blank", "notfound", "notsupported", "notperm"} {
			out = append(out, struct{ kind, which string }{kind, which})
		}
	}
	return out
}

func isUnavailable(err error) bool { return errors.Is(err, source.ErrUnavailable) }
