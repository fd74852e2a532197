package main

import (
	"bytes"
	"context"
	"flag"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/collector"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim/kubelet"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/tests/testbin"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestDemoGolden renders the whole GPU exposition of the demo scenario at
// fixed simulated times, through the real pod-resources client talking to
// the simulated kubelet, and compares it with testdata/*.golden. It then
// checks the page with the expfmt parser (values equal the source values
// after unit scaling) and with promtool check metrics.
func TestDemoGolden(t *testing.T) {
	t.Parallel()
	rig := newDemoRig(t)
	ctx := t.Context()
	set := fields.MustNew().Defaults()
	// The demo's pods with what the simulated Kubernetes API tells of them (gpu_workload_info).
	coll, err := collector.New(collector.Config{Interval: time.Hour, Fields: set, PodInfo: rig.src.SimulatedPods()}, rig.src, rig.table, rig.logger, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	promtool := ""
	for _, at := range []time.Duration{0, 90 * time.Second} {
		rig.now.Store(rig.t0.Add(at))
		if err := coll.Collect(ctx); err != nil {
			t.Fatal(err)
		}
		page := coll.Page().Text
		golden := filepath.Join("testdata", "demo-"+strconv.Itoa(int(at.Seconds()))+"s.golden")
		compareGolden(t, golden, page)

		// The same simulated instant read again gives the source values.
		sample, err := rig.src.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkValuesMatchSource(t, page, sample)

		if promtool == "" {
			promtool = testbin.Tool(t, "promtool")
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(page)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics on %s: %v\n%s", golden, err, out)
		}
	}
}

// demoRig is the demo scenario at a simulated time the test sets, with the
// pod-resources table the real client fetched from the simulated kubelet.
type demoRig struct {
	src    *sim.Source
	table  frozenTable
	now    *atomicTime
	t0     time.Time
	logger *slog.Logger
}

func newDemoRig(t *testing.T) *demoRig {
	t.Helper()
	return newSimRig(t, "demo")
}

// newSimRig is newDemoRig for the built-in scenario name.
func newSimRig(t *testing.T, name string) *demoRig {
	t.Helper()
	scn, err := sim.LoadBuiltin(name)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := new(atomicTime)
	now.Store(t0)
	src := sim.New(scn, sim.WithClock(now.Load), sim.WithStart(t0))

	kubelet, err := kubelet.Start(filepath.Join(t.TempDir(), "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer kubelet.Stop()
	kubelet.FollowSim(src)
	logger := slog.New(slog.DiscardHandler)
	cfg := podresources.DefaultConfig()
	cfg.Socket = kubelet.Path()
	cfg.RefreshInterval = 10 * time.Millisecond
	cfg.CallTimeout = 10 * time.Millisecond
	client, err := podresources.New(cfg, logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	clientCtx, stopClient := context.WithCancel(t.Context())
	defer stopClient()
	go client.Run(clientCtx)
	poll.Within(t, 10*time.Second, 5*time.Millisecond, "the simulated kubelet to answer", func() bool { return client.Table().Len() > 0 })
	// Freeze the table the real client fetched: a later refresh timing out on
	// a loaded machine must not make the golden output flaky. The demo's pods
	// hold their GPUs for the whole run.
	return &demoRig{src: src, table: frozenTable{client.Table()}, now: now, t0: t0, logger: logger}
}

// compareGolden compares page with the golden file, which -update rewrites.
func compareGolden(t *testing.T, golden string, page []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, page, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page, want) {
		t.Errorf("%s differs from the rendered page (go test ./cmd/gpu-exporter -run %s -update rewrites it)", golden, t.Name())
	}
}

type frozenTable struct{ t *podresources.Table }

func (f frozenTable) Table() *podresources.Table { return f.t }

// checkValuesMatchSource parses the page and compares every catalog series
// with the sample value of its entity, scaled to base units.
func checkValuesMatchSource(t *testing.T, page []byte, s *source.Sample) {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("page does not parse: %v", err)
	}
	byUUID := map[string]int{}
	for i, e := range s.Inventory.Entities {
		if e.Kind == source.GPU {
			byUUID[e.UUID] = i
		}
	}
	checked := 0
	for col, f := range s.Fields {
		fam := fams[f.Name]
		for _, m := range fam.GetMetric() {
			l := labels(m)
			if l["gpu_instance"] != "" {
				continue
			}
			e, ok := byUUID[l["uuid"]]
			if !ok {
				t.Fatalf("%s: series for unknown uuid %q", f.Name, l["uuid"])
			}
			raw, ok := s.At(e, col).Number()
			if !ok {
				t.Errorf("%s{uuid=%q}: exported although the source value is blank", f.Name, l["uuid"])
				continue
			}
			want := f.Scaled(raw)
			if f.Kind == fields.Bitmask {
				want = 0
				for _, r := range f.Reasons {
					if r.Name == l["reason"] && uint64(raw)&r.Bit != 0 {
						want = 1
					}
				}
			}
			got := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Errorf("%s%v = %v, want %v (raw %v × %v)", f.Name, l, got, want, raw, f.Scale)
			}
			checked++
		}
	}
	if checked < 8*20 {
		t.Errorf("checked only %d series", checked)
	}
}
