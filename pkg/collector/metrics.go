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
	stages      [numStages]prometheus.Observer
	stagesVec   *prometheus.HistogramVec
	// jobsUnmatched is registered only with job attribution on.
	jobsUnmatched prometheus.Gauge
}

// The stages of a collection, the values of
// gpu_exporter_collection_stage_duration_seconds' stage label.
const (
	stageRead = iota
	stageJoin
	stageRender
	stageCompress
	numStages
)

func newMetrics(sourceName string) *metrics {
	m := &metrics{
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_exporter_source_up", Help: "Whether the last collection from the GPU source succeeded (1) or failed (0); a collection that finds no GPU succeeds (see gpu_exporter_gpus).",
			ConstLabels: prometheus.Labels{"source": sourceName},
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gpu_exporter_collection_duration_seconds", Help: "Time one collection took: source read, attribution join and rendering.",
			// Coarse: every node writes these series, and a fleet of
			// 10,000 nodes stored 1.5 million self-metric series with
			// the finer buckets; these still tell milliseconds from
			// the timeout.
			Buckets: []float64{.005, .025, .1, .5, 2.5, 10},
		}),
		collections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpu_exporter_collections_total", Help: "Collections attempted.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpu_exporter_collection_errors_total", Help: "Failed collections, by the stage that failed (watch, read, timeout), and failed health checks (health), process accounting (processes) and NVLink fabric reads (fabric).",
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
			Help: "Device ids the kubelet reports for GPU resources that match no GPU or MIG instance this exporter sees, by reason (malformed, unsupported_form, unknown_gpu, no_resourceslice).",
		}, []string{"reason"}),
	}
	for _, stage := range []string{"watch", "read", "timeout", "health", "p2p", "processes", "fabric"} {
		m.errors.WithLabelValues(stage)
	}
	m.jobsUnmatched = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gpu_exporter_hpc_job_mapping_unmatched_files",
		Help: "HPC job-mapping files with jobs that name a GPU index or MIG instance this exporter does not see (usually a prolog numbering GPUs differently from NVML); their jobs label nothing.",
	})
	podresources.UnmatchedCounts{}.ByReason(func(reason string, _ int) { m.unmatched.WithLabelValues(reason) })
	m.gpusVec = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "gpu_exporter_gpus", Help: "Entities in the inventory of the last successful collection, after --collect.gpus, by kind (gpu, gpu_instance, nvswitch, nvlink).",
	}, []string{"kind"})
	for k := range source.EntityKind(numKinds) {
		m.gpus[k] = m.gpusVec.WithLabelValues(k.String())
	}
	// A family of its own rather than a stage label on
	// gpu_exporter_collection_duration_seconds: a label there would change
	// the identity of its existing series and make every query that
	// aggregates it (histogram_quantile over sum by le) add the stages up.
	m.stagesVec = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "gpu_exporter_collection_stage_duration_seconds",
		Help: "Time each stage of a collection took: source read, attribution join, rendering, and compression of a page body (on the first scrape asking for a format and coding, once per collection).",
		// A decade a bucket: which stage takes the time shows at this
		// resolution, at 7 series a stage instead of 19 (68 of the demo
		// node's 150 self-metric series were this family's buckets).
		Buckets: []float64{.001, .01, .1, 1},
	}, []string{"stage"})
	for st, name := range [numStages]string{"read", "join", "render", "compress"} {
		m.stages[st] = m.stagesVec.WithLabelValues(name)
	}
	return m
}

func (m *metrics) register(reg prometheus.Registerer, jobs bool) error {
	var errs []error
	for _, c := range []prometheus.Collector{m.up, m.duration, m.collections, m.errors, m.series, m.dropped, m.lastSuccess, m.unmatched, m.gpusVec, m.stagesVec} {
		errs = append(errs, reg.Register(c))
	}
	if jobs {
		errs = append(errs, reg.Register(m.jobsUnmatched))
	}
	return errors.Join(errs...)
}
