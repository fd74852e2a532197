package collector

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// TestZeroGPUs: a DCGM or NVML source that reports no GPU succeeds
// (source_up 1) but leaves the exporter not ready, with the reason and one
// warning; the simulator may report none and be ready.
func TestZeroGPUs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		gpus        int
		selected    []int
		requireGPUs bool
		wantReady   bool
		wantReason  string
	}{
		{"real source, no GPU", 0, nil, true, false, "no GPUs found: the fake source reports none"},
		{"real source, none selected", 2, []int{7}, true, false, "no GPUs found: the fake source reports 2, none of them selected by --collect.gpus"},
		{"real source with GPUs", 2, nil, true, true, ""},
		{"simulator, no GPU", 0, nil, false, true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := newFakeSource(tc.gpus)
			var log strings.Builder
			reg := prometheus.NewRegistry()
			c, err := New(Config{Interval: time.Hour, Timeout: time.Second, Fields: testFields(t), GPUs: tc.selected, RequireGPUs: tc.requireGPUs},
				src, nil, slog.New(slog.NewTextHandler(&log, nil)), reg)
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := c.Collect(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			ready, reason := c.Readiness()
			if ready != tc.wantReady || reason != tc.wantReason {
				t.Errorf("Readiness() = %v, %q; want %v, %q", ready, reason, tc.wantReady, tc.wantReason)
			}
			if got := testutil.ToFloat64(c.m.up); got != 1 {
				t.Errorf("source_up = %v, want 1: the collection succeeded", got)
			}
			wantGPUs := float64(tc.gpus)
			if tc.selected != nil {
				wantGPUs = 0
			}
			if got := testutil.ToFloat64(c.m.gpus[source.GPU]); got != wantGPUs {
				t.Errorf(`gpu_exporter_gpus{kind="gpu"} = %v, want %v`, got, wantGPUs)
			}
			warnings := strings.Count(log.String(), "GPU source reports no GPUs")
			if want := map[bool]int{true: 0, false: 1}[tc.wantReady]; warnings != want {
				t.Errorf("%d warnings, want %d:\n%s", warnings, want, log.String())
			}
		})
	}
}

// TestGPUsAppearAfterZero: readiness follows the inventory both ways.
func TestGPUsAppearAfterZero(t *testing.T) {
	t.Parallel()
	src := newFakeSource(0)
	reg := prometheus.NewRegistry()
	c, err := New(Config{Interval: time.Hour, Timeout: time.Second, Fields: testFields(t), RequireGPUs: true}, src, nil, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	if ok, reason := c.Readiness(); ok || reason != notReadyYet {
		t.Errorf("before the first collection: %v, %q", ok, reason)
	}
	steps := []struct {
		gpus int
		want bool
	}{{0, false}, {3, true}, {0, false}}
	for _, st := range steps {
		src.update(func(f *fakeSource) { f.inv = newFakeSource(st.gpus).inv })
		if err := c.Collect(context.Background()); err != nil {
			t.Fatal(err)
		}
		if c.Ready() != st.want {
			t.Errorf("%d GPUs: ready %v, want %v", st.gpus, c.Ready(), st.want)
		}
		if got := testutil.ToFloat64(c.m.gpus[source.GPU]); got != float64(st.gpus) {
			t.Errorf("%d GPUs: gauge %v", st.gpus, got)
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`# HELP gpu_exporter_gpus Entities in the inventory of the last successful collection, after --collect.gpus, by kind (gpu, gpu_instance, nvswitch, nvlink).
# TYPE gpu_exporter_gpus gauge
gpu_exporter_gpus{kind="gpu"} 0
gpu_exporter_gpus{kind="gpu_instance"} 0
gpu_exporter_gpus{kind="nvlink"} 0
gpu_exporter_gpus{kind="nvswitch"} 0
`), "gpu_exporter_gpus"); err != nil {
		t.Error(err)
	}
}
