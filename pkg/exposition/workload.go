package exposition

import (
	"cmp"
	"slices"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// Workload is the workload of the pod a holder belongs to
// (--kubernetes.workload-info): the top of its owner chain and, when
// Kueue admitted it, its LocalQueue and ClusterQueue. Kind is empty when
// it is not known (the option is off, or an owner is not readable yet).
type Workload struct {
	Kind, Name          string
	Queue, ClusterQueue string
}

// Labels of gpu_workload_info besides namespace, pod and pod_uid.
const (
	workloadKindLabel  = "workload_kind"
	workloadNameLabel  = "workload_name"
	queueLabel         = "queue"
	clusterQueueLabel  = "cluster_queue"
	workloadInfoFamily = "gpu_workload_info"
)

// workloadFamily is gpu_workload_info: one series per pod holding a GPU
// or MIG instance whose workload is known, not one per GPU, so a rule
// joins it to GPU series with group_left on namespace and pod without
// multiplying them, and the workload's names stay off every GPU series.
var workloadFamily = Family{
	Name: workloadInfoFamily, Type: fields.Gauge, Naming: NamingPrometheus,
	Help: "The workload of a pod holding a GPU on this node: the top of its owner chain (workload_kind Deployment, CronJob, Job, JobSet, LeaderWorkerSet, StatefulSet, DaemonSet, ReplicaSet, " +
		"a custom controller's kind, or Pod for a pod of its own) and, when Kueue admitted it, its LocalQueue (queue) and ClusterQueue (cluster_queue). Always 1; one series per pod: " +
		"join it to GPU series with `* on (namespace, pod) group_left (workload_kind, workload_name) gpu_workload_info`. Needs --kubernetes.workload-info.",
	Labels:   []string{"namespace", "pod", "pod_uid", workloadKindLabel, workloadNameLabel, queueLabel, clusterQueueLabel},
	Optional: []string{"pod_uid", queueLabel, clusterQueueLabel},
	render: func(p *pageWriter, in Input, f family) {
		var pods []*Holder
		for i, t := range in.Holdings {
			if h := t.Holder; h != nil && h.HPCJob == "" && h.Workload.Kind != "" {
				if pods == nil { // one allocation, and none on a page without workloads
					pods = make([]*Holder, 0, len(in.Holdings)-i)
				}
				pods = append(pods, h)
			}
		}
		if len(pods) == 0 {
			return
		}
		slices.SortFunc(pods, func(a, b *Holder) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod))
		})
		b := p.buf[:0]
		for i, h := range pods {
			if i > 0 && pods[i-1].Namespace == h.Namespace && pods[i-1].Pod == h.Pod {
				continue // the pod's other containers and GPUs
			}
			w := &h.Workload
			b = appendLabel(b[:0], true, "namespace", h.Namespace)
			b = appendLabel(b, false, "pod", h.Pod)
			if h.PodUID != "" {
				b = appendLabel(b, false, "pod_uid", h.PodUID)
			}
			b = appendLabel(b, false, workloadKindLabel, w.Kind)
			b = appendLabel(b, false, workloadNameLabel, w.Name)
			if w.Queue != "" {
				b = appendLabel(b, false, queueLabel, w.Queue)
			}
			if w.ClusterQueue != "" {
				b = appendLabel(b, false, clusterQueueLabel, w.ClusterQueue)
			}
			p.line(&f, b, "", "", 1)
		}
		p.buf = b
	},
}
