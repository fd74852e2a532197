package podresources

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/internal/selfmetrics"
	"github.com/gpu-exporter/gpu-exporter/pkg/logthrottle"
)

// Reasons of gpu_exporter_podresources_errors_total.
const (
	// reasonDial: the socket is missing or no connection could be made.
	reasonDial = "dial"
	// reasonTimeout: connected, but List did not answer within CallTimeout.
	reasonTimeout = "timeout"
	// reasonList: List failed otherwise (an error status, a reply that does
	// not decode).
	reasonList = "list"
	// reasonAllocatable: GetAllocatableResources failed (other than
	// Unimplemented, which only turns the call off).
	reasonAllocatable = "allocatable"
	// reasonMalformedID: a device id that does not parse appeared.
	reasonMalformedID = "malformed_id"
)

type metrics struct {
	up           prometheus.Gauge
	errors       *prometheus.CounterVec
	listDuration prometheus.Histogram
	refreshes    prometheus.Counter
	invalidUTF8  prometheus.Gauge
	suppressed   prometheus.CounterFunc
}

func newMetrics(reg prometheus.Registerer, logs *logthrottle.Logger) (*metrics, error) {
	m := &metrics{
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_exporter_podresources_up",
			Help: "Whether the last kubelet pod-resources List succeeded (1) or not (0); while 0 no series carries pod labels.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpu_exporter_podresources_errors_total",
			Help: "Kubelet pod-resources failures by reason: dial (socket missing or unreachable), timeout, list, allocatable, malformed_id (counted once per id as it appears, although its log lines are rate-limited).",
		}, []string{"reason"}),
		listDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gpu_exporter_podresources_list_duration_seconds",
			Help: "Duration of kubelet pod-resources List calls, failed ones included.",
			// Coarse, as the collection's: a List answers in milliseconds,
			// and the buckets tell that from a kubelet near the timeout.
			Buckets: []float64{.005, .05, .5, 5},
		}),
		refreshes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpu_exporter_podresources_refreshes_total",
			Help: "Attribution refreshes attempted; each makes one kubelet List call unless the socket is missing.",
		}),
		invalidUTF8: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_exporter_podresources_invalid_utf8_strings",
			Help: "Strings in the last kubelet pod-resources replies (pod, namespace, container, resource names, device ids) that were not valid UTF-8; they are used with U+FFFD in place of the invalid bytes.",
		}),
		suppressed: prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "gpu_exporter_podresources_log_lines_suppressed_total",
			Help: "Pod-resources log lines held back by the per-cause rate limit (a cause logs at most once a minute; the next line carries suppressed=N).",
		}, func() float64 { return float64(logs.Suppressed()) }),
	}
	for _, r := range []string{reasonDial, reasonTimeout, reasonList, reasonAllocatable, reasonMalformedID} {
		m.errors.WithLabelValues(r)
	}
	if err := selfmetrics.Register(reg, m.collectors()...); err != nil {
		return nil, fmt.Errorf("podresources: registering self-metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) unregister(reg prometheus.Registerer) {
	selfmetrics.Unregister(reg, m.collectors()...)
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.up, m.errors, m.listDuration, m.refreshes, m.invalidUTF8, m.suppressed}
}
