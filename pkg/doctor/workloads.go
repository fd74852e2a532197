package doctor

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
)

// CheckWorkloadInfo names the gpu_workload_info check.
const CheckWorkloadInfo = "workload-info"

// WorkloadInfo is the --kubernetes.workload-info configuration to check.
type WorkloadInfo struct {
	// Enabled is --kubernetes.workload-info.
	Enabled bool
	// RESTConfig returns the API server's client config as the exporter
	// gets it (in-cluster); nil means rest.InClusterConfig.
	RESTConfig func() (*rest.Config, error)
}

// workloadFix is the RBAC the workload resolution needs.
const workloadFix = "grant the exporter's service account get on replicasets (apps), jobs (batch), jobsets (jobset.x-k8s.io) and localqueues (kueue.x-k8s.io); the chart does with kubernetes.workloadInfo=true"

// checkWorkloadInfo asks the API server whether the exporter may read each
// resource of pod owners (podlabels.ProbeWorkloadAccess) and says which
// pods gpu_workload_info leaves out without it: pods of ReplicaSets or
// Jobs when those are forbidden, the queue of JobSets that alone carry it
// when JobSets are, the cluster_queue label when LocalQueues are.
func checkWorkloadInfo(ctx context.Context, cfg Config) Result {
	res := Result{Check: CheckWorkloadInfo}
	switch {
	case cfg.Kubernetes.Enabled == "false":
		res.Status, res.Found, res.Fix = Fail, "--kubernetes.workload-info describes pods holding GPUs, and --kubernetes.enabled=false turns pod attribution off", "set --kubernetes.enabled=auto or true"
		return res
	case cfg.NodeName == "":
		res.Status, res.Found, res.Fix = Fail, "--kubernetes.workload-info needs NODE_NAME (the pod informer watches this node's pods), which is empty", "set NODE_NAME from the downward API (spec.nodeName); the chart does"
		return res
	}
	restConfig := cfg.WorkloadInfo.RESTConfig
	if restConfig == nil {
		restConfig = rest.InClusterConfig
	}
	rc, err := restConfig()
	if err != nil {
		res.Status, res.Found = Fail, fmt.Sprintf("no in-cluster API access (%v): gpu_workload_info stays empty", err)
		res.Fix = "run the exporter in a pod with a service account token mounted (automountServiceAccountToken)"
		return res
	}
	cctx, cancel := withTimeout(ctx, cfg)
	defer cancel()
	access, err := podlabels.ProbeWorkloadAccess(cctx, rc, "default")
	if err != nil {
		res.Status, res.Found = Fail, fmt.Sprintf("Kubernetes client: %v", err)
		return res
	}
	var missing, notes []string
	res.Status = OK
	for _, a := range access {
		name := a.Resource + "." + a.Group
		switch {
		case a.Forbidden && a.Resource == "localqueues":
			missing = append(missing, name+" forbidden (403): Kueue pods lack cluster_queue")
		case a.Forbidden && a.Resource == "jobsets":
			missing = append(missing, name+" forbidden (403): pods of JobSets whose queue label only the JobSet carries lack queue and cluster_queue")
		case a.NotServed && a.Resource == "jobsets":
			notes = append(notes, name+" not served (JobSet not installed?)")
		case a.Forbidden:
			missing = append(missing, name+" forbidden (403): pods of "+a.Resource+" have no gpu_workload_info")
		case a.NotServed:
			notes = append(notes, name+" not served (Kueue not installed?): no cluster_queue")
		case a.Err != nil:
			missing = append(missing, fmt.Sprintf("%s: %v", name, a.Err))
		}
	}
	switch {
	case len(missing) > 0:
		res.Status, res.Found, res.Fix = Fail, strings.Join(append(missing, notes...), "; "), workloadFix
	case len(notes) > 0:
		res.Found = "get allowed on the resources served; " + strings.Join(notes, "; ")
	default:
		res.Found = "get allowed on replicasets, jobs, jobsets and localqueues: gpu_workload_info can name every pod's workload and Kueue queues"
	}
	return res
}
