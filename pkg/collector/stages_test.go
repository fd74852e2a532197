package collector

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
)

// TestCollectionStagesObserved checks that every collection observes its
// read, join and render stages, and that a compression is observed once
// per page and coding, when the first scrape asks for it.
func TestCollectionStagesObserved(t *testing.T) {
	t.Parallel()
	c, reg := newTestCollector(t, newFakeSource(2), nil, time.Second)
	counts := func() map[string]uint64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]uint64{}
		for _, mf := range mfs {
			if mf.GetName() != "gpu_exporter_collection_stage_duration_seconds" {
				continue
			}
			for _, m := range mf.GetMetric() {
				out[stageOf(m)] = m.GetHistogram().GetSampleCount()
			}
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		action func()
		want   map[string]uint64
	}{
		{"before any collection", func() {}, map[string]uint64{"read": 0, "join": 0, "render": 0, "compress": 0}},
		{"one collection", func() { _ = c.Collect(context.Background()) }, map[string]uint64{"read": 1, "join": 1, "render": 1, "compress": 0}},
		{"two gzip scrapes of one format", func() {
			c.Page().Body(exposition.FormatOpenMetrics, exposition.Gzip)
			c.Page().Body(exposition.FormatOpenMetrics, exposition.Gzip)
		}, map[string]uint64{"read": 1, "join": 1, "render": 1, "compress": 1}},
		{"zstd scrape, then a second collection", func() {
			c.Page().Body(exposition.FormatOpenMetrics, exposition.Zstd)
			_ = c.Collect(context.Background())
		}, map[string]uint64{"read": 2, "join": 2, "render": 2, "compress": 2}},
	} {
		tt.action()
		got := counts()
		for stage, want := range tt.want {
			if got[stage] != want {
				t.Errorf("%s: stage %s observed %d times, want %d", tt.name, stage, got[stage], want)
			}
		}
	}
}

func stageOf(m *dto.Metric) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == "stage" {
			return l.GetValue()
		}
	}
	return ""
}
