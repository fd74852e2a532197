package podlabels

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// DefaultMaxLabels is the default cap on pod labels per series.
	DefaultMaxLabels = 10
	// MaxLabelsLimit is the largest cap accepted. A GPU series carries at
	// most 12 labels of its own (__name__, gpu, uuid, device, model,
	// gpu_instance, mig_profile, namespace, pod, container, pod_uid and one
	// of reason/xid/shared); Prometheus adds job, instance and node. With 12
	// pod labels that is 27, under Mimir's default limit of 30 with room for
	// a cluster label.
	MaxLabelsLimit = 12
	// DefaultSyncTimeout bounds how long Run waits for the first pod list.
	DefaultSyncTimeout = 30 * time.Second
)

// Config configures a Store. Settings are named in errors as the user sets
// them: NODE_NAME and the --kubernetes.pod-* flags.
type Config struct {
	// Node is the name of the node the exporter runs on, from the downward
	// API (env NODE_NAME from fieldRef spec.nodeName). Only pods on this
	// node are watched.
	Node string
	// Allowlist selects the pod label keys exported; it is matched against
	// the Kubernetes key ("app.kubernetes.io/name"), not the sanitized name.
	// Use ParseAllowlist to get a fully anchored one. Nil exports no labels.
	Allowlist *regexp.Regexp
	// UID makes Lookup report pod UIDs.
	UID bool
	// Workloads makes Lookup report the pod's workload (Info.Workload),
	// resolving its owners with GETs (owners.go).
	Workloads bool
	// Containers is set when the store runs for LookupContainer (process
	// accounting), which needs neither labels nor UIDs.
	Containers bool
	// ResyncPeriod is the informer's resync period; 0 (the default) never
	// resyncs, which is right here: every change arrives as a watch event.
	ResyncPeriod time.Duration
	// MaxLabels caps the labels a pod contributes; 0 means DefaultMaxLabels.
	// At most MaxLabelsLimit.
	MaxLabels int
	// SyncTimeout bounds how long Run waits for the first pod list; 0 means
	// DefaultSyncTimeout.
	SyncTimeout time.Duration
}

// ParseAllowlist compiles the --kubernetes.pod-labels value. The expression
// is anchored at both ends, as in Prometheus relabelling: "team" matches the
// key "team" only, "team|app\.kubernetes\.io/.*" matches team and every
// app.kubernetes.io key. An empty expression returns nil (no labels).
func ParseAllowlist(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile("^(?:" + expr + ")$")
	if err != nil {
		return nil, fmt.Errorf("--kubernetes.pod-labels: %w", err)
	}
	return re, nil
}

// withDefaults returns cfg with zero settings replaced by their defaults,
// after checking it; each error names the setting at fault.
func (cfg Config) withDefaults() (Config, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("podlabels: "+format, args...))
	}
	switch {
	case cfg.Node == "":
		bad("NODE_NAME is not set: set it from the downward API (env NODE_NAME, valueFrom.fieldRef.fieldPath spec.nodeName); pod labels and pod UIDs need it to watch only this node's pods")
	default:
		if msgs := validation.IsDNS1123Subdomain(cfg.Node); len(msgs) > 0 {
			bad("NODE_NAME %q is not a node name: %s", cfg.Node, strings.Join(msgs, "; "))
		}
	}
	if cfg.Allowlist == nil && !cfg.UID && !cfg.Containers && !cfg.Workloads {
		bad("nothing to watch pods for: none of --kubernetes.pod-labels, --kubernetes.pod-uid and --kubernetes.workload-info is set")
	}
	if cfg.ResyncPeriod < 0 {
		bad("resync period must not be negative, got %s", cfg.ResyncPeriod)
	}
	if cfg.MaxLabels == 0 {
		cfg.MaxLabels = DefaultMaxLabels
	}
	if cfg.MaxLabels < 0 || cfg.MaxLabels > MaxLabelsLimit {
		bad("--kubernetes.pod-labels-limit must be between 1 and %d (series must stay well under 30 labels), got %d", MaxLabelsLimit, cfg.MaxLabels)
	}
	if cfg.SyncTimeout == 0 {
		cfg.SyncTimeout = DefaultSyncTimeout
	}
	if cfg.SyncTimeout < 0 {
		bad("sync timeout must not be negative, got %s", cfg.SyncTimeout)
	}
	return cfg, errors.Join(errs...)
}
