package exposition

import (
	"strconv"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// entityLabels appends the identifying labels of e, then the holder's.
func entityLabels(b []byte, e *source.Entity, h *Holder) []byte {
	if e.Kind == source.NVSwitch || e.Kind == source.NVLink && e.Parent == source.NVSwitch {
		// A switch and its ports belong to no GPU and no pod.
		b = appendLabel(b, true, "nvswitch", strconv.Itoa(e.ID))
		if e.Kind == source.NVLink {
			b = appendLabel(b, false, "link", strconv.Itoa(e.Link))
		}
		return b
	}
	b = appendLabel(b, true, "gpu", strconv.Itoa(e.GPU))
	b = appendLabel(b, false, "uuid", e.UUID)
	b = appendLabel(b, false, "device", e.Device)
	b = appendLabel(b, false, "model", e.Model)
	switch e.Kind {
	case source.GPUInstance:
		b = appendLabel(b, false, "gpu_instance", strconv.Itoa(e.GPUInstance))
		b = appendLabel(b, false, "mig_profile", e.MIGProfile)
	case source.NVLink:
		b = appendLabel(b, false, "link", strconv.Itoa(e.Link))
	case source.NVSwitch:
		b = appendLabel(b, false, "nvswitch", strconv.Itoa(e.ID))
	}
	if h != nil && h.HPCJob != "" {
		b = appendHPCJob(b, h)
	} else if h != nil {
		b = appendLabel(b, false, "namespace", h.Namespace)
		b = appendLabel(b, false, "pod", h.Pod)
		b = appendLabel(b, false, "container", h.Container)
		b = appendPodInfo(b, h)
	}
	return b
}

// appendPodInfo appends the holder's pod_uid and pod labels, when known.
func appendPodInfo(b []byte, h *Holder) []byte {
	if h.PodUID != "" {
		b = appendLabel(b, false, "pod_uid", h.PodUID)
	}
	for _, l := range h.Labels {
		b = appendLabel(b, false, l.Name, l.Value)
	}
	return b
}

// appendHPCJob appends an HPC job holder's labels, sorted by name as
// dcgm-exporter sorts its attributes; hpc_job is dcgm-exporter's name
// (hpcJobAttribute, internal/pkg/transformation/const.go).
func appendHPCJob(b []byte, h *Holder) []byte {
	b = appendLabel(b, false, "hpc_job", h.HPCJob)
	if h.HPCPartition != "" {
		b = appendLabel(b, false, "hpc_partition", h.HPCPartition)
	}
	if h.HPCUser != "" {
		b = appendLabel(b, false, "hpc_user", h.HPCUser)
	}
	return b
}
