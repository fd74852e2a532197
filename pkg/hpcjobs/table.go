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
		slices.SortStableFunc(js, func(a, b Job) int {
			return cmp.Or(cmp.Compare(len(a.ID), len(b.ID)), strings.Compare(a.ID, b.ID)) // numeric order for decimal ids
		})
		if t.byKey == nil {
			t.byKey = map[Key][]Job{}
		}
		t.byKey[k] = js
	}
	return t
}

// Jobs returns the jobs holding entity e, sorted by id: for a GPU the jobs
// of its index's file, for a MIG instance those of its
// <GPU index>.<GPU instance id> file, as dcgm-exporter matches them. A
// GPU's NVLinks are held with the GPU, as the kubelet's table holds them
// (podresources.Table.Holders); an NVSwitch and its ports have no job. A
// whole-GPU file does not attribute the GPU's MIG instances, nor the
// reverse. The result is shared: do not modify it. Safe for concurrent use
// and on a nil *Table.
func (t *Table) Jobs(e *source.Entity) []Job {
	if t == nil || e == nil || len(t.byKey) == 0 {
		return nil
	}
	switch e.Kind {
	case source.GPU:
		return t.byKey[Key{GPU: e.GPU, Instance: -1}]
	case source.GPUInstance:
		return t.byKey[Key{GPU: e.GPU, Instance: e.GPUInstance}]
	case source.NVLink:
		if e.Parent == source.GPU {
			return t.byKey[Key{GPU: e.GPU, Instance: -1}]
		}
	}
	return nil
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

// Keys returns the GPUs and MIG instances that have jobs, sorted.
func (t *Table) Keys() []Key {
	keys := slices.Collect(maps.Keys(t.entries()))
	slices.SortFunc(keys, func(a, b Key) int { return cmp.Or(cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.Instance, b.Instance)) })
	return keys
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
			switch e := &inv.Entities[i]; e.Kind {
			case source.GPU:
				known[Key{GPU: e.GPU, Instance: -1}] = true
			case source.GPUInstance:
				known[Key{GPU: e.GPU, Instance: e.GPUInstance}] = true
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
