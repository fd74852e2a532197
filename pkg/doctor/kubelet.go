package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// mountFix is the fix for a socket the exporter cannot see.
const mountFix = "mount the host's /var/lib/kubelet/pod-resources into the exporter (the chart does) or set --kubernetes.pod-resources-socket; without it GPUs carry no pod labels"

// reasonText explains podresources' unmatched reasons.
var reasonText = map[string]string{
	podresources.UnmatchedMalformed:       "did not parse as a device id (check --kubernetes.gpu-id-type)",
	podresources.UnmatchedUnsupportedForm: "a form that names no GPU the exporter can match (MIG device index N:M, DRA MIG or VFIO names)",
	podresources.UnmatchedUnknownGPU:      "a GPU or MIG instance the source does not report (another GPU source, --collect.gpus, or a MIG layout that changed)",
	podresources.UnmatchedNoResourceSlice: "a DRA device only the node's ResourceSlices name, and none does (see the dra check)",
}

// checkKubelet asks the kubelet once for List and GetAllocatableResources
// and matches the device ids against the inventory with the exporter's
// attribution table.
func checkKubelet(ctx context.Context, cfg Config, socket string, inv *source.Inventory) Result {
	k := cfg.Kubernetes
	res := Result{Check: CheckKubelet}
	if k.Enabled == "false" {
		res.Status, res.Found = OK, "pod attribution off (--kubernetes.enabled=false)"
		return res
	}
	missing := Fail
	if k.Enabled == "auto" {
		missing = Warn
	}
	st, err := bounded.Stat(ctx, socket, hostReadTimeout)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.Status, res.Found, res.Fix = missing, fmt.Sprintf("socket %s does not exist: pod attribution is off", socket), mountFix
		return res
	case err != nil:
		res.Status, res.Found, res.Fix = Fail, fmt.Sprintf("socket %s: %v", socket, err), mountFix
		return res
	case st.Mode()&fs.ModeSocket == 0:
		res.Status, res.Found, res.Fix = Fail, fmt.Sprintf("%s is not a unix socket (%s)", socket, st.Mode().Type()), "point --kubernetes.pod-resources-socket at the kubelet's pod-resources socket, "+podresources.DefaultSocket
		return res
	}
	callOpts, replaced := podresources.CallOptions()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(callOpts...))
	if err != nil {
		res.Status, res.Found = Fail, fmt.Sprintf("socket %s: %v", socket, err)
		return res
	}
	defer func() { _ = conn.Close() }()
	lister := podresourcesv1.NewPodResourcesListerClient(conn)
	cctx, cancel := context.WithTimeout(ctx, min(k.CallTimeout, cfg.Timeout))
	defer cancel()
	resp, err := lister.List(cctx, &podresourcesv1.ListPodResourcesRequest{}, grpc.WaitForReady(true))
	if err != nil {
		res.Status, res.Found = Fail, fmt.Sprintf("kubelet pod-resources List on %s: %v", socket, err)
		res.Fix = "check that the kubelet runs and serves pod-resources v1 (Kubernetes 1.20+)"
		if strings.Contains(err.Error(), "permission denied") {
			res.Fix = "the exporter may not connect to the socket: run it as root (the chart does) or grant it access to " + socket
		}
		return res
	}
	reported := reportedResources(resp)
	actx, acancel := context.WithTimeout(ctx, min(k.CallTimeout, cfg.Timeout))
	defer acancel()
	alloc, err := lister.GetAllocatableResources(actx, &podresourcesv1.AllocatableResourcesRequest{})
	allocLine := "GetAllocatableResources: supported"
	switch {
	case podresources.AllocatableUnsupported(err):
		allocLine = "GetAllocatableResources: not implemented or disabled (kubelet before 1.23, or feature gate KubeletPodResourcesGetAllocatable off): allocatable GPUs and shared replicas unknown"
	case err != nil:
		allocLine = "GetAllocatableResources: failed: " + err.Error()
	default:
		for _, d := range alloc.GetDevices() {
			reported = append(reported, d.GetResourceName())
		}
	}
	slices.Sort(reported)
	reported = slices.Compact(reported)
	var matched, ignored []string
	for _, name := range reported {
		if podresources.MatchResource(k.ResourceNames, name) {
			matched = append(matched, name)
		} else {
			ignored = append(ignored, name)
		}
	}
	t := podresources.NewTable(resp, k.ResourceNames, k.IDType)
	res.Details = append(res.Details, allocLine,
		"resources reported: "+listOrNone(reported),
		"resources attributed (--kubernetes.resource-names and defaults): "+listOrNone(matched))
	// A GPU instance split into several compute instances is held through
	// each one's MIG device (source.Inventory.HeldAs).
	inv = inv.WithHeldAs()
	if inv != nil {
		for i := range inv.Entities {
			e := &inv.Entities[i]
			for _, h := range t.Holders(e) {
				res.Details = append(res.Details, fmt.Sprintf("%s held by %s/%s container %s (%s)", entityName(e), h.Namespace, h.Pod, h.Container, h.Resource))
			}
		}
	}
	unmatched := t.Unmatched(inv)
	uc := t.UnmatchedCounts(inv)
	uc.ByReason(func(reason string, n int) {
		if n > 0 {
			res.Details = append(res.Details, fmt.Sprintf("%d unmatched device ids: %s: %s", n, reason, reasonText[reason]))
		}
	})
	for _, id := range unmatched {
		res.Details = append(res.Details, "unmatched device id "+id)
	}
	res.Found = fmt.Sprintf("socket %s answers List: %d pods, %d allocations of GPU resources", socket, len(resp.GetPodResources()), t.Len())
	res.Status = OK
	invalid := replaced()
	if invalid > 0 {
		res.Details = append(res.Details, fmt.Sprintf("%d strings in the kubelet's replies are not valid UTF-8: shown with U+FFFD in place of the bad bytes", invalid))
	}
	switch {
	case inv == nil && t.Len() > 0:
		res.Status = Warn
		res.Found += "; device ids not compared: the GPU source failed"
		res.Fix = "fix the gpu-source check first"
	case len(unmatched) > 0:
		res.Status = Warn
		res.Found += fmt.Sprintf("; %d device ids match no GPU of the source", len(unmatched))
		res.Fix = "those containers get no pod labels: see the unmatched reasons below"
	case len(reported) > 0 && len(matched) == 0:
		res.Status = Warn
		res.Found += "; no reported resource matches the configured resource names"
		res.Fix = "add the GPU resource name (" + strings.Join(ignored, ", ") + ") with --kubernetes.resource-names"
	case invalid > 0:
		res.Status = Warn
		res.Found += fmt.Sprintf("; %d strings in its replies are not valid UTF-8", invalid)
		res.Fix = "the exporter labels with U+FFFD in place of the bad bytes (gpu_exporter_podresources_invalid_utf8_strings); check what names these pods and devices (device plugin, DRA driver)"
	}
	return res
}

// reportedResources lists every device-plugin resource and DRA driver name
// in a List response.
func reportedResources(resp *podresourcesv1.ListPodResourcesResponse) []string {
	var out []string
	for _, pod := range resp.GetPodResources() {
		for _, ctr := range pod.GetContainers() {
			for _, d := range ctr.GetDevices() {
				out = append(out, d.GetResourceName())
			}
			for _, dyn := range ctr.GetDynamicResources() {
				for _, cr := range dyn.GetClaimResources() {
					out = append(out, cr.GetDriverName())
				}
			}
		}
	}
	return out
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
