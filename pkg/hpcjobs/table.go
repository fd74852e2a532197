package hpcjobs

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Table is an immutable snapshot of which jobs hold which GPUs and MIG
// instances. The zero Table and a nil *Table hold nothing.
type Table struct {
	byKey map[Key][]Job // jobs sorted by ID
}

// NewTable builds a table from the jobs of each mapping file. Jobs are
// sorted by id; the input is not kept.
func NewTable(files map[Key][]Job) *Table {
	t := &Table{}
	for k, jobs := range files {
		if len(jobs) == 0 {
			continue
		}
		js := slices.Clone(jobs)
		slices.SortStableFunc(js, compareJobs)
		if t.byKey == nil {
			t.byKey = map[Key][]Job{}
		}
		t.byKey[k] = js
	}
	return t
}

// Jobs returns the jobs holding entity e, sorted by id: for a GPU the jobs
// of its index's file, for a MIG instance those of its
// <GPU index>.<GPU instance id> file, as dcgm-exporter matches them, and
// those of the files naming it by device minor number
// ("nvidia<minor>[.<gpu instance>]", from the entity's Device) or, for a
// MIG instance, by MIG UUID. A GPU's NVLinks are held with the GPU, as the
// kubelet's table holds them (podresources.Table.Holders); an NVSwitch and
// its ports have no job. A whole-GPU file does not attribute the GPU's MIG
// instances, nor the reverse. The result is shared: do not modify it.
// Safe for concurrent use and on a nil *Table.
func (t *Table) Jobs(e *source.Entity) []Job {
	if t == nil || e == nil || len(t.byKey) == 0 {
		return nil
	}
	if e.Kind == source.NVLink && e.Parent != source.GPU {
		return nil
	}
	var found [3][]Job
	n := 0
	for _, k := range entityKeys(e) {
		if jobs := t.byKey[k]; len(jobs) > 0 {
			found[n] = jobs
			n++
		}
	}
	switch n {
	case 0:
		return nil
	case 1:
		return found[0]
	}
	// Two files name one GPU (an index file and a device-name file): each
	// job once, sorted as NewTable sorts.
	var all []Job
	seen := map[string]bool{}
	for _, jobs := range found[:n] {
		for _, j := range jobs {
			if !seen[j.ID] {
				seen[j.ID] = true
				all = append(all, j)
			}
		}
	}
	slices.SortStableFunc(all, compareJobs)
	return all
}

// entityKeys are the keys of the files that name e: by index, by minor
// number, and for a MIG instance by MIG UUID. An NVLink answers to its
// GPU's keys.
func entityKeys(e *source.Entity) []Key {
	minor, hasMinor := deviceMinor(e.Device)
	var keys []Key
	switch e.Kind {
	case source.GPU, source.NVLink:
		keys = append(keys, Key{GPU: e.GPU, Instance: -1})
		if hasMinor {
			keys = append(keys, Key{GPU: minor, Instance: -1, Minor: true})
		}
	case source.GPUInstance:
		keys = append(keys, Key{GPU: e.GPU, Instance: e.GPUInstance})
		if hasMinor {
			keys = append(keys, Key{GPU: minor, Instance: e.GPUInstance, Minor: true})
		}
		if e.MIGUUID != "" {
			keys = append(keys, Key{GPU: -1, Instance: -1, MIGUUID: migUUIDKey(e.MIGUUID)})
		}
	}
	return keys
}

// deviceMinor parses a device node name "nvidia<minor>".
func deviceMinor(device string) (int, bool) {
	s, ok := strings.CutPrefix(device, "nvidia")
	if !ok {
		return 0, false
	}
	k, ok := parseIndexName(s)
	if !ok || k.Instance >= 0 {
		return 0, false
	}
	return k.GPU, true
}

func compareJobs(a, b Job) int {
	return cmp.Or(cmp.Compare(len(a.ID), len(b.ID)), strings.Compare(a.ID, b.ID)) // numeric order for decimal ids
}

// Equal reports whether two tables hold the same jobs on the same GPUs.
func (t *Table) Equal(o *Table) bool {
	return maps.EqualFunc(t.entries(), o.entries(), slices.Equal[[]Job])
}

func (t *Table) entries() map[Key][]Job {
	if t == nil {
		return nil
	}
	return t.byKey
}

// JobCount is the number of distinct job ids in the table.
func (t *Table) JobCount() int {
	ids := map[string]bool{}
	for _, jobs := range t.entries() {
		for _, j := range jobs {
			ids[j.ID] = true
		}
	}
	return len(ids)
}

// Keys returns the GPUs and MIG instances that have jobs, sorted: index
// files, then device-name files, then MIG UUID files.
func (t *Table) Keys() []Key {
	keys := slices.Collect(maps.Keys(t.entries()))
	slices.SortFunc(keys, func(a, b Key) int {
		return cmp.Or(strings.Compare(a.MIGUUID, b.MIGUUID), cmpBool(a.Minor, b.Minor),
			cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.Instance, b.Instance))
	})
	return keys
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}

// Unmatched returns the keys with jobs that no entity of inv answers to
// (a GPU index the node does not have, a MIG instance that does not
// exist), sorted: usually a prolog numbering GPUs differently from NVML.
// Nil-safe on t and inv.
func (t *Table) Unmatched(inv *source.Inventory) []Key {
	if len(t.entries()) == 0 {
		return nil
	}
	known := map[Key]bool{}
	if inv != nil {
		for i := range inv.Entities {
			if e := &inv.Entities[i]; e.Kind == source.GPU || e.Kind == source.GPUInstance {
				for _, k := range entityKeys(e) {
					known[k] = true
				}
			}
		}
	}
	var out []Key
	for _, k := range t.Keys() {
		if !known[k] {
			out = append(out, k)
		}
	}
	return out
}
