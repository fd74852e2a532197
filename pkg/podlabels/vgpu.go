package podlabels

import (
	"fmt"
	"slices"
	"strings"
)

// GPUs chosen by a scheduler's annotation. HAMi's and Volcano's vGPU device
// plugins split each GPU into devices named "GPU-<uuid>-<n>" (see
// podresources.KindGPUSplit) and, when the kubelet asks them to allocate,
// give the container the GPUs their scheduler wrote into a pod
// annotation, whatever ids the kubelet picked: on a node with several GPUs
// the id's UUID may name another GPU than the one the container uses. The
// annotation is the truth:
//
//   - hamiAllocated: HAMi's "hami.io/vgpu-devices-allocated" (the NVIDIA
//     entry of util.SupportDevices; the scheduler's PatchAnnotations).
//     EncodePodSingleDevice (pkg/device/devices.go, Project-HAMi/HAMi
//     0136974a) writes one entry per container followed by ";", and
//     EncodeContainerDevices one "<uuid>,<type>,<memory MiB>,<cores %>"
//     per device followed by ":". Current releases list every init
//     container, then every container, an empty entry for one without
//     devices (Resourcereqs, same file: "Do NOT skip empty
//     ContainerDevices", DecodePodDevices); older releases listed
//     pod.Spec.Containers only. Captures from real clusters read
//     "GPU-859b872c-0ba2-97b0-10b4-8b7185c55039,NVIDIA,4000,0:;" (one
//     container, one T4 shared by two pods).
//   - volcanoAllocated: Volcano's "volcano.sh/vgpu-ids-new"
//     (AssignedIDsAnnotations, pkg/scheduler/api/devices/nvidia/vgpu/type.go
//     in volcano-sh/volcano 00a71336); encodePodDevices (utils.go there,
//     011c6dc6) joins with ";" one entry per container that asks for a
//     vGPU (resourcereqs appends only those, of pod.Spec.Containers), each
//     device written as HAMi writes it.
//
// The entries are matched to containers by position where their count
// says which layout wrote them, and otherwise in order to the containers
// the kubelet reports holding split devices (vgpuContainers).
const (
	hamiAllocated    = "hami.io/vgpu-devices-allocated"
	volcanoAllocated = "volcano.sh/vgpu-ids-new"
)

// maxVGPUAnnotation caps the annotation read: a few dozen bytes per device.
const maxVGPUAnnotation = 64 << 10

// vgpuAlloc is a pod's scheduler-chosen GPUs: the annotation's entries, in
// order, each the UUIDs of one container's devices (nil for an entry
// without devices), and the pod's init and regular container names in
// spec order.
type vgpuAlloc struct {
	entries    [][]string
	init, ctrs []string
	// err says why the annotation could not be read; entries is then nil.
	err string
}

func (a vgpuAlloc) equal(b vgpuAlloc) bool {
	return a.err == b.err && slices.Equal(a.init, b.init) && slices.Equal(a.ctrs, b.ctrs) &&
		slices.EqualFunc(a.entries, b.entries, slices.Equal)
}

// vgpuAnnotation returns the pod's allocation annotation, HAMi's before
// Volcano's.
func vgpuAnnotation(annotations map[string]string) (string, string, bool) {
	for _, k := range [...]string{hamiAllocated, volcanoAllocated} {
		if v, ok := annotations[k]; ok {
			return k, v, true
		}
	}
	return "", "", false
}

// vgpuOf reads a pod's scheduler-chosen GPUs; the zero vgpuAlloc for a pod
// without the annotation.
func vgpuOf(pod *apiPod) vgpuAlloc {
	key, v, ok := vgpuAnnotation(pod.Annotations)
	if !ok {
		return vgpuAlloc{}
	}
	a := vgpuAlloc{init: names(pod.Spec.InitContainers), ctrs: names(pod.Spec.Containers)}
	entries, err := parseVGPUAllocation(v)
	if err != nil {
		a.err = fmt.Sprintf("pod %s/%s: annotation %s: %v", pod.Namespace, pod.Name, key, err)
		return a
	}
	a.entries = entries
	return a
}

func names(cs []apiContainer) []string {
	if len(cs) == 0 {
		return nil
	}
	out := make([]string, len(cs))
	for i := range cs {
		out[i] = validText(cs[i].Name)
	}
	return out
}

// parseVGPUAllocation splits an allocation annotation into its container
// entries, each the UUIDs of its devices. The ";" HAMi writes after the
// last entry ends the list; it does not start an empty one.
func parseVGPUAllocation(v string) ([][]string, error) {
	if len(v) > maxVGPUAnnotation {
		return nil, fmt.Errorf("%d bytes, more than %d", len(v), maxVGPUAnnotation)
	}
	v = strings.TrimSuffix(v, ";")
	if v == "" {
		return nil, nil
	}
	var out [][]string
	for entry := range strings.SplitSeq(v, ";") {
		var uuids []string
		for dev := range strings.SplitSeq(entry, ":") {
			if dev == "" {
				continue
			}
			fields := strings.Split(dev, ",")
			if len(fields) < 4 {
				return nil, fmt.Errorf("device %q: %d fields, want uuid,type,memory,cores", dev, len(fields))
			}
			if fields[0] == "" {
				return nil, fmt.Errorf("device %q: no UUID", dev)
			}
			uuids = append(uuids, validText(fields[0]))
		}
		out = append(out, uuids)
	}
	return out, nil
}

// containers maps the entries to container names: by position over the
// init and regular containers (current HAMi), or over the regular ones
// (older HAMi), when the entry count matches; otherwise in order to the
// containers of holding (those the kubelet reports holding split devices,
// taken in spec order) when the entries with devices are as many. ok is
// false when neither fits.
func (a vgpuAlloc) containers(holding []string) (map[string][]string, bool) {
	if a.entries == nil {
		return nil, false
	}
	byPosition := func(names []string) map[string][]string {
		out := map[string][]string{}
		for i, uuids := range a.entries {
			if len(uuids) > 0 {
				out[names[i]] = uuids
			}
		}
		return out
	}
	all := slices.Concat(a.init, a.ctrs)
	switch n := len(a.entries); {
	case len(a.init) > 0 && n == len(all):
		return byPosition(all), true
	case n == len(a.ctrs):
		return byPosition(a.ctrs), true
	}
	var held []string
	for _, c := range all {
		if slices.Contains(holding, c) {
			held = append(held, c)
		}
	}
	var full [][]string
	for _, uuids := range a.entries {
		if len(uuids) > 0 {
			full = append(full, uuids)
		}
	}
	if len(held) == 0 || len(held) != len(full) {
		return nil, false
	}
	out := make(map[string][]string, len(held))
	for i, c := range held {
		out[c] = full[i]
	}
	return out, true
}

// AnnotatedGPUs returns the GPUs (UUIDs) each container of the pod was
// given by HAMi's or Volcano's scheduler, from the pod's allocation
// annotation; holding names the pod's containers the kubelet reports
// holding split devices ("GPU-<uuid>-<n>"). ok is false for a pod without
// the annotation, one whose annotation cannot be read, and one whose
// entries cannot be matched to its containers: the kubelet's ids are all
// there is then.
func (s *Store) AnnotatedGPUs(namespace, pod string, holding []string) (map[string][]string, bool) {
	s.mu.RLock()
	a := s.pods[podKey{namespace, pod}].info.vgpu
	s.mu.RUnlock()
	return a.containers(holding)
}

// AnnotatedGPUs is Store.AnnotatedGPUs over the fixed pods.
func (s *Static) AnnotatedGPUs(namespace, pod string, holding []string) (map[string][]string, bool) {
	return s.pods[podKey{namespace, pod}].vgpu.containers(holding)
}

// slimSpec keeps of a pod's spec its node and the container names kai.go
// and vgpu.go read: all of them, init containers too, for a pod with an
// allocation annotation; KAI's few otherwise.
func slimSpec(pod *apiPod) apiPodSpec {
	spec := apiPodSpec{NodeName: pod.Spec.NodeName, Containers: kaiContainers(pod)}
	if _, _, ok := vgpuAnnotation(pod.Annotations); ok {
		spec.Containers = namesOnly(pod.Spec.Containers)
		spec.InitContainers = namesOnly(pod.Spec.InitContainers)
	}
	return spec
}

func namesOnly(cs []apiContainer) []apiContainer {
	if len(cs) == 0 {
		return nil
	}
	out := make([]apiContainer, len(cs))
	for i := range cs {
		out[i] = apiContainer{Name: cs[i].Name}
	}
	return out
}
