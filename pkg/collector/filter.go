package collector

import "github.com/gpu-exporter/gpu-exporter/pkg/source"

// gpuFilter keeps the entities of selected GPUs: the GPUs, their MIG
// instances and their links. NVSwitches and their ports are kept. It works on any source;
// the DCGM source is also told the selection so that it watches nothing
// else.
type gpuFilter struct {
	keep map[int]bool // nil: keep everything

	from *source.Inventory // inventory the cached selection was made from
	inv  *source.Inventory // the selection, the same pointer while from is
	rows []int             // source row of each kept entity
	row  []int             // per source row: kept row, or -1
}

func newGPUFilter(gpus []int) gpuFilter {
	if len(gpus) == 0 {
		return gpuFilter{}
	}
	keep := make(map[int]bool, len(gpus))
	for _, g := range gpus {
		keep[g] = true
	}
	return gpuFilter{keep: keep}
}

// apply returns s restricted to the selected GPUs.
func (f *gpuFilter) apply(s *source.Sample) *source.Sample {
	if f.keep == nil {
		return s
	}
	if s.Inventory != f.from {
		f.choose(s.Inventory)
	}
	n := len(s.Fields)
	out := &source.Sample{Time: s.Time, Inventory: f.inv, Fields: s.Fields, Values: make([]source.Value, len(f.rows)*n)}
	for i, r := range f.rows {
		copy(out.Values[i*n:(i+1)*n], s.Values[r*n:(r+1)*n])
	}
	if s.LinkStates != nil {
		out.LinkStates = make([]source.LinkState, len(f.rows))
		for i, r := range f.rows {
			out.LinkStates[i] = s.LinkState(r)
		}
	}
	for _, ev := range s.XIDs {
		if ev.Entity >= 0 && ev.Entity < len(f.row) && f.row[ev.Entity] >= 0 {
			ev.Entity = f.row[ev.Entity]
			out.XIDs = append(out.XIDs, ev)
		}
	}
	return out
}

func (f *gpuFilter) choose(inv *source.Inventory) {
	sel := &source.Inventory{DriverVersion: inv.DriverVersion}
	f.rows = f.rows[:0]
	f.row = make([]int, len(inv.Entities))
	for i := range inv.Entities {
		e := &inv.Entities[i]
		f.row[i] = -1
		if e.Kind != source.NVSwitch && e.Parent != source.NVSwitch && !f.keep[e.GPU] {
			continue
		}
		f.row[i] = len(sel.Entities)
		f.rows = append(f.rows, i)
		sel.Entities = append(sel.Entities, *e)
	}
	for _, d := range inv.MIGDevices {
		if f.keep[d.GPU] {
			sel.MIGDevices = append(sel.MIGDevices, d)
		}
	}
	f.from, f.inv = inv, sel
}

// unfiltered returns the source's inventory that inv was selected from, or
// inv itself.
func (f *gpuFilter) unfiltered(inv *source.Inventory) *source.Inventory {
	if f.keep != nil && inv == f.inv && f.from != nil {
		return f.from
	}
	return inv
}
