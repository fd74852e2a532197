package exposition

import (
	"strconv"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// DRAClaim is the device of a DRA claim through which a container holds
// an entity (Holder.DRA): the claim, the device as the kubelet names it
// and, for a MIG device its ResourceSlice describes, the device's profile
// and MIG UUID (none for a dynamic-MIG device). Name is empty for a
// holder that holds the entity through a device plugin.
type DRAClaim struct {
	Namespace, Name      string
	Driver, Pool, Device string
	// ShareID is set for a device allocated with consumable capacity.
	ShareID             string
	MIGProfile, MIGUUID string
}

// Labels of gpu_dra_claim_info besides the entity's uuid (and
// gpu_instance) and the holder's namespace, pod and container. The device
// of the claim is claim_device: the entity's own device label is its
// nvidiaN name. There is no claim namespace: a pod uses only claims of its
// own namespace (a ResourceClaim is namespaced and PodResourceClaim names
// one of the pod's namespace), so it is the namespace label.
const (
	draClaimNameLabel   = "claim_name"
	draClaimDriverLabel = "claim_driver"
	draClaimPoolLabel   = "claim_pool"
	draClaimDeviceLabel = "claim_device"
	draClaimShareLabel  = "claim_share_id"
)

// DCGMDRALabelNames lists the labels dcgm naming writes on the series of
// a container holding the entity through a DRA claim, in the order
// written (sorted, as dcgm-exporter writes its attributes): dcgm-exporter's
// draClaimName … draMigDeviceUUID (internal/pkg/transformation/const.go,
// NVIDIA/dcgm-exporter@d5e5f510). The two dra_mig_* labels are written for
// a MIG device only.
func DCGMDRALabelNames() []string {
	return []string{"dra_claim_name", "dra_claim_namespace", "dra_device_name", "dra_driver_name",
		"dra_mig_device_uuid", "dra_mig_profile", "dra_pool_name"}
}

// appendDCGMDRA appends a DRA holder's dra_* labels, as dcgm-exporter's
// PodMapper writes them: claim and device always, the MIG profile and MIG
// device UUID when the ResourceSlice says the device is a MIG device (the
// UUID empty for a dynamic-MIG device, whose slice has none).
func appendDCGMDRA(b []byte, c *DRAClaim) []byte {
	if c.Name == "" {
		return b
	}
	b = appendLabel(b, false, "dra_claim_name", c.Name)
	b = appendLabel(b, false, "dra_claim_namespace", c.Namespace)
	b = appendLabel(b, false, "dra_device_name", c.Device)
	b = appendLabel(b, false, "dra_driver_name", c.Driver)
	if c.MIGProfile != "" {
		b = appendLabel(b, false, "dra_mig_device_uuid", c.MIGUUID)
		b = appendLabel(b, false, "dra_mig_profile", c.MIGProfile)
	}
	return appendLabel(b, false, "dra_pool_name", c.Pool)
}

// draClaimFamily is gpu_dra_claim_info, with which Prometheus naming
// states DRA claims: every holding of a GPU or MIG instance through a DRA
// claim. Dcgm naming puts them in labels of the series instead
// (DCGMDRALabelNames).
var draClaimFamily = Family{
	Name: "gpu_dra_claim_info", Type: fields.Gauge, Naming: NamingPrometheus,
	Help: "A device of a DRA ResourceClaim through which a container holds the GPU (uuid) or MIG instance (uuid, gpu_instance): the claim (of the pod's namespace), " +
		"and the device as the kubelet names it (driver, pool, device; claim_share_id for a device allocated with consumable capacity). Always 1. " +
		"Join it to GPU series on uuid, gpu_instance, namespace, pod and container.",
	Labels: []string{"uuid", "gpu_instance", "namespace", "pod", "container", draClaimNameLabel, draClaimDriverLabel,
		draClaimPoolLabel, draClaimDeviceLabel, draClaimShareLabel},
	Optional: []string{"gpu_instance", draClaimShareLabel},
	render: func(p *pageWriter, in Input, f family) {
		b := p.buf[:0]
		for _, t := range in.Holdings {
			h := t.Holder
			if h == nil || h.DRA.Name == "" {
				continue
			}
			e := &in.Sample.Inventory.Entities[t.Entity]
			if e.Kind != source.GPU && e.Kind != source.GPUInstance {
				continue
			}
			c := &h.DRA
			b = appendLabel(b[:0], true, "uuid", e.UUID)
			if e.Kind == source.GPUInstance {
				b = appendLabel(b, false, "gpu_instance", strconv.Itoa(e.GPUInstance))
			}
			b = appendLabel(b, false, "namespace", h.Namespace)
			b = appendLabel(b, false, "pod", h.Pod)
			b = appendLabel(b, false, "container", h.Container)
			b = appendLabel(b, false, draClaimNameLabel, c.Name)
			b = appendLabel(b, false, draClaimDriverLabel, c.Driver)
			b = appendLabel(b, false, draClaimPoolLabel, c.Pool)
			b = appendLabel(b, false, draClaimDeviceLabel, c.Device)
			if c.ShareID != "" {
				b = appendLabel(b, false, draClaimShareLabel, c.ShareID)
			}
			p.line(&f, b, "", "", 1)
		}
		p.buf = b
	},
}
