package collector

import (
	"cmp"
	"slices"

	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// AnnotatedHolders is what a PodInfo may also tell: the GPUs HAMi's or
// Volcano's scheduler gave each container of a pod, from the pod's
// allocation annotation (podlabels.Store.AnnotatedGPUs); holding names the
// containers the kubelet reports holding split devices of the pod.
type AnnotatedHolders interface {
	AnnotatedGPUs(namespace, pod string, holding []string) (map[string][]string, bool)
}

// annotatedMoves is where the pods whose GPUs a vGPU scheduler chose hold
// their GPUs: the kubelet's ids ("GPU-<uuid>-<n>", podresources.KindGPUSplit)
// name the GPUs the kubelet counted, the device plugin gives the
// container the GPUs of the pod's annotation (docs/shared-gpus.md).
type annotatedMoves struct {
	// moved are the pods whose holdings the annotation replaces.
	moved map[podKey]bool
	// add are their containers' holdings, by GPU UUID.
	add map[string][]podresources.Holder
}

type podKey struct{ namespace, pod string }

// annotatedHolders reads, for each pod the kubelet reports holding
// replicas of whole GPUs, where its annotation puts its containers. A pod
// whose annotation names a GPU outside the inventory keeps the kubelet's
// holdings: the annotation is then not about this node's GPUs as the
// source sees them.
func annotatedHolders(a AnnotatedHolders, table *podresources.Table, all *source.Inventory) annotatedMoves {
	type held struct {
		containers []string
		first      map[string]podresources.Holder // the kubelet's holding of each container
	}
	pods := map[podKey]*held{}
	gpus := map[string]bool{}
	for i := range all.Entities {
		e := &all.Entities[i]
		if e.Kind != source.GPU {
			continue
		}
		gpus[e.UUID] = true
		for _, h := range table.Holders(e) {
			if h.VGPU == "" || h.DRA.Name != "" {
				continue
			}
			k := podKey{h.Namespace, h.Pod}
			p := pods[k]
			if p == nil {
				p = &held{first: map[string]podresources.Holder{}}
				pods[k] = p
			}
			if _, ok := p.first[h.Container]; !ok {
				p.first[h.Container] = h
				p.containers = append(p.containers, h.Container)
			}
		}
	}
	var m annotatedMoves
	for k, p := range pods {
		byContainer, ok := a.AnnotatedGPUs(k.namespace, k.pod, p.containers)
		if !ok || !covers(byContainer, p.first, gpus) {
			continue
		}
		if m.moved == nil {
			m.moved, m.add = map[podKey]bool{}, map[string][]podresources.Holder{}
		}
		m.moved[k] = true
		for c, uuids := range byContainer {
			h := p.first[c]
			for _, u := range slices.Compact(slices.Sorted(slices.Values(uuids))) {
				m.add[u] = append(m.add[u], podresources.Holder{Namespace: k.namespace, Pod: k.pod, Container: c,
					Resource: h.Resource, Shared: h.Shared, VGPU: h.VGPU})
			}
		}
	}
	return m
}

// compareContainers orders holders by namespace, pod and container, as
// Table.Holders lists them.
func compareContainers(a, b podresources.Holder) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.Container, b.Container))
}

// covers reports whether the annotation gives GPUs of the inventory to
// exactly the containers the kubelet reports holding split devices.
func covers(byContainer map[string][]string, kubelet map[string]podresources.Holder, gpus map[string]bool) bool {
	if len(byContainer) != len(kubelet) {
		return false
	}
	for c, uuids := range byContainer {
		if _, ok := kubelet[c]; !ok {
			return false
		}
		for _, u := range uuids {
			if !gpus[u] {
				return false
			}
		}
	}
	return true
}

// apply returns the holders of GPU e: hs, the kubelet's, without the
// moved pods', with those the annotations give it. hs is returned
// unchanged when no pod moved.
func (m annotatedMoves) apply(e *source.Entity, hs []podresources.Holder) []podresources.Holder {
	if m.moved == nil || e.Kind != source.GPU {
		return hs
	}
	add := m.add[e.UUID]
	out := make([]podresources.Holder, 0, len(hs)+len(add))
	for _, h := range hs {
		if !m.moved[podKey{h.Namespace, h.Pod}] {
			out = append(out, h)
		}
	}
	out = append(out, add...)
	slices.SortStableFunc(out, compareContainers)
	return out
}
