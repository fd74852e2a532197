package collector

import (
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/rightsize"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// grEngineActiveFieldID is DCGM_FI_PROF_GR_ENGINE_ACTIVE (dcgm_fields.h),
// the one activity DCGM reports per MIG GPU instance.
const grEngineActiveFieldID = 1001

// migEnergy feeds processes.EnergySplitter.SplitMIG: for each GPU in MIG
// mode it finds the GPU's instances in the inventory, their compute slices
// and activity in the sample and their usage rows in the accountant's,
// and turns the GPU's idle energy into a device row of the GPU entity.
//
// Compute slices come from pkg/rightsize's table of MIG profiles: an
// instance's from its profile's name (the 3 of 3g.40gb, the inventory's
// MIGProfile), the GPU's from its model's largest profile (7g.80gb: 7).
// The inventory says nothing else of them; a GPU whose model the table
// does not know (the A30, with 4) is not split.
type migEnergy struct {
	inv  *source.Inventory // the inventory gpus were found in
	gpus []migGPU
	// at finds a collection's usage row by instance, and in is what
	// SplitMIG reads of one GPU; both reused.
	at map[deviceKey]int
	in []processes.MIGInstance
}

// migGPU is a GPU in MIG mode: its entity, its compute slices (0: not
// known) and its GPU instances.
type migGPU struct {
	entity    int
	uuid      string
	slices    int
	instances []migInstance
}

type migInstance struct{ entity, id, slices int }

// layout finds the GPUs in MIG mode of inv, once per inventory.
func (m *migEnergy) layout(inv *source.Inventory) {
	if inv == m.inv {
		return
	}
	m.inv, m.gpus = inv, nil
	gpuAt := map[string]int{} // GPU entity by UUID
	for i := range inv.Entities {
		if e := &inv.Entities[i]; e.Kind == source.GPU {
			gpuAt[e.UUID] = i
		}
	}
	index := map[string]int{} // m.gpus by UUID
	for i := range inv.Entities {
		e := &inv.Entities[i]
		if e.Kind != source.GPUInstance {
			continue
		}
		k, ok := index[e.UUID]
		if !ok {
			g, found := gpuAt[e.UUID]
			if !found {
				continue
			}
			slices, _ := rightsize.ComputeSlices(inv.Entities[g].Model)
			k = len(m.gpus)
			index[e.UUID] = k
			m.gpus = append(m.gpus, migGPU{entity: g, uuid: e.UUID, slices: slices})
		}
		slices, _ := rightsize.ProfileSlices(e.MIGProfile)
		m.gpus[k].instances = append(m.gpus[k].instances, migInstance{entity: i, id: e.GPUInstance, slices: slices})
	}
}

// split charges the window that ends now on every GPU in MIG mode of s to
// the containers of devs (the accountant's rows, whose instances' rows it
// sets), energy being s's column of the energy counter, and appends the
// GPUs' idle energy rows to devices.
func (m *migEnergy) split(e *processes.EnergySplitter, s *source.Sample, devs []processes.DeviceUsage, energy int, devices []exposition.DeviceAccounting) []exposition.DeviceAccounting {
	m.layout(s.Inventory)
	if len(m.gpus) == 0 {
		return devices
	}
	activity := -1
	for c := range s.Fields {
		if s.Fields[c].ID == grEngineActiveFieldID {
			activity = c
		}
	}
	if m.at == nil {
		m.at = map[deviceKey]int{}
	}
	clear(m.at)
	for i := range devs {
		if devs[i].GPUInstance >= 0 {
			m.at[deviceKey{devs[i].UUID, devs[i].GPUInstance}] = i
		}
	}
	n := len(s.Fields)
	for _, g := range m.gpus {
		m.in = m.in[:0]
		for _, in := range g.instances {
			mi := processes.MIGInstance{GPUInstance: in.id, Slices: in.slices}
			if k, ok := m.at[deviceKey{g.uuid, in.id}]; ok {
				mi.Device = &devs[k]
			}
			if activity >= 0 {
				v, ok := s.Values[in.entity*n+activity].Number()
				mi.Activity, mi.ActivityKnown = s.Fields[activity].Scaled(v), ok
			}
			m.in = append(m.in, mi)
		}
		mj, ok := s.Values[g.entity*n+energy].Number()
		idle, known := e.SplitMIG(g.uuid, g.slices, s.Fields[energy].Scaled(mj), ok, m.in)
		if known {
			devices = append(devices, exposition.DeviceAccounting{Entity: g.entity, IdleEnergyJoules: idle, EnergyKnown: true})
		}
	}
	return devices
}
