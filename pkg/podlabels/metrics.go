package podlabels

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/internal/selfmetrics"
)

type metrics struct {
	synced prometheus.Gauge
	pods   prometheus.Gauge
	// ownerLookups and ownerForbidden count the GETs of pod owners
	// (--kubernetes.workload-info) and say which resources answer 403.
	ownerLookups   *prometheus.CounterVec
	ownerForbidden *prometheus.GaugeVec
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
		ownerLookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpu_exporter_workload_owner_lookups_total",
			Help: "GETs of pod owners for gpu_workload_info (--kubernetes.workload-info), by resource (replicasets, jobs, jobsets, localqueues) and result (found, not_found, forbidden, error).",
		}, []string{"resource", "result"}),
		ownerForbidden: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpu_exporter_workload_owner_forbidden",
			Help: "Whether the API server last answered 403 to reading this resource of pod owners (1): gpu_workload_info then leaves out the pods that need it (jobsets: the queue only their JobSet carries; localqueues: their cluster_queue label).",
		}, []string{"resource"}),
	}
	if err := selfmetrics.Register(reg, m.collectors()...); err != nil {
		return nil, fmt.Errorf("podlabels: registering self-metrics: %w", err)
	}
	return m, nil
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.synced, m.pods, m.ownerLookups, m.ownerForbidden}
}

func (m *metrics) unregister(reg prometheus.Registerer) {
	selfmetrics.Unregister(reg, m.collectors()...)
}
