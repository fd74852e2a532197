package resourceslices

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/internal/selfmetrics"
)

// stateCollector exports the store's condition and index size, read when
// scraped (a mutex and an atomic load; the store does the work on change).
type stateCollector struct {
	s       *Store
	state   *prometheus.Desc
	devices *prometheus.Desc
}

func newStateCollector(s *Store) *stateCollector {
	return &stateCollector{s: s,
		state: prometheus.NewDesc("gpu_exporter_resourceslices_state",
			"The DRA ResourceSlice informer's condition, one series per state set to 1 for the current one: syncing (discovery or first list pending), synced, forbidden (403: the service account lacks get/list/watch on resourceslices.resource.k8s.io), not_served (the API server serves no resource.k8s.io version with ResourceSlices), failing (API server unreachable or another error). Absent when DRA attribution is off.",
			[]string{"state"}, nil),
		devices: prometheus.NewDesc("gpu_exporter_resourceslices_devices",
			"Devices in the node's current ResourceSlices (newest pool generations), all drivers; DRA devices resolve through them.",
			nil, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.state
	ch <- c.devices
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	cur := c.s.State().Condition()
	for _, st := range Conditions() {
		v := 0.0
		if st == cur {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, v, st)
	}
	ch <- prometheus.MustNewConstMetric(c.devices, prometheus.GaugeValue, float64(len(c.s.index.Load().devices)))
}

// Register registers the store's self-metrics on reg (nil: none).
func (s *Store) Register(reg prometheus.Registerer) error {
	if err := selfmetrics.Register(reg, newStateCollector(s)); err != nil {
		return fmt.Errorf("resourceslices: registering self-metrics: %w", err)
	}
	return nil
}
