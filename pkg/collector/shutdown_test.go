package collector

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
)

// blockedAccounting blocks until its context ends, as process accounting
// blocked in a procfs read does until its bounded read gives up.
type blockedAccounting struct{}

func (blockedAccounting) Collect(ctx context.Context) ([]processes.DeviceUsage, error) {
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

// TestShutdownCancellationIsNoFailure: a collection the exporter's shutdown
// cancels, in the source read or in process accounting, is not a failed
// collection: nothing is counted, no ERROR or WARN is logged, and the page
// served until the process exits stays the last good one.
func TestShutdownCancellationIsNoFailure(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(src *fakeSource) ProcessAccounting
	}{
		{"source read cancelled", func(src *fakeSource) ProcessAccounting {
			src.update(func(f *fakeSource) { f.block = make(chan struct{}) })
			return nil
		}},
		{"process accounting cancelled", func(*fakeSource) ProcessAccounting { return blockedAccounting{} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := newFakeSource(1)
			var logs bytes.Buffer
			c, err := New(Config{Interval: time.Hour, Fields: testFields(t)}, src, nil, slog.New(slog.NewTextHandler(&logs, nil)), prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Collect(t.Context()); err != nil {
				t.Fatal(err)
			}
			good := c.Page()
			c.cfg.Processes = tc.setup(src)
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(50*time.Millisecond, cancel)
			done := make(chan error, 1)
			go func() { done <- c.Collect(ctx) }()
			err = poll.ReceiveWithin(t, 20*time.Second, "the cancelled collection", done)
			if tc.name == "source read cancelled" && !errors.Is(err, context.Canceled) {
				t.Errorf("Collect = %v, want the cancellation", err)
			}
			for _, stage := range []string{"read", "timeout", "processes"} {
				if n := testutil.ToFloat64(c.m.errors.WithLabelValues(stage)); n != 0 {
					t.Errorf("collection_errors_total{stage=%q} = %v, want 0", stage, n)
				}
			}
			if up := testutil.ToFloat64(c.m.up); up != 1 {
				t.Errorf("source_up = %v, want 1: the source did not fail", up)
			}
			if c.Page() != good && tc.name == "source read cancelled" {
				t.Error("the last good page was replaced by a cancelled collection")
			}
			if l := logs.String(); strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN") {
				t.Errorf("a cancellation logged as a failure:\n%s", l)
			}
		})
	}
}

// TestProcessAccountingOutOfTime: process accounting still blocked when
// the collection's deadline passes returns then; the collection publishes
// its GPU series without per-container rows and counts the failure.
func TestProcessAccountingOutOfTime(t *testing.T) {
	t.Parallel()
	src := newFakeSource(1)
	c, err := New(Config{Interval: time.Hour, Timeout: 100 * time.Millisecond, Fields: testFields(t), Processes: blockedAccounting{}},
		src, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Collect(t.Context()) }()
	if err := poll.ReceiveWithin(t, 20*time.Second, "the collection", done); err != nil {
		t.Fatalf("Collect = %v; GPU series stand without process accounting", err)
	}
	if n := testutil.ToFloat64(c.m.errors.WithLabelValues("processes")); n != 1 {
		t.Errorf("collection_errors_total{stage=\"processes\"} = %v, want 1", n)
	}
	if p := c.Page(); p.Series == 0 {
		t.Error("no GPU series published")
	}
}
