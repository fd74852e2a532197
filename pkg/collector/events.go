package collector

import (
	"context"
	"log/slog"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// events gathers what happened to the GPUs besides their field values,
// the same way for every source: XID errors travel in the sample
// (Sample.XIDs, which the GPU filter keeps for the selected GPUs) and the
// naming derives its families from them; lost GPUs and health incidents
// are asked of the source when it can tell (source.LostReporter,
// source.HealthReporter).
type events struct {
	src     source.Source
	timeout time.Duration // bounds one health check
	logger  *slog.Logger
	m       *metrics

	healthFailed bool // the last health check failed (logged once)
	p2pFailed    bool // the last P2P status read failed (logged once)
}

// health asks the source, when it can tell, which GPUs it lost and which
// health watches fail. A failed health check is counted and leaves the
// incidents out; it never fails the collection.
func (e *events) health(ctx context.Context) ([]source.LostGPU, []source.HealthIncident) {
	var lost []source.LostGPU
	if lr, ok := e.src.(source.LostReporter); ok {
		lost = lr.LostGPUs()
	}
	hr, ok := e.src.(source.HealthReporter)
	if !ok {
		return lost, nil
	}
	hctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	inc, err := hr.HealthIncidents(hctx)
	if err != nil && ctx.Err() != nil {
		return lost, nil // the exporter is stopping: not a failed check
	}
	if err != nil {
		e.m.errors.WithLabelValues("health").Inc()
		if !e.healthFailed {
			e.logger.Warn("GPU health check failed; health status is not exported until it works", "source", e.src.Name(), "err", err)
		}
		e.healthFailed = true
		return lost, nil
	}
	if e.healthFailed {
		e.logger.Info("GPU health check works again", "source", e.src.Name())
	}
	e.healthFailed = false
	return lost, inc
}

// p2p asks the source, when it can tell (source.P2PReporter), for the GPU
// pairs' NVLink P2P status; the source reads it rarely (topology) and
// answers from its last read in between. A failed read is counted and
// leaves the status out (nil); it never fails the collection.
func (e *events) p2p(ctx context.Context) []source.P2PLink {
	pr, ok := e.src.(source.P2PReporter)
	if !ok {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	links, err := pr.P2PStatus(pctx)
	if err != nil && ctx.Err() != nil {
		return nil
	}
	if err != nil {
		e.m.errors.WithLabelValues("p2p").Inc()
		if !e.p2pFailed {
			e.logger.Warn("GPU P2P status read failed; DCGM_EXP_P2P_STATUS is not exported until it works", "source", e.src.Name(), "err", err)
		}
		e.p2pFailed = true
		return nil
	}
	if e.p2pFailed {
		e.logger.Info("GPU P2P status read works again", "source", e.src.Name())
	}
	e.p2pFailed = false
	if links == nil {
		links = []source.P2PLink{}
	}
	return links
}
