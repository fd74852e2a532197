package dcgm

import (
	"slices"
	"strconv"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// DCGM entity groups (dcgm_fields.h DCGM_FE_*); a test checks them against
// go-dcgm's constants.
const (
	groupGPU    = 1
	groupSwitch = 3
	groupGPUI   = 4
	groupGPUCI  = 5
	groupLink   = 6
)

// linkID is the DCGM_FE_LINK entity id of link index of a GPU or switch
// (parent group groupGPU or groupSwitch): a dcgm_link_t (dcgm_structs.h,
// packed) holds the parent's group in bits 0-7, the index in bits 8-23 and
// the parent's id in bits 24-31, as go-dcgm's AddLinkEntityToGroup builds
// it.
func linkID(parentGroup uint, index int, parent uint) uint {
	return parentGroup&0xff | uint(index&0xffff)<<8 | (parent&0xff)<<24
}

// xidField is DCGM_FI_DEV_XID_ERRORS.
const xidField = 230

// maxFieldsPerGroup is DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP.
const maxFieldsPerGroup = 128

// entityRef names a DCGM entity: its entity group and id.
type entityRef struct {
	group uint
	id    uint
}

// key packs the reference into a map key.
func (r entityRef) key() uint64 { return uint64(r.group)<<32 | uint64(r.id) }

// watchSpec is one watch to set: an entity group and the fields to watch
// on it (at most maxFieldsPerGroup).
type watchSpec struct {
	entities []entityRef
	fieldIDs []uint16
	// profiling watches hold only profiling fields: if DCGM refuses them
	// they are dropped instead of failing the whole watch.
	profiling bool
	// fabric watches are updated every Config.FabricInterval: fabric
	// fields, and every field of links and switches.
	fabric bool
}

// readSpec is one latest-values call per collection: every entity of a
// level and every field of the set that applies to the level.
type readSpec struct {
	kind     source.EntityKind
	entities []entityRef
	rows     []int // inventory row of entities[i]
	fieldIDs []uint16
	cols     map[uint16]int // sample column of each field id
	// fabric reads (links, switches) are made every
	// Config.FabricInterval; the sample repeats their last values between.
	fabric bool
}

// dropNote says why a field is left out everywhere or on some GPUs.
type dropNote struct {
	field  fields.Field
	reason string
	gpus   []int // GPUs lacking the field; empty when dropped everywhere
}

// plan is what to watch and read for a field set on an inventory.
type plan struct {
	watches []watchSpec
	reads   []readSpec
	// gpus are the GPU entities, watched for XID events and health.
	gpus    []entityRef
	gpuRows map[uint]int // DCGM GPU id -> inventory row
	rows    map[uint64]int
	dropped []dropNote
	// provided counts the fields of the set some entity can carry.
	provided int
}

// profSupport maps a GPU id to the profiling field ids it supports.
type profSupport map[int]map[uint16]bool

// makePlan decides the watches and reads for set. refs[i] is the DCGM
// entity of inv.Entities[i]. Profiling fields are watched only on entities
// whose GPU supports them, grouping entities that support the same subset.
func makePlan(inv *source.Inventory, refs []entityRef, set []fields.Field, prof profSupport) plan {
	p := plan{gpuRows: map[uint]int{}, rows: make(map[uint64]int, len(refs))}
	byKind := map[source.EntityKind][]int{}
	for row, e := range inv.Entities {
		p.rows[refs[row].key()] = row
		byKind[e.Kind] = append(byKind[e.Kind], row)
		if e.Kind == source.GPU {
			p.gpus = append(p.gpus, refs[row])
			p.gpuRows[refs[row].id] = row
		}
	}
	// Switch ports are NVLink entities of their own population: they
	// carry the link-level fields DCGM keeps at DCGM_FE_LINK (no GPU
	// level), and GPU links the GPU fields DCGM also reports per link.
	ports := map[int]bool{}
	for row, e := range inv.Entities {
		if e.Kind == source.NVLink && e.Parent == source.NVSwitch {
			ports[row] = true
		}
	}
	const portKind = source.NVLink + 1 // a key of byKind only
	for row := range ports {
		byKind[source.NVLink] = slices.DeleteFunc(byKind[source.NVLink], func(r int) bool { return r == row })
		byKind[portKind] = append(byKind[portKind], row)
	}
	slices.Sort(byKind[portKind])
	levels := []struct {
		kind    source.EntityKind
		level   fields.Level
		carries func(f *fields.Field) bool
	}{
		{source.GPU, fields.LevelGPU, nil},
		{source.GPUInstance, fields.LevelGPUInstance, nil},
		{source.NVLink, fields.LevelNVLink, func(f *fields.Field) bool { return f.Levels.Has(fields.LevelGPU) && !f.Profiling }},
		{portKind, fields.LevelNVLink, func(f *fields.Field) bool { return !f.Levels.Has(fields.LevelGPU) }},
		{source.NVSwitch, fields.LevelNVSwitch, nil},
	}

	providedBy := make([]bool, len(set))
	lacking := make([]map[int]bool, len(set))
	for _, lv := range levels {
		rows := byKind[lv.kind]
		if len(rows) == 0 {
			continue
		}
		onFabric := lv.kind != source.GPU && lv.kind != source.GPUInstance
		rs := readSpec{kind: min(lv.kind, source.NVLink), cols: map[uint16]int{}, fabric: onFabric}
		for _, row := range rows {
			rs.entities = append(rs.entities, refs[row])
			rs.rows = append(rs.rows, row)
		}
		var plain, fabric []uint16
		profOf := make([][]uint16, len(rows)) // profiling fields per entity
		for col, f := range set {
			if !f.Levels.Has(lv.level) || lv.carries != nil && !lv.carries(&f) {
				continue
			}
			if !f.Profiling {
				if f.Fabric || onFabric {
					fabric = append(fabric, f.ID)
				} else {
					plain = append(plain, f.ID)
				}
				rs.fieldIDs = append(rs.fieldIDs, f.ID)
				rs.cols[f.ID] = col
				providedBy[col] = true
				continue
			}
			supported := false
			for i, row := range rows {
				gpu := inv.Entities[row].GPU
				if prof[gpu][f.ID] {
					profOf[i] = append(profOf[i], f.ID)
					supported = true
				} else {
					if lacking[col] == nil {
						lacking[col] = map[int]bool{}
					}
					lacking[col][gpu] = true
				}
			}
			if supported {
				rs.fieldIDs = append(rs.fieldIDs, f.ID)
				rs.cols[f.ID] = col
				providedBy[col] = true
			}
		}
		if len(rs.fieldIDs) > 0 {
			p.reads = append(p.reads, rs)
		}
		p.watches = append(p.watches, chunk(rs.entities, plain, false)...)
		for _, w := range chunk(rs.entities, fabric, false) {
			w.fabric = true
			p.watches = append(p.watches, w)
		}
		// Entities sharing a subset of profiling fields share a watch.
		var keys []string
		groups := map[string]*watchSpec{}
		for i, ids := range profOf {
			if len(ids) == 0 {
				continue
			}
			k := idsKey(ids)
			g, ok := groups[k]
			if !ok {
				g = &watchSpec{fieldIDs: ids}
				groups[k] = g
				keys = append(keys, k)
			}
			g.entities = append(g.entities, rs.entities[i])
		}
		for _, k := range keys {
			p.watches = append(p.watches, chunk(groups[k].entities, groups[k].fieldIDs, true)...)
		}
	}
	for col, f := range set {
		switch {
		case !providedBy[col] && !f.Levels.Has(fields.LevelGPU|fields.LevelGPUInstance):
			p.dropped = append(p.dropped, dropNote{field: f, reason: "no NVLink or NVSwitch entity of its level"})
		case !providedBy[col] && f.Profiling && len(lacking[col]) > 0:
			p.dropped = append(p.dropped, dropNote{field: f, reason: "profiling field not supported by any GPU"})
		case providedBy[col] && len(lacking[col]) > 0:
			gpus := make([]int, 0, len(lacking[col]))
			for g := range lacking[col] {
				gpus = append(gpus, g)
			}
			slices.Sort(gpus)
			p.dropped = append(p.dropped, dropNote{field: f, reason: "profiling field not supported by some GPUs", gpus: gpus})
		}
		if providedBy[col] {
			p.provided++
		}
	}
	return p
}

// chunk splits a watch into field groups DCGM accepts.
func chunk(entities []entityRef, ids []uint16, profiling bool) []watchSpec {
	var out []watchSpec
	for len(ids) > 0 {
		n := min(len(ids), maxFieldsPerGroup)
		out = append(out, watchSpec{entities: entities, fieldIDs: ids[:n:n], profiling: profiling})
		ids = ids[n:]
	}
	return out
}

func idsKey(ids []uint16) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(strconv.Itoa(int(id)))
		b.WriteByte(',')
	}
	return b.String()
}

// entitiesKey identifies a set of entities, to share one DCGM group
// between watches of the same entities.
func entitiesKey(refs []entityRef) string {
	var b strings.Builder
	for _, r := range refs {
		b.WriteString(strconv.FormatUint(r.key(), 16))
		b.WriteByte(',')
	}
	return b.String()
}
