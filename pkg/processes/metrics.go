package processes

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/internal/selfmetrics"
)

type metrics struct {
	// available has no labels; it is a vector so that it has no series
	// until NVML has first answered (setAvailable).
	available  *prometheus.GaugeVec
	podNames   prometheus.Gauge
	cached     prometheus.Gauge
	unresolved *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		available: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpu_exporter_process_accounting_available",
			Help: "Whether process accounting reaches the GPUs' processes (1), or cannot because NVML's library is missing or does not initialise on this node (0: retried with back-off, not counted as collection errors); absent until NVML first answers (no collection has reached process accounting yet, or its calls timed out).",
		}, nil),
		podNames: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_exporter_process_accounting_pod_names",
			Help: "Whether process accounting names containers through the Kubernetes API (1) or, without API access, labels GPU usage with pod_uid and container_id only (0).",
		}),
		cached: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_exporter_process_accounting_cached_pids",
			Help: "GPU processes whose container is cached by process accounting; 0 while process accounting is unavailable (the cache is emptied).",
		}),
		unresolved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpu_exporter_process_accounting_unresolved_total",
			Help: "GPU processes process accounting could not attribute, by reason: exited (gone before its cgroup was read; left out), unreadable (cgroup not readable or not understood; left out), unknown_pod (pod not known to the API; labelled with pod_uid).",
		}, []string{"reason"}),
	}
	for _, r := range []string{"exited", "unreadable", "unknown_pod"} {
		m.unresolved.WithLabelValues(r)
	}
	if err := selfmetrics.Register(reg, m.collectors()...); err != nil {
		return nil, fmt.Errorf("processes: registering self-metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.available, m.podNames, m.cached, m.unresolved}
}

func (m *metrics) unregister(reg prometheus.Registerer) {
	selfmetrics.Unregister(reg, m.collectors()...)
}
