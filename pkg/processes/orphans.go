package processes

// Orphan GPU processes: processes that hold a GPU but belong to no running
// pod. Two kinds, told apart by their cgroup (ParseCgroup):
//
//   - OrphanPodGone: the cgroup names a pod (kubepods…/pod<uid>) that the
//     pod informer, synced, does not know at two collections in a row:
//     the pod was deleted while the process lives on (a leaked process, a
//     container the runtime failed to kill), or the pod runs under a UID
//     the API never had. One collection of grace covers a watch event
//     that lags the container's start.
//   - OrphanHost: the cgroup is outside every pod and the process has a
//     compute context (NVML lists it among the compute or MPS processes,
//     "CUDA application which have active context", nvml.h
//     nvmlDeviceGetComputeRunningProcesses / ...MPSComputeRunningProcesses)
//     and no graphics context: a CUDA program started on the node outside
//     Kubernetes. Host processes with a graphics context (a display server
//     such as Xorg, a desktop) are on the host on purpose and are not
//     orphans. Daemons that keep the driver loaded without a context
//     (nvidia-persistenced) are not listed by NVML at all: its listings
//     are of processes "with a compute context" / "with a graphics
//     context" (nvml.h).
//
// Orphans are told only with a pod informer (Config.Pods): without one a
// pod UID cannot be checked, and a node outside Kubernetes runs its
// workloads as host processes. The processes stay in the per-container
// rows as before (an unknown pod by pod_uid, the host in its aggregate);
// the orphan counts are beside them.

// OrphanKind is why a process is an orphan.
type OrphanKind uint8

// Orphan kinds, in the order of DeviceUsage.Orphans.
const (
	// OrphanPodGone is a process in the cgroup of a pod the API does not
	// know.
	OrphanPodGone OrphanKind = iota
	// OrphanHost is a compute process outside every pod.
	OrphanHost
	numOrphanKinds
)

// OrphanKinds lists the kinds, in order.
func OrphanKinds() []OrphanKind { return []OrphanKind{OrphanPodGone, OrphanHost} }

// String is the kind's reason label value.
func (k OrphanKind) String() string {
	if k == OrphanHost {
		return "host"
	}
	return "pod_gone"
}

// Orphans counts one kind of orphan process on one device.
type Orphans struct {
	Processes int
	// MemoryBytes is the device memory they use, where the driver tells
	// (a process whose memory is unknown adds 0).
	MemoryBytes uint64
}

// SyncedLookup is a PodLookup that can tell whether it has listed the
// node's pods yet (podlabels.Store). A PodLookup without the method is
// taken as always synced (the simulator knows its pods).
type SyncedLookup interface {
	Synced() bool
}

// orphanTracker remembers the pod UIDs found unknown at the previous
// collection.
type orphanTracker struct {
	prev, now map[string]struct{}
}

// begin starts a collection.
func (o *orphanTracker) begin() {
	if o.now == nil {
		o.prev, o.now = map[string]struct{}{}, map[string]struct{}{}
	}
	o.prev, o.now = o.now, o.prev
	clear(o.now)
}

// unknown records that podUID was unknown at this collection and reports
// whether it was at the previous one too.
func (o *orphanTracker) unknown(podUID string) bool {
	o.now[podUID] = struct{}{}
	_, before := o.prev[podUID]
	return before
}

// countsOrphans reports whether this collection can tell orphans.
func (a *Accountant) countsOrphans() bool {
	if a.cfg.Pods == nil {
		return false
	}
	if s, ok := a.cfg.Pods.(SyncedLookup); ok {
		return s.Synced()
	}
	return true
}

// orphanKind tells whether a resolved process is an orphan; who is its
// name (PodUID set when the API does not know its pod).
func (a *Accountant) orphanKind(p *Process, owner Owner, who Who) (OrphanKind, bool) {
	if p.Unlisted {
		return 0, false // exited after its samples: it holds nothing now
	}
	if owner.Host() {
		compute := p.Type&(Compute|MPS) != 0
		return OrphanHost, compute && p.Type&Graphics == 0
	}
	if who.PodUID == "" {
		return 0, false // the API knows the pod
	}
	return OrphanPodGone, a.orphans.unknown(owner.PodUID)
}
