package collector

import (
	"cmp"
	"slices"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/hpcjobs"
	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Attribution gives the current pod-resources table. The same pointer is
// returned while the table is unchanged.
type Attribution interface {
	Table() *podresources.Table
}

// JobAttribution gives the current HPC job table (the job-mapping
// directory). The same pointer is returned while the table is unchanged.
type JobAttribution interface {
	Table() *hpcjobs.Table
}

// PodInfo looks up what the Kubernetes API knows of a pod. Version changes
// whenever a lookup could give a different answer.
type PodInfo interface {
	Lookup(namespace, pod string) (podlabels.Info, bool)
	Version() uint64
}

// FractionalHolders is what a PodInfo may also tell: the containers that
// use a GPU the kubelet reports a KAI Scheduler reservation pod holding
// (podlabels.Store.KAIWorkloads), nil for any other pod.
type FractionalHolders interface {
	KAIWorkloads(namespace, pod string) []podlabels.ContainerRef
}

// attributionKey identifies what the label sets were built from: the
// kubelet's table and the pod informer's version.
type attributionKey struct {
	table   *podresources.Table
	version uint64
	jobs    *hpcjobs.Table
}

// join attributes the entities of a sample to what holds them: containers
// (the kubelet's table, with what the pod informer knows of their pods)
// and HPC jobs (the job-mapping directory). Its result is cached until the
// inventory or an attribution table changes.
type join struct {
	pods    Attribution    // nil: no kubelet
	podInfo PodInfo        // nil: no pod UIDs or labels
	jobs    JobAttribution // nil: no HPC jobs
	m       *metrics

	inv      *source.Inventory
	key      attributionKey
	holdings []exposition.Holding
	version  uint64 // counts the times holdings were rebuilt
}

// snapshot reads the current attribution tables.
func (j *join) snapshot() attributionKey {
	var key attributionKey
	if j.pods != nil {
		key.table = j.pods.Table()
	}
	if j.jobs != nil {
		key.jobs = j.jobs.Table()
	}
	if j.podInfo != nil {
		key.version = j.podInfo.Version() // read before the lookups: a change during them shows next time
	}
	return key
}

// apply lists one holding per (entity, holding container or HPC job), or one
// holding for an entity nobody holds, and the version of that list (it
// changes whenever the list does). It is recomputed only when the
// inventory or an attribution table changed. all is the source's inventory
// before --collect.gpus: devices of GPUs left out are not unmatched.
func (j *join) apply(inv, all *source.Inventory, key attributionKey) ([]exposition.Holding, uint64) {
	if inv == j.inv && key == j.key && j.holdings != nil {
		return j.holdings, j.version
	}
	table := key.table
	var moves annotatedMoves
	if a, ok := j.podInfo.(AnnotatedHolders); ok && table != nil {
		moves = annotatedHolders(a, table, cmp.Or(all, inv))
	}
	holdings := make([]exposition.Holding, 0, len(inv.Entities))
	for i := range inv.Entities {
		hs := table.Holders(&inv.Entities[i])
		if views := inv.HeldAs(&inv.Entities[i]); len(views) > 0 {
			hs = holdersThrough(table, hs, views)
		}
		if f, ok := j.podInfo.(FractionalHolders); ok {
			hs = throughReservations(f, hs)
		}
		hs = moves.apply(&inv.Entities[i], hs)
		jobs := key.jobs.Jobs(&inv.Entities[i])
		holders := len(hs) + len(jobs)
		advertised := table.Replicas(&inv.Entities[i])
		if holders == 0 {
			holdings = append(holdings, exposition.Holding{Entity: i, DeviceReplicas: advertised})
			continue
		}
		for _, h := range hs {
			holdings = append(holdings, exposition.Holding{
				Entity:         i,
				Holder:         j.holder(h),
				Shared:         h.Shared || holders > 1, // a replica is shared even while it has one holder
				Replicas:       h.Replicas,
				DeviceReplicas: advertised,
			})
		}
		for _, job := range jobs {
			holdings = append(holdings, exposition.Holding{
				Entity:         i,
				Holder:         &exposition.Holder{HPCJob: job.ID, HPCUser: job.User, HPCPartition: job.Partition},
				Shared:         holders > 1,
				DeviceReplicas: advertised,
			})
		}
	}
	table.UnmatchedCounts(all.WithHeldAs()).ByReason(func(reason string, n int) {
		j.m.unmatched.WithLabelValues(reason).Set(float64(n))
	})
	j.m.jobsUnmatched.Set(float64(len(key.jobs.Unmatched(all))))
	j.inv, j.key, j.holdings = inv, key, holdings
	j.version++
	return holdings, j.version
}

// holdersThrough adds to hs the holders of a GPU instance split into
// several compute instances through each compute instance's MIG device
// (views, source.Inventory.HeldAs): a pod on any of them holds the
// instance's row. A container is listed once, shared if any of its
// holdings is, holding the replicas of all of them; the result is sorted
// as Table.Holders sorts.
func holdersThrough(table *podresources.Table, hs []podresources.Holder, views []source.Entity) []podresources.Holder {
	all := slices.Clone(hs)
	for i := range views {
		all = append(all, table.Holders(&views[i])...)
	}
	slices.SortStableFunc(all, func(a, b podresources.Holder) int {
		return cmp.Or(compareContainers(a, b), cmp.Compare(a.PodUID, b.PodUID), cmp.Compare(a.Resource, b.Resource))
	})
	out := all[:0]
	for _, h := range all {
		if n := len(out); n > 0 && out[n-1].Namespace == h.Namespace && out[n-1].Pod == h.Pod &&
			out[n-1].Container == h.Container && out[n-1].PodUID == h.PodUID {
			out[n-1].Shared = out[n-1].Shared || h.Shared
			out[n-1].Replicas += h.Replicas
			continue
		}
		out = append(out, h)
	}
	return out
}

// throughReservations replaces each KAI Scheduler reservation pod among
// hs by the fraction containers of its GPU group's pods on this node, each
// marked shared: they share the GPU by fractions whatever their number. A
// reservation pod with none of its group's pods known stays the holder, as
// the kubelet reports it. hs is returned unchanged when no holder is a
// reservation pod.
func throughReservations(f FractionalHolders, hs []podresources.Holder) []podresources.Holder {
	var out []podresources.Holder
	for i, h := range hs {
		refs := f.KAIWorkloads(h.Namespace, h.Pod)
		if len(refs) == 0 {
			if out != nil {
				out = append(out, h)
			}
			continue
		}
		if out == nil {
			out = append(make([]podresources.Holder, 0, len(hs)+len(refs)), hs[:i]...)
		}
		for _, r := range refs {
			out = append(out, podresources.Holder{Namespace: r.Namespace, Pod: r.Pod, Container: r.Container,
				Resource: h.Resource, Shared: true})
		}
	}
	if out == nil {
		return hs
	}
	return out
}

// holder converts a kubelet holder, adding what the pod informer knows.
func (j *join) holder(h podresources.Holder) *exposition.Holder {
	out := &exposition.Holder{Namespace: h.Namespace, Pod: h.Pod, Container: h.Container, VGPU: h.VGPU}
	if c := h.DRA; c.Name != "" {
		out.DRA = exposition.DRAClaim{Namespace: c.Namespace, Name: c.Name, Driver: c.Driver, Pool: c.Pool,
			Device: c.Device, ShareID: c.ShareID, MIGProfile: c.MIGProfile, MIGUUID: c.MIGUUID}
	}
	if j.podInfo == nil {
		return out
	}
	info, ok := j.podInfo.Lookup(h.Namespace, h.Pod)
	if !ok {
		return out
	}
	out.PodUID = info.UID
	w := info.Workload
	out.Workload = exposition.Workload{Kind: w.Kind, Name: w.Name, Queue: w.Queue, ClusterQueue: w.ClusterQueue}
	for _, l := range info.Labels {
		out.Labels = append(out.Labels, exposition.Label{Name: l.Name, Value: l.Value})
	}
	return out
}
