//go:build cgo && linux

package dcgm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// inventoryMaxAge forces an inventory reload now and then, so that a GPU
// DCGM marked lost and later recovered comes back even if the list of
// supported GPUs never changed.
const inventoryMaxAge = 5 * time.Minute

// Fields read once per inventory load, as live data (no watch needed).
const (
	fieldDriverVersion = 1
	fieldName          = 50 // GPU model; the MIG profile on a GPU instance
	fieldUUID          = 54
	fieldMinorNumber   = 55
	fieldPCIBusID      = 57
	fieldFBTotal       = 250 // MiB
)

var attributeFields = []godcgm.Short{fieldDriverVersion, fieldName, fieldUUID, fieldMinorNumber, fieldPCIBusID, fieldFBTotal}

// inventory is a source.Inventory with the DCGM entity of each row and the
// fingerprint of the DCGM answers it was built from.
type inventory struct {
	inv         *source.Inventory
	refs        []entityRef
	fingerprint string
	// unwell are GPUs DCGM still lists but reports lost or inaccessible;
	// Read asks for their status to notice a recovery.
	unwell []uint
}

// topology is what Read checks on every collection to notice a change: the
// supported GPUs (after selection) and the MIG hierarchy.
type topology struct {
	gpus        []uint
	hierarchy   []godcgm.MigHierarchyInfo_v2
	fabric      *fabricTopology
	fingerprint string
}

func (s *Source) loadTopology(ctx context.Context) (topology, error) {
	ids, err := cgocall.Call(ctx, s.w, "GetSupportedDevices", godcgm.GetSupportedDevices)
	if err != nil {
		return topology{}, err
	}
	var t topology
	for _, id := range ids {
		if len(s.cfg.GPUs) == 0 || slices.Contains(s.cfg.GPUs, int(id)) {
			t.gpus = append(t.gpus, id)
		}
	}
	for _, want := range s.cfg.GPUs {
		if !slices.Contains(ids, uint(want)) {
			if s.first("missing-gpu-" + strconv.Itoa(want)) {
				s.log.Warn("selected GPU not present", "gpu", want)
			}
		}
	}
	h, err := cgocall.Call(ctx, s.w, "GetGPUInstanceHierarchy", godcgm.GetGPUInstanceHierarchy)
	if err != nil {
		var ce *cgocall.CallError
		if errors.As(err, &ce) {
			return topology{}, err
		}
		// Without the hierarchy the GPUs are still worth reading.
		if s.first("hierarchy") {
			s.log.Warn("dcgm MIG hierarchy unavailable; MIG instances not reported", "err", err)
		}
	} else {
		t.hierarchy = h.EntityList[:min(h.Count, uint(len(h.EntityList)))]
	}
	if t.fabric, err = s.loadFabric(ctx); err != nil {
		return topology{}, err
	}
	var b strings.Builder
	b.WriteString(t.fabric.fingerprint())
	for _, id := range t.gpus {
		fmt.Fprintf(&b, "g%d,", id)
	}
	for _, e := range t.hierarchy {
		fmt.Fprintf(&b, "e%d:%d<%d:%d/%d/%d/%d,", e.Entity.EntityGroupId, e.Entity.EntityId, e.Parent.EntityGroupId,
			e.Parent.EntityId, e.Info.NvmlInstanceId, e.Info.NvmlComputeInstanceId, e.Info.NvmlMigProfileId)
	}
	t.fingerprint = b.String()
	return t, nil
}

// checkInventory reloads the inventory when the GPUs or the MIG layout
// changed, a value reported a lost GPU, or the inventory is old, and
// re-creates the watches when the inventory changed.
func (s *Source) checkInventory(ctx context.Context) error {
	t, err := s.loadTopology(ctx)
	if err != nil {
		return err
	}
	if t.fingerprint == s.inv.fingerprint && !s.stale && s.now().Sub(s.invAt) < inventoryMaxAge {
		recovered, err := s.anyRecovered(ctx)
		if err != nil || !recovered {
			return err
		}
	}
	inv, err := s.buildInventory(ctx, t)
	if err != nil {
		return err
	}
	if s.setInventory(inv) {
		return s.applyWatches(ctx)
	}
	return nil
}

func (s *Source) loadInventory(ctx context.Context) (*inventory, error) {
	t, err := s.loadTopology(ctx)
	if err != nil {
		return nil, err
	}
	return s.buildInventory(ctx, t)
}

// buildInventory turns a topology into entities: GPUs that DCGM does not
// report as lost or inaccessible, then their MIG GPU instances.
func (s *Source) buildInventory(ctx context.Context, t topology) (*inventory, error) {
	var gpus, unwell []uint
	for _, id := range t.gpus {
		status, err := cgocall.Call(ctx, s.w, "GetGPUStatus", func() (godcgm.EntityStatus, error) {
			return godcgm.GetGPUStatus(id), nil
		})
		if err != nil {
			return nil, err
		}
		if !usable(status) {
			unwell = append(unwell, id)
			continue
		}
		gpus = append(gpus, id)
	}
	slices.Sort(gpus)

	var gis, cis []godcgm.MigHierarchyInfo_v2
	giKept := map[uint]bool{}
	for _, e := range t.hierarchy {
		if e.Entity.EntityGroupId == godcgm.FE_GPU_I && e.Parent.EntityGroupId == godcgm.FE_GPU &&
			slices.Contains(gpus, e.Parent.EntityId) {
			gis = append(gis, e)
			giKept[e.Entity.EntityId] = true
		}
	}
	for _, e := range t.hierarchy {
		if e.Entity.EntityGroupId == godcgm.FE_GPU_CI && e.Parent.EntityGroupId == godcgm.FE_GPU_I && giKept[e.Parent.EntityId] {
			cis = append(cis, e)
		}
	}
	slices.SortFunc(gis, func(a, b godcgm.MigHierarchyInfo_v2) int {
		return cmp.Or(cmp.Compare(a.Parent.EntityId, b.Parent.EntityId), cmp.Compare(a.Info.NvmlInstanceId, b.Info.NvmlInstanceId))
	})

	attrs, err := s.readAttributes(ctx, gpus, gis, cis)
	if err != nil {
		return nil, err
	}
	inv := &inventory{inv: &source.Inventory{}, fingerprint: t.fingerprint, unwell: unwell}
	byID := map[uint]source.Entity{}
	for _, id := range gpus {
		ref := entityRef{groupGPU, id}
		e := source.Entity{
			Kind:        source.GPU,
			GPU:         int(id),
			UUID:        attrs.str(ref, fieldUUID),
			Model:       attrs.str(ref, fieldName),
			PCIBusID:    attrs.str(ref, fieldPCIBusID),
			MemoryBytes: attrs.mib(ref, fieldFBTotal),
		}
		// The device node is nvidia<minor>; DCGM's GPU id is the usual minor
		// when the minor number is not reported.
		minor, ok := attrs.integer(ref, fieldMinorNumber)
		if !ok {
			minor = int64(id)
		}
		e.Device = "nvidia" + strconv.FormatInt(minor, 10)
		if inv.inv.DriverVersion == "" {
			inv.inv.DriverVersion = attrs.str(ref, fieldDriverVersion)
		}
		byID[id] = e
		inv.inv.Entities = append(inv.inv.Entities, e)
		inv.refs = append(inv.refs, ref)
	}
	for _, gi := range gis {
		parent := byID[gi.Parent.EntityId]
		ref := entityRef{groupGPUI, gi.Entity.EntityId}
		e := parent
		e.Kind = source.GPUInstance
		e.MemoryBytes = attrs.mib(ref, fieldFBTotal)
		e.GPUInstance = int(gi.Info.NvmlInstanceId)
		e.ComputeInstance = -1
		e.MIGProfile = attrs.str(ref, fieldName)
		// No MIGPlacementStart: DCGM's MIG hierarchy (dcgmMigEntityInfo_t:
		// GPU UUID, NVML GPU, instance and compute instance ids, profile
		// id, slice count) carries no placement, so dynamic-MIG DRA devices
		// stay unattributed under the DCGM source (docs/dra.md).
		devs := migDevices(attrs, e, gi, attrs.str(ref, fieldUUID), cis)
		if len(devs) <= 1 {
			// One MIG device: the instance answers to its UUID. Several:
			// each is listed with its own (issue 30), the row has none.
			e.MIGUUID = migUUID(attrs, ref, devs)
		}
		inv.inv.Entities = append(inv.inv.Entities, e)
		inv.inv.MIGDevices = append(inv.inv.MIGDevices, devs...)
		inv.refs = append(inv.refs, ref)
	}
	if err := s.appendFabric(ctx, inv, t.fabric); err != nil {
		return nil, err
	}
	return inv, nil
}

// usable reports whether DCGM can read a GPU in this state.
func usable(status godcgm.EntityStatus) bool {
	switch status {
	case godcgm.EntityStatusLost, godcgm.EntityStatusInaccessible, godcgm.EntityStatusUnsupported,
		godcgm.EntityStatusDisabled, godcgm.EntityStatusDetached:
		return false
	}
	return true
}

// anyRecovered asks DCGM for the status of the listed GPUs it reported
// unusable; none, and no call, in the usual case.
func (s *Source) anyRecovered(ctx context.Context) (bool, error) {
	for _, id := range s.inv.unwell {
		status, err := cgocall.Call(ctx, s.w, "GetGPUStatus", func() (godcgm.EntityStatus, error) {
			return godcgm.GetGPUStatus(id), nil
		})
		if err != nil || usable(status) {
			return err == nil, err
		}
	}
	return false, nil
}

// migUUID is the MIG device UUID of a GPU instance with at most one
// compute instance: DCGM's UUID field of the instance, or of its compute
// instance (the MIG device NVML names).
func migUUID(attrs attributes, gi entityRef, devs []source.MIGDevice) string {
	if u := attrs.str(gi, fieldUUID); strings.HasPrefix(u, "MIG-") {
		return u
	}
	if len(devs) == 1 {
		return devs[0].UUID
	}
	return ""
}

// migDevices lists the compute instances of GPU instance gi (entity e) as
// MIG devices, in compute instance order. DCGM lists each compute instance
// in dcgmGetGpuInstanceHierarchy as a DCGM_FE_GPU_CI entity whose parent
// is its DCGM_FE_GPU_I, with nvmlComputeInstanceId and nvmlProfileSlices,
// the compute instance's own slice count (dcgm_structs.h,
// dcgmMigEntityInfo_t); its UUID is DCGM_FI_DEV_UUID of that entity, or,
// for the only compute instance of a GPU instance, the GPU instance's
// (giUUID). A compute instance without a MIG UUID is left out: no pod can
// name it.
func migDevices(attrs attributes, e source.Entity, gi godcgm.MigHierarchyInfo_v2, giUUID string, cis []godcgm.MigHierarchyInfo_v2) []source.MIGDevice {
	var mine []godcgm.MigHierarchyInfo_v2
	for _, ci := range cis {
		if ci.Parent.EntityId == gi.Entity.EntityId {
			mine = append(mine, ci)
		}
	}
	var out []source.MIGDevice
	for _, ci := range mine {
		u := attrs.str(entityRef{groupGPUCI, ci.Entity.EntityId}, fieldUUID)
		if !strings.HasPrefix(u, "MIG-") && len(mine) == 1 {
			u = giUUID
		}
		if !strings.HasPrefix(u, "MIG-") {
			continue
		}
		out = append(out, source.MIGDevice{
			GPU: e.GPU, GPUInstance: e.GPUInstance, ComputeInstance: int(ci.Info.NvmlComputeInstanceId),
			Profile: source.ComputeInstanceProfile(e.MIGProfile, int(ci.Info.NvmlProfileSlices), int(gi.Info.NvmlProfileSlices)),
			UUID:    u,
		})
	}
	slices.SortFunc(out, func(a, b source.MIGDevice) int { return cmp.Compare(a.ComputeInstance, b.ComputeInstance) })
	return out
}

// attributes are live values of attributeFields by entity and field.
type attributes map[uint64]map[uint16]source.Value

func (a attributes) str(r entityRef, field uint16) string {
	v := a[r.key()][field]
	if v.Kind != source.String {
		return ""
	}
	return strings.TrimSpace(v.Str)
}

func (a attributes) integer(r entityRef, field uint16) (int64, bool) {
	v := a[r.key()][field]
	return v.Int, v.Kind == source.Int
}

func (a attributes) mib(r entityRef, field uint16) uint64 {
	if n, ok := a.integer(r, field); ok && n > 0 {
		return uint64(n) << 20
	}
	return 0
}

func (s *Source) readAttributes(ctx context.Context, gpus []uint, gis, cis []godcgm.MigHierarchyInfo_v2) (attributes, error) {
	pairs := make([]godcgm.GroupEntityPair, 0, len(gpus)+len(gis)+len(cis))
	for _, id := range gpus {
		pairs = append(pairs, godcgm.GroupEntityPair{EntityGroupId: godcgm.FE_GPU, EntityId: id})
	}
	for _, e := range gis {
		pairs = append(pairs, e.Entity)
	}
	for _, e := range cis {
		pairs = append(pairs, e.Entity)
	}
	attrs := attributes{}
	if len(pairs) == 0 {
		return attrs, nil
	}
	vals, err := cgocall.Call(ctx, s.w, "EntitiesGetLatestValues", func() ([]godcgm.FieldValue_v2, error) {
		return godcgm.EntitiesGetLatestValues(pairs, attributeFields, godcgm.DCGM_FV_FLAG_LIVE_DATA)
	})
	if err != nil {
		return nil, err
	}
	attrs.add(vals)
	return attrs, nil
}

// add files live values by entity and field.
func (attrs attributes) add(vals []godcgm.FieldValue_v2) {
	for i := range vals {
		v := &vals[i]
		ref := entityRef{uint(v.EntityGroupId), v.EntityID}
		m := attrs[ref.key()]
		if m == nil {
			m = map[uint16]source.Value{}
			attrs[ref.key()] = m
		}
		m[uint16(v.FieldID)] = translate(rawOf(v))
	}
}

// setInventory installs a freshly built inventory. It keeps the current
// *source.Inventory when nothing changed, so callers comparing pointers see
// no change, and records GPUs that left or came back. It reports whether
// the entities changed.
func (s *Source) setInventory(next *inventory) bool {
	now := s.now()
	s.invAt, s.stale = now, false
	prev := s.inv
	if prev != nil && prev.inv.DriverVersion == next.inv.DriverVersion && slices.Equal(prev.inv.Entities, next.inv.Entities) &&
		slices.Equal(prev.inv.MIGDevices, next.inv.MIGDevices) {
		prev.fingerprint, prev.refs, prev.unwell = next.fingerprint, next.refs, next.unwell
		return false
	}
	s.inv = next
	var before []source.Entity
	if prev != nil {
		before = prev.inv.Entities
	}
	s.lost.Update(before, next.inv.Entities, now, s.log)
	if prev != nil {
		s.log.Info("dcgm inventory changed", "gpus", next.inv.GPUs(), "entities", len(next.inv.Entities))
	}
	return true
}
