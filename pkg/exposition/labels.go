package exposition

import (
	"strconv"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// labeler builds the label set of one target. labelCols are the sample
// columns whose values become labels (dcgm naming). It runs only when the
// label cache is rebuilt.
type labeler func(s *source.Sample, t Target, labelCols []int) targetLabels

// prometheusLabels is the labeler of Prometheus naming.
func prometheusLabels(s *source.Sample, t Target, _ []int) targetLabels {
	b := entityLabels(nil, &s.Inventory.Entities[t.Entity], t.Holder)
	return targetLabels{b: b, window: len(b), attr: len(b)}
}

// entityLabels appends the identifying labels of e, then the holder's.
func entityLabels(b []byte, e *source.Entity, h *Holder) []byte {
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
	if h != nil {
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

// dcgmLabeler returns the labeler of dcgm naming. Labels come in
// dcgm-exporter's order: the entity's fixed labels, the hostname, the label
// fields sorted by name, then the holder's labels sorted by name.
func dcgmLabeler(o DCGMOptions) labeler {
	uuid, pod, namespace, container := "UUID", "pod", "namespace", "container"
	if o.OldNamespace {
		uuid, pod, namespace, container = "uuid", "pod_name", "pod_namespace", "container_name"
	}
	return func(s *source.Sample, t Target, labelCols []int) targetLabels {
		e := &s.Inventory.Entities[t.Entity]
		var b []byte
		switch e.Kind {
		case source.NVSwitch:
			b = appendLabel(b, true, "nvswitch", "nvswitch"+strconv.Itoa(e.ID))
		case source.NVLink:
			b = appendLabel(b, true, "nvlink", strconv.Itoa(e.Link))
			b = appendLabel(b, false, "gpu", strconv.Itoa(e.GPU))
			b = appendLabel(b, false, "gpu_uuid", e.UUID)
			b = appendLabel(b, false, "pci_bus_id", e.PCIBusID)
			b = appendLabel(b, false, "device", "nvidia"+strconv.Itoa(e.GPU))
			b = appendLabel(b, false, "model_name", modelName(e.Model, o))
		default:
			b = appendLabel(b, true, "gpu", strconv.Itoa(e.GPU))
			b = appendLabel(b, false, uuid, e.UUID)
			b = appendLabel(b, false, "pci_bus_id", e.PCIBusID)
			// dcgm-exporter names the device after the GPU index, not the
			// device minor number.
			b = appendLabel(b, false, "device", "nvidia"+strconv.Itoa(e.GPU))
			b = appendLabel(b, false, "modelName", modelName(e.Model, o))
			if e.Kind == source.GPUInstance {
				b = appendLabel(b, false, "GPU_I_PROFILE", e.MIGProfile)
				b = appendLabel(b, false, "GPU_I_ID", strconv.Itoa(e.GPUInstance))
			}
		}
		if o.Hostname != "" {
			b = appendLabel(b, false, o.HostnameLabel, o.Hostname)
		}
		parent := -1
		if e.Kind == source.GPUInstance {
			parent = parentGPU(s.Inventory, e.GPU)
		}
		for _, col := range labelCols {
			f := &s.Fields[col]
			v, ok := labelValue(s.At(t.Entity, col))
			if !ok && parent >= 0 { // label fields are read per GPU
				v, ok = labelValue(s.At(parent, col))
			}
			if !ok && f.ID == fields.DriverVersionID && s.Inventory.DriverVersion != "" {
				v, ok = s.Inventory.DriverVersion, true
			}
			if ok {
				b = appendLabel(b, false, f.DCGMName, v)
			}
		}
		l := targetLabels{window: len(b), migParent: e.Kind == source.GPU && hasInstances(s.Inventory, e.GPU)}
		if h := t.Holder; h != nil {
			// Sorted by name: container(_name) sorts before err_code and
			// err_msg, the rest after them.
			b = appendLabel(b, false, container, h.Container)
			l.attr = len(b)
			if o.OldNamespace {
				b = appendLabel(b, false, pod, h.Pod)
				b = appendLabel(b, false, namespace, h.Namespace)
			} else {
				b = appendLabel(b, false, namespace, h.Namespace)
				b = appendLabel(b, false, pod, h.Pod)
			}
			if h.PodUID != "" {
				b = appendLabel(b, false, "pod_uid", h.PodUID)
			}
			// dcgm-exporter writes its attributes sorted by name: vgpu
			// after pod_uid.
			if o.VirtualGPUs && h.VGPU != "" {
				b = appendLabel(b, false, "vgpu", h.VGPU)
			}
			for _, pl := range h.Labels {
				b = appendLabel(b, false, pl.Name, pl.Value)
			}
		} else {
			l.attr = len(b)
		}
		l.b = b
		return l
	}
}

// hasInstances reports whether GPU index gpu has MIG GPU instances in the
// inventory.
func hasInstances(inv *source.Inventory, gpu int) bool {
	for i := range inv.Entities {
		if inv.Entities[i].Kind == source.GPUInstance && inv.Entities[i].GPU == gpu {
			return true
		}
	}
	return false
}

// parentGPU returns the inventory row of GPU index gpu, or -1.
func parentGPU(inv *source.Inventory, gpu int) int {
	for i := range inv.Entities {
		if inv.Entities[i].Kind == source.GPU && inv.Entities[i].GPU == gpu {
			return i
		}
	}
	return -1
}

// modelName is the modelName label value.
func modelName(model string, o DCGMOptions) string {
	if !o.ReplaceBlanksInModelName {
		return model
	}
	return strings.Join(strings.Fields(model), "-")
}

// labelValue formats a value as dcgm-exporter writes a label field: strings
// as they are, integers in decimal, floats with six decimals. Blank values
// leave the label out.
func labelValue(v source.Value) (string, bool) {
	switch v.Kind {
	case source.String:
		return v.Str, true
	case source.Int:
		return strconv.FormatInt(v.Int, 10), true
	case source.Float:
		return strconv.FormatFloat(v.Float, 'f', 6, 64), true
	}
	return "", false
}
