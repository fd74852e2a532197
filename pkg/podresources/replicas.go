package podresources

import (
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Replicas of shared GPUs (issue 36, share given versus used).
//
// NVIDIA's k8s-device-plugin shares a GPU (or MIG device) by advertising
// it as N devices, N being the "replicas" of its config's
// sharing.timeSlicing or sharing.mps resources: for each device to share it
// inserts ids NewAnnotatedID(id, i) = fmt.Sprintf("%s::%d", id, i) for i in
// 0..N-1 (internal/rm/device_map.go and internal/rm/devices.go,
// NVIDIA/k8s-device-plugin@1b826acc), id being the UUID or, with
// --device-id-strategy=index, the index. With renameByDefault the shared
// resource is named "<name>.shared" (DefaultSharedRename,
// api/config/v1/resources.go; "nvidia.com/gpu.shared"). A request for more
// than one replica fails unless failRequestsGreaterThanOne is false
// (resourceManager.ValidateRequest, internal/rm/rm.go; the MPS config
// defaults it to true, api/config/v1/config.go), so a container holds one
// replica, or m of them where the operator allowed it, and was given m/N
// of the device: nominally under time-slicing, which enforces nothing;
// under MPS the control daemon sets each client's default active thread
// percentage to 100/N and pinned memory limit to the memory / N
// (activeThreadPercentage, perDevicePinnedDeviceMemoryLimits in
// cmd/mps-control-daemon/mps/daemon.go there).
//
// The kubelet's GetAllocatableResources lists every healthy device of every
// resource, allocated or not (ManagerImpl.GetAllocatableDevices:
// allDevices filtered by healthyDevices, pkg/kubelet/cm/devicemanager/
// manager.go, kubernetes/kubernetes), so N is the number of replica ids of
// the device it lists. A replica copies its device's health (device_map.go
// above), so a GPU's replicas are listed all or none.

// ReplicaID reports whether id is one replica of a device NVIDIA's
// k8s-device-plugin shares: "<GPU or MIG UUID>::<n>" or "<index>::<n>".
// GKE's "/vgpuN" and HAMi's "-N" slots are not: the share a container
// holds there is not its number of ids.
func ReplicaID(id DeviceID) bool {
	switch id.Kind {
	case KindGPUUUID, KindMIGUUID, KindIndex:
		return id.Replica >= 0
	default:
		return false
	}
}

// WithAllocatable returns a table with t's allocations that also knows how
// many replicas each shared device is advertised as, from ids, the
// allocatable device ids of the configured resources (Client.Allocatable).
// A device is counted only from "::N" replica ids (ReplicaID), each
// distinct id once. A device whose replica id has a malformed suffix
// ("GPU-…::x") is left uncounted: a count missing one replica would
// overstate every holder's share. Ids that do not parse are kept for the
// client's log line (AllocatableMalformed). With no ids it returns t.
func (t *Table) WithAllocatable(ids []string, idType IDType) *Table {
	if len(ids) == 0 {
		return t
	}
	out := &Table{}
	if t != nil {
		*out = *t
	}
	counts := map[any]int{}
	poisoned := map[any]bool{}
	seen := make(map[string]bool, len(ids))
	for _, raw := range ids {
		if seen[raw] {
			continue
		}
		seen[raw] = true
		id, reason := parseDeviceID(raw, idType)
		if reason != "" {
			out.allocMalformed = append(out.allocMalformed, raw)
			if base, _, ok := strings.Cut(raw, "::"); ok {
				if bid, r := parseDeviceID(base, idType); r == "" {
					if k := indexKey(bid); k != nil {
						poisoned[k] = true
					}
				}
			}
			continue
		}
		if !ReplicaID(id) {
			continue
		}
		if k := indexKey(id); k != nil {
			counts[k]++
		}
	}
	for k := range poisoned {
		delete(counts, k)
	}
	out.replicas = counts
	return out
}

// Replicas returns how many replicas the kubelet's allocatable devices
// advertise entity e as (a GPU by its UUID or index, a MIG instance by its
// MIG UUID), 0 when e is not shared by replicas, the kubelet did not tell
// (no GetAllocatableResources) or a replica id of it was malformed.
// Nil-safe.
func (t *Table) Replicas(e *source.Entity) int {
	if t == nil || len(t.replicas) == 0 || e == nil {
		return 0
	}
	switch e.Kind {
	case source.GPU:
		if e.UUID != "" {
			if n := t.replicas[gpuUUIDKey(uuidKey(e.UUID))]; n > 0 {
				return n
			}
		}
		return t.replicas[gpuIndexKey(e.GPU)]
	case source.GPUInstance:
		if e.MIGUUID != "" {
			return t.replicas[migUUIDKey(uuidKey(e.MIGUUID))]
		}
	}
	return 0
}

// AllocatableMalformed returns the allocatable ids given to
// WithAllocatable that did not parse, in the order given. Nil-safe.
func (t *Table) AllocatableMalformed() []string { return t.allocationMalformed() }

func (t *Table) replicaCounts() map[any]int {
	if t == nil {
		return nil
	}
	return t.replicas
}

func (t *Table) allocationMalformed() []string {
	if t == nil {
		return nil
	}
	return t.allocMalformed
}
