package podlabels

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/internal/selfmetrics"
)

type metrics struct {
	synced prometheus.Gauge
	pods   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		synced: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_exporter_pod_informer_synced",
			Help: "Whether the pod informer has delivered its first list of this node's pods (1) or not yet (0); while 0 attributed series carry no pod labels or pod UIDs.",
		}),
		pods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_exporter_pod_informer_pods",
			Help: "Pods on this node known to the pod informer.",
		}),
	}
	if err := selfmetrics.Register(reg, m.collectors()...); err != nil {
		return nil, fmt.Errorf("podlabels: registering self-metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.synced, m.pods}
}

func (m *metrics) unregister(reg prometheus.Registerer) {
	selfmetrics.Unregister(reg, m.collectors()...)
}
