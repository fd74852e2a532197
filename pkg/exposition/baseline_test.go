package exposition_test

// The yardstick of the exposition benchmarks and performance targets: an
// exporter built the usual way, which turns every series into a
// client_golang const metric on every scrape and lets the registry gather
// and encode them; and the benchmark inputs built from the simulator's
// scenarios. Test code only: the binary never links it.

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
)

// baselineInput reads one sample of a built-in scenario one minute in, with every
// catalog field watched and each entity held by one container.
func baselineInput(ctx context.Context, scenario string) (exposition.Input, error) {
	scn, err := sim.LoadBuiltin(scenario)
	if err != nil {
		return exposition.Input{}, err
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src := sim.New(scn, sim.WithClock(func() time.Time { return t0.Add(time.Minute) }), sim.WithStart(t0))
	if err := src.Watch(ctx, fields.MustNew().All()); err != nil {
		return exposition.Input{}, fmt.Errorf("scenario %s: %w", scenario, err)
	}
	s, err := src.Read(ctx)
	if err != nil {
		return exposition.Input{}, fmt.Errorf("scenario %s: %w", scenario, err)
	}
	targets := make([]exposition.Holding, 0, len(s.Inventory.Entities))
	for i := range s.Inventory.Entities {
		h := &exposition.Holder{Namespace: "ns-" + strconv.Itoa(i%8), Pod: "pod-" + strconv.Itoa(i), Container: "main"}
		targets = append(targets, exposition.Holding{Entity: i, Holder: h})
	}
	return exposition.Input{Sample: s, Holdings: targets, HoldingsVersion: 1}, nil
}

// baselineCollector exports an Input the usual way: one const metric per series,
// built on every Collect.
type baselineCollector struct {
	in    exposition.Input
	descs map[string]*prometheus.Desc
}

// newBaselineCollector returns the baseline collector for in.
func newBaselineCollector(in exposition.Input) *baselineCollector {
	c := &baselineCollector{in: in, descs: map[string]*prometheus.Desc{}}
	labels := []string{"gpu", "uuid", "device", "model", "namespace", "pod", "container"}
	for _, f := range in.Sample.Fields {
		l := labels
		if f.Kind == fields.Bitmask {
			l = append(append([]string(nil), labels...), "reason")
		}
		c.descs[f.Name] = prometheus.NewDesc(f.Name, f.Help, l, nil)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *baselineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *baselineCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.in.Sample
	for col, f := range s.Fields {
		vt := prometheus.GaugeValue
		if f.Type == fields.Counter {
			vt = prometheus.CounterValue
		}
		for _, t := range c.in.Holdings {
			e := &s.Inventory.Entities[t.Entity]
			x, ok := s.At(t.Entity, col).Number()
			if !ok || !f.Levels.Has(e.Kind.Level()) {
				continue
			}
			lv := []string{strconv.Itoa(e.GPU), e.UUID, e.Device, e.Model, t.Holder.Namespace, t.Holder.Pod, t.Holder.Container}
			if f.Kind == fields.Bitmask {
				for _, r := range f.Reasons {
					v := 0.0
					if uint64(x)&r.Bit != 0 {
						v = 1
					}
					ch <- prometheus.MustNewConstMetric(c.descs[f.Name], vt, v, append(lv, r.Name)...)
				}
				continue
			}
			ch <- prometheus.MustNewConstMetric(c.descs[f.Name], vt, f.Scaled(x), lv...)
		}
	}
}

// baselineScrape gathers reg and encodes it in the text format, as promhttp does.
func baselineScrape(reg prometheus.Gatherer, w io.Writer) error {
	mfs, err := reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}
