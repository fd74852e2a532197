package podlabels

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
)

// Options are the pod label flags: --kubernetes.pod-labels, -pod-uid,
// -pod-labels-limit and --kubernetes.workload-info.
type Options struct {
	// Labels is --kubernetes.pod-labels as given; Allowlist is it
	// compiled, set by Validate (nil: no labels).
	Labels    string
	Allowlist *regexp.Regexp
	UID       bool
	MaxLabels int
	// Workloads is --kubernetes.workload-info: gpu_workload_info, from the
	// pods' owners. Off by default, even when the pod informer runs for
	// another flag: it needs get on replicasets, jobs and Kueue's
	// localqueues besides list/watch on pods, a grant a default install
	// should not ask for, and without it every lookup is a 403.
	Workloads bool
}

// AddFlags declares the pod label flags on fs, bound to o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Labels, "kubernetes.pod-labels", "", "Regular expression (anchored) of pod label keys to add as label_<key> to attributed series; needs NODE_NAME and list/watch on pods (empty: none).")
	fs.BoolVar(&o.UID, "kubernetes.pod-uid", false, "Add pod_uid to attributed series; needs NODE_NAME and list/watch on pods.")
	fs.IntVar(&o.MaxLabels, "kubernetes.pod-labels-limit", DefaultMaxLabels, "Most pod labels added per pod (1-12); keys past it are dropped and logged.")
	fs.BoolVar(&o.Workloads, "kubernetes.workload-info", false, "Export gpu_workload_info: each GPU-holding pod's workload (Deployment, Job, CronJob, JobSet, LeaderWorkerSet, StatefulSet, ...) and Kueue queues; needs NODE_NAME, list/watch on pods and get on replicasets, jobs and localqueues.kueue.x-k8s.io.")
}

// Validate checks the flags, each error naming its flag, and sets
// Allowlist.
func (o *Options) Validate() error {
	allow, err := ParseAllowlist(o.Labels)
	if err != nil {
		return err // names the flag
	}
	o.Allowlist = allow
	if o.MaxLabels < 1 || o.MaxLabels > MaxLabelsLimit {
		return fmt.Errorf("--kubernetes.pod-labels-limit must be 1..%d, got %d", MaxLabelsLimit, o.MaxLabels)
	}
	return nil
}

// Enabled reports whether pod labels, UIDs or workloads are asked for.
func (o *Options) Enabled() bool { return o.Allowlist != nil || o.UID || o.Workloads }

// Open starts the in-cluster pod informer of node when pod labels, UIDs
// or workloads are asked for; they describe attributed series, so
// attributed says whether pod attribution is on. It returns nil when they
// are not asked for.
func Open(o Options, node string, attributed bool, logger *slog.Logger, reg prometheus.Registerer) (*Store, error) {
	if !o.Enabled() {
		return nil, nil
	}
	if !attributed {
		if o.Allowlist == nil && !o.UID {
			return nil, errors.New("--kubernetes.workload-info describes the pods holding GPUs: pod attribution must be on (--kubernetes.enabled)")
		}
		return nil, errors.New("--kubernetes.pod-labels and --kubernetes.pod-uid label attributed series: pod attribution must be on (--kubernetes.enabled)")
	}
	store, err := NewInCluster(Config{Node: node, Allowlist: o.Allowlist, UID: o.UID, MaxLabels: o.MaxLabels, Workloads: o.Workloads}, logger, reg)
	if err != nil {
		if o.Allowlist == nil && !o.UID {
			return nil, fmt.Errorf("--kubernetes.workload-info: %w", err)
		}
		return nil, fmt.Errorf("--kubernetes.pod-labels/--kubernetes.pod-uid: %w", err)
	}
	return store, nil
}
