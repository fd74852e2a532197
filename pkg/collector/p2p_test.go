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

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

type p2pSource struct {
	*fakeSource
	links []source.P2PLink
	err   error
}

func (p *p2pSource) P2PStatus(context.Context) ([]source.P2PLink, error) { return p.links, p.err }

// A failed P2P status read is counted under stage="p2p", warned about once
// until it works again, leaves DCGM_EXP_P2P_STATUS out and never fails the
// collection.
func TestP2PStatusFailuresCounted(t *testing.T) {
	t.Parallel()
	src := &p2pSource{fakeSource: newFakeSource(2)}
	var logs bytes.Buffer
	c, err := New(Config{Interval: time.Hour, Timeout: time.Second, Fields: testFields(t), Naming: exposition.NamingDCGM},
		src, nil, slog.New(slog.NewTextHandler(&logs, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetCounters(exposition.Counters{Fields: testFields(t),
		P2PStatus: &exposition.ExporterFamily{Name: fields.P2PStatusName, Help: "P2P status", Type: fields.Gauge}}); err != nil {
		t.Fatal(err)
	}
	const warn, back = "GPU P2P status read failed", "GPU P2P status read works again"
	for _, step := range []struct {
		name              string
		links             []source.P2PLink
		err               error
		series            bool
		errs              float64
		warns, recoveries int
	}{
		{"read", []source.P2PLink{{GPU: 0, Peer: 1}, {GPU: 1, Peer: 0}}, nil, true, 0, 0, 0},
		{"failed", nil, errors.New("no hostengine"), false, 1, 1, 0},
		{"failed again", nil, errors.New("no hostengine"), false, 2, 1, 0},
		{"works again, no pair", nil, nil, false, 2, 1, 1},
		{"read again", []source.P2PLink{{GPU: 0, Peer: 1}}, nil, true, 2, 1, 1},
	} {
		src.links, src.err = step.links, step.err
		if err := c.Collect(context.Background()); err != nil {
			t.Fatalf("%s: a P2P status read failed the collection: %v", step.name, err)
		}
		text := string(c.Page().Text)
		if got := strings.Contains(text, fields.P2PStatusName+"{"); got != step.series {
			t.Errorf("%s: P2P series on the page %v, want %v:\n%s", step.name, got, step.series, text)
		}
		if got := testutil.ToFloat64(c.m.errors.WithLabelValues("p2p")); got != step.errs {
			t.Errorf("%s: errors_total{stage=p2p} = %v, want %v", step.name, got, step.errs)
		}
		if w, a := strings.Count(logs.String(), warn), strings.Count(logs.String(), back); w != step.warns || a != step.recoveries {
			t.Errorf("%s: %d warnings and %d recoveries logged, want %d and %d:\n%s", step.name, w, a, step.warns, step.recoveries, logs.String())
		}
	}
}
