package collector

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// numKinds counts the entity kinds, source.GPU (0) to source.NVLink: the
// values of gpu_exporter_gpus' kind label.
const numKinds = int(source.NVLink) + 1

// metrics are the collector's self-metrics.
type metrics struct {
	up          prometheus.Gauge
	duration    prometheus.Histogram
	collections prometheus.Counter
	errors      *prometheus.CounterVec
	series      prometheus.Gauge
	dropped     prometheus.Counter
	lastSuccess prometheus.Gauge
	unmatched   *prometheus.GaugeVec
	gpus        [numKinds]prometheus.Gauge // by source.EntityKind
	gpusVec     *prometheus.GaugeVec
}

func newMetrics(sourceName string) *metrics {
	m := &metrics{
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_exporter_source_up", Help: "Whether the last collection from the GPU source succeeded (1) or failed (0); a collection that finds no GPU succeeds (see gpu_exporter_gpus).",
			ConstLabels: prometheus.Labels{"source": sourceName},
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gpu_exporter_collection_duration_seconds", Help: "Time one collection took: source read, attribution join and rendering.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		collections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpu_exporter_collections_total", Help: "Collections attempted.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpu_exporter_collection_errors_total", Help: "Failed collections, by the stage that failed (watch, read, timeout), and failed health checks (health) and process accounting (processes).",
		}, []string{"stage"}),
		series: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_exporter_series", Help: "GPU series on the current page.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpu_exporter_series_dropped_total", Help: "Series left out because the page reached --collect.max-series.",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_exporter_last_collection_timestamp_seconds", Help: "Unix time of the last successful collection.",
		}),
		unmatched: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpu_exporter_podresources_unmatched_devices",
			Help: "Device ids the kubelet reports for GPU resources that match no GPU or MIG instance this exporter sees, by reason (malformed, unsupported_form, unknown_gpu).",
		}, []string{"reason"}),
	}
	for _, stage := range []string{"watch", "read", "timeout", "health", "processes"} {
		m.errors.WithLabelValues(stage)
	}
	podresources.UnmatchedCounts{}.ByReason(func(reason string, _ int) { m.unmatched.WithLabelValues(reason) })
	m.gpusVec = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gpu_exporter_gpus", Help: "Entities in the inventory of the last successful collection, after --collect.gpus, by kind (gpu, gpu_instance, nvswitch, nvlink).",
	}, []string{"kind"})
	for k := range source.EntityKind(numKinds) {
		m.gpus[k] = m.gpusVec.WithLabelValues(k.String())
	}
	return m
}

func (m *metrics) register(reg prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{m.up, m.duration, m.collections, m.errors, m.series, m.dropped, m.lastSuccess, m.unmatched, m.gpusVec} {
		errs = append(errs, reg.Register(c))
	}
	return errors.Join(errs...)
}
