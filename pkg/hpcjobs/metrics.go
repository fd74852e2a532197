package hpcjobs

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/internal/selfmetrics"
	"github.com/gpu-exporter/gpu-exporter/pkg/logthrottle"
)

type metrics struct {
	up         prometheus.Gauge
	jobs       prometheus.Gauge
	malformed  *prometheus.GaugeVec
	suppressed prometheus.CounterFunc
}

func newMetrics(reg prometheus.Registerer, logs *logthrottle.Logger) (*metrics, error) {
	m := &metrics{
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_exporter_hpc_job_mapping_up",
			Help: "Whether the last read of the HPC job mapping directory succeeded (1) or not (0: missing, not a directory, unreadable, timed out); while 0 no series carries hpc_job labels.",
		}),
		jobs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpu_exporter_hpc_jobs",
			Help: "Distinct HPC jobs holding GPUs in the current job table.",
		}),
		malformed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpu_exporter_hpc_job_mapping_malformed_files",
			Help: "Files of the HPC job mapping directory, at its last read, with a problem, by reason: name (not <gpu> or <gpu>.<gpu_instance>), unreadable (not a regular file, too large, no permission), encoding (a line not valid UTF-8), syntax (a line not '<job> [key=value]...'). Lines that do not parse are skipped; the rest of the file counts.",
		}, []string{"reason"}),
		suppressed: prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "gpu_exporter_hpc_job_mapping_log_lines_suppressed_total",
			Help: "HPC job mapping log lines held back by the per-cause rate limit (a cause logs at most once a minute; the next line carries suppressed=N).",
		}, func() float64 { return float64(logs.Suppressed()) }),
	}
	for _, r := range Reasons() {
		m.malformed.WithLabelValues(r)
	}
	if err := selfmetrics.Register(reg, m.up, m.jobs, m.malformed, m.suppressed); err != nil {
		return nil, fmt.Errorf("hpc job mapping: registering self-metrics: %w", err)
	}
	return m, nil
}
