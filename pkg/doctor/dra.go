package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/resourceslices"
)

// CheckDRA names the DRA ResourceSlice check.
const CheckDRA = "dra"

// DRA is the DRA attribution configuration to check.
type DRA struct {
	// Mode is --kubernetes.dra: auto, true or false.
	Mode string
	// RESTConfig returns the API server's client config as the exporter
	// gets it (in-cluster); nil means rest.InClusterConfig.
	RESTConfig func() (*rest.Config, error)
}

// draFix is the RBAC the exporter needs for DRA attribution.
const draFix = "grant the exporter's service account get, list and watch on resourceslices.resource.k8s.io (the chart does with kubernetes.dra=true, or auto where the cluster serves resource.k8s.io)"

// checkDRA looks at the node's ResourceSlices once as the exporter would:
// the API group served, the RBAC verbs, and the drivers that publish for
// the node. With --kubernetes.dra=auto what is missing is a warning (whole
// GPUs still resolve by minor number), with true a failure.
func checkDRA(ctx context.Context, cfg Config) Result {
	res := Result{Check: CheckDRA}
	d := cfg.DRA
	missing := Warn
	if d.Mode == "true" {
		missing = Fail
	}
	off := func(found, fix string) Result {
		res.Status, res.Found, res.Fix = missing, found+": DRA whole GPUs resolve by minor number only, DRA MIG devices are not attributed", fix
		return res
	}
	switch {
	case d.Mode == "false":
		res.Status, res.Found = OK, "DRA attribution off (--kubernetes.dra=false): DRA whole GPUs resolve by minor number only"
		return res
	case cfg.Kubernetes.Enabled == "false":
		res.Status, res.Found = OK, "pod attribution off (--kubernetes.enabled=false)"
		return res
	case cfg.NodeName == "":
		return off("NODE_NAME is empty", "set NODE_NAME from the downward API (spec.nodeName); the chart does")
	}
	restConfig := d.RESTConfig
	if restConfig == nil {
		restConfig = rest.InClusterConfig
	}
	rc, err := restConfig()
	if err != nil {
		return off(fmt.Sprintf("no in-cluster API access (%v)", err), "run the exporter in a pod with a service account token mounted (automountServiceAccountToken)")
	}
	cctx, cancel := withTimeout(ctx, cfg)
	defer cancel()
	p := resourceslices.ProbeNode(cctx, rc, cfg.NodeName)
	switch p.Condition {
	case resourceslices.ConditionNotServed:
		res.Status, res.Found = missing, "the API server serves no resource.k8s.io version with ResourceSlices (v1, v1beta2, v1beta1): DRA is off in this cluster"
		if missing == Fail {
			res.Fix = "enable DRA in the cluster (GA in Kubernetes 1.34) or set --kubernetes.dra=auto"
		}
		return res
	case resourceslices.ConditionForbidden:
		res.Status, res.Found, res.Fix = Fail, fmt.Sprintf("RBAC refuses %s on resourceslices.resource.k8s.io/%s (403): DRA MIG devices are not attributed", p.Verb, p.Version), draFix
		return res
	case resourceslices.ConditionFailing:
		res.Status, res.Found = Fail, fmt.Sprintf("the API server did not answer for ResourceSlices: %v", p.Err)
		res.Fix = "check that the API server is reachable from the node (KUBERNETES_SERVICE_HOST) and the service account token is valid"
		return res
	}
	found := fmt.Sprintf("resource.k8s.io/%s served, get/list/watch allowed; node %s has %d devices in ResourceSlices of %s",
		p.Version, cfg.NodeName, p.Devices, orNone(p.Drivers))
	wanted := slices.DeleteFunc(slices.Clone(p.Drivers), func(d string) bool {
		return !podresources.MatchResource(cfg.Kubernetes.ResourceNames, d)
	})
	if len(wanted) == 0 {
		res.Status, res.Found = Warn, found+"; no attributed DRA driver publishes for this node"
		res.Fix = "install NVIDIA's DRA driver (gpu.nvidia.com) on the node, or add its driver name to --kubernetes.resource-names"
		return res
	}
	res.Status, res.Found = OK, found
	return res
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "no driver"
	}
	return strings.Join(names, ", ")
}
