package resourceslices

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
)

// Conditions of a store or a probe: the values of the state label of
// gpu_exporter_resourceslices_state, and what doctor reports.
const (
	// ConditionSyncing: discovery or the first list has not finished.
	ConditionSyncing = "syncing"
	// ConditionSynced: the informer has listed and its watch runs.
	ConditionSynced = "synced"
	// ConditionForbidden: the API server answered 403 (RBAC).
	ConditionForbidden = "forbidden"
	// ConditionNotServed: the API server serves no resource.k8s.io version
	// this package reads.
	ConditionNotServed = "not_served"
	// ConditionFailing: another error (API server unreachable, timeouts).
	ConditionFailing = "failing"
)

// Conditions lists every condition, in a fixed order.
func Conditions() []string {
	return []string{ConditionSyncing, ConditionSynced, ConditionForbidden, ConditionNotServed, ConditionFailing}
}

// conditionOf classifies an error.
func conditionOf(err error) string {
	switch {
	case errors.Is(err, ErrGroupNotServed):
		return ConditionNotServed
	case apierrors.IsForbidden(err):
		return ConditionForbidden
	default:
		return ConditionFailing
	}
}

// Condition sums the state up in one of Conditions: the last error's kind
// while there is one, else synced or syncing.
func (s State) Condition() string {
	switch {
	case s.Err != nil:
		return conditionOf(s.Err)
	case s.Synced:
		return ConditionSynced
	default:
		return ConditionSyncing
	}
}

// Probe is what one synchronous look at the API server found (doctor).
type Probe struct {
	// Version is the resource.k8s.io version served and used.
	Version string
	// Condition is one of Conditions (never syncing).
	Condition string
	// Verb is the verb the API server refused ("list" or "watch") when
	// Condition is ConditionForbidden.
	Verb string
	// Err is the error behind a Condition other than synced.
	Err error
	// Drivers are the drivers with ResourceSlices of the node, sorted;
	// Devices counts their devices.
	Drivers []string
	Devices int
}

// ProbeNode does once what the store does continually: discovers the
// served version, lists the node's ResourceSlices and opens (and closes)
// a watch on them, each as the exporter's service account, so that a
// missing RBAC verb or API group is named.
func ProbeNode(ctx context.Context, cfg *rest.Config, node string) Probe {
	var p Probe
	fail := func(err error, verb string) Probe {
		p.Err, p.Condition = err, conditionOf(err)
		if p.Condition == ConditionForbidden {
			p.Verb = verb
		}
		return p
	}
	v, err := ServedVersion(ctx, cfg)
	if err != nil {
		return fail(err, "")
	}
	p.Version = v
	c, err := newSlicesClient(cfg, v)
	if err != nil {
		return fail(err, "")
	}
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()}
	list, err := c.List(ctx, opts)
	if err != nil {
		return fail(fmt.Errorf("list ResourceSlices of node %s: %w", node, err), "list")
	}
	drivers := map[string]bool{}
	for i := range list.Items {
		drivers[list.Items[i].Spec.Driver] = true
		p.Devices += len(list.Items[i].Spec.Devices)
	}
	p.Drivers = slices.Sorted(maps.Keys(drivers))
	timeout := int64(1)
	opts.ResourceVersion, opts.TimeoutSeconds = list.ResourceVersion, &timeout
	w, err := c.Watch(ctx, opts)
	if err != nil {
		return fail(fmt.Errorf("watch ResourceSlices of node %s: %w", node, err), "watch")
	}
	w.Stop()
	p.Condition = ConditionSynced
	return p
}
