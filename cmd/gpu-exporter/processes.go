package main

import (
	"github.com/gpu-exporter/gpu-exporter/pkg/collector"
	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
)

// openProcesses starts process accounting when the source opened process
// sampling (--collect.processes not off, a naming that exports it). Pods
// and containers are named by the simulator's pods, else the pod
// informer: the one pod labels run, or one of its own when the exporter
// runs in a pod (NODE_NAME set). Without either, usage carries pod_uid and
// container_id, and the accountant says so.
func (a *app) openProcesses() error {
	ps := a.procSampling
	if ps == nil {
		return nil
	}
	pods := ps.Pods
	if pods == nil && a.podStore == nil && a.o.nodeName != "" {
		store, err := podlabels.NewInCluster(podlabels.Config{Node: a.o.nodeName, Containers: true}, a.logger, a.reg)
		if err != nil {
			a.logger.Warn("process accounting cannot watch pods; it labels GPU usage with pod_uid and container_id", "err", err)
		} else {
			a.podStore = store
			a.cleanup = append(a.cleanup, store.Close)
		}
	}
	if pods == nil && a.podStore != nil {
		pods = a.podStore
	}
	acc, err := processes.NewAccountant(processes.Config{Procfs: ps.Procfs, Mode: a.o.processes.Mode, HostPIDs: ps.HostPIDs, Pods: pods}, ps.Sampler, a.logger, a.reg)
	if err != nil {
		return err
	}
	a.procAcc = acc
	a.cleanup = append(a.cleanup, acc.Close)
	a.logger.Info("process accounting on", "mode", a.o.processes.Mode.String(), "procfs", ps.Procfs)
	return nil
}

// processAccounting is the collector's view of process accounting; nil
// when off.
func (a *app) processAccounting() collector.ProcessAccounting {
	if a.procAcc == nil {
		return nil
	}
	return a.procAcc
}
