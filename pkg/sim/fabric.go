package sim

import (
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Limits of the fabric section: DCGM_NVLINK_MAX_LINKS_PER_GPU (36) and
// DCGM_MAX_NUM_SWITCHES (12), dcgm_structs.h.
const (
	maxLinksPerGPU = 36
	maxSwitches    = 12
)

// fabricDef is the scenario's NVLink fabric as written: every GPU has
// linksPerGPU links; GPU link l goes to NVSwitch l mod switches (HGX boards
// spread each GPU's links over all switches), and each switch numbers its
// ports in GPU, then link order.
type fabricDef struct {
	switches, linksPerGPU int
	linkFields            map[uint16]*template
	switchFields          map[uint16]*template
	portFields            map[uint16]*template
	links                 []linkDef
}

// linkDef overrides one GPU link: its own fields, and when it goes down.
type linkDef struct {
	gpu, link int
	fields    map[uint16]*template
	down      time.Duration
	goesDown  bool
}

// fabric parses the fabric section:
//
//	fabric:
//	  nvswitches: 4          # 0..12
//	  links_per_gpu: 18      # 1..36
//	  link_fields: {FIELD: SPEC}    # every GPU link
//	  switch_fields: {FIELD: SPEC}  # every NVSwitch
//	  port_fields: {FIELD: SPEC}    # every NVSwitch port
//	  links:                 # optional, per GPU link
//	    - {gpu: 3, link: 7, fields: {FIELD: SPEC}, down: 1m}   # link state down from 1m on
func (b *builder) fabric(n *yaml.Node, p string) error {
	d := b.d
	o, err := d.object(n, p, "nvswitches", "links_per_gpu", "link_fields", "switch_fields", "port_fields", "links")
	if err != nil {
		return err
	}
	if err := o.require("nvswitches", "links_per_gpu"); err != nil {
		return err
	}
	f := &fabricDef{}
	sw, err := o.integer("nvswitches", 0, maxSwitches)
	if err != nil {
		return err
	}
	lpg, err := o.integer("links_per_gpu", 1, maxLinksPerGPU)
	if err != nil {
		return err
	}
	f.switches, f.linksPerGPU = int(sw), int(lpg)
	for _, m := range []struct {
		key   string
		level fields.Level
		dst   *map[uint16]*template
	}{{"link_fields", fields.LevelNVLink, &f.linkFields}, {"switch_fields", fields.LevelNVSwitch, &f.switchFields}, {"port_fields", fields.LevelNVLink, &f.portFields}} {
		if v, vp := o.at(m.key); v != nil {
			if *m.dst, err = d.fieldMap(v, vp, m.level); err != nil {
				return err
			}
		}
	}
	if v, vp := o.at("links"); v != nil {
		items, err := d.list(v, vp)
		if err != nil {
			return err
		}
		seen := map[[2]int]string{}
		for i, item := range items {
			ip := indexPath(vp, i)
			lo, err := d.object(item, ip, "gpu", "link", "fields", "down")
			if err != nil {
				return err
			}
			if err := lo.require("gpu", "link"); err != nil {
				return err
			}
			var l linkDef
			if l.gpu, err = b.gpuRef(lo, "gpu"); err != nil {
				return err
			}
			link, err := lo.integer("link", 0, lpg-1)
			if err != nil {
				return err
			}
			l.link = int(link)
			if prev, dup := seen[[2]int{l.gpu, l.link}]; dup {
				return d.errf(lo.node, ip, "GPU %d link %d is also %s", l.gpu, l.link, prev)
			}
			seen[[2]int{l.gpu, l.link}] = ip
			if fv, fp := lo.at("fields"); fv != nil {
				if l.fields, err = d.fieldMap(fv, fp, fields.LevelNVLink); err != nil {
					return err
				}
			}
			if lo.has("down") {
				if l.down, err = lo.duration("down", false); err != nil {
					return err
				}
				l.goesDown = true
			}
			f.links = append(f.links, l)
		}
	}
	b.fab = f
	return nil
}

// fabricEntities lays out the fabric after the GPUs and MIG instances: the
// GPU links by GPU and link, then the NVSwitches, then their ports. It
// returns the entities, their specs, and the elapsed time each link goes
// down (by position in the returned slice; absent when it stays up).
func (b *builder) fabricEntities() ([]source.Entity, []map[uint16]*fieldSpec, map[int]time.Duration) {
	f := b.fab
	if f == nil {
		return nil, nil, nil
	}
	var ents []source.Entity
	var specs []map[uint16]*fieldSpec
	down := map[int]time.Duration{}
	type port struct{ gpu, link int }
	ports := make([][]port, f.switches)
	for _, g := range b.gpuList {
		for l := range f.linksPerGPU {
			e := g.entity
			e.Kind, e.Link = source.NVLink, l
			var own map[uint16]*template
			for _, ld := range f.links {
				if ld.gpu == e.GPU && ld.link == l {
					own = ld.fields
					if ld.goesDown {
						down[len(ents)] = ld.down
					}
				}
			}
			if f.switches > 0 {
				s := l % f.switches
				e.PeerType, e.Peer = source.PeerNVSwitch, strconv.Itoa(s)
				ports[s] = append(ports[s], port{e.GPU, l})
			}
			ents = append(ents, e)
			specs = append(specs, mergeFabric(uint64(e.GPU)<<16|1<<12|uint64(l), f.linkFields, own))
		}
	}
	for s := range f.switches {
		ents = append(ents, source.Entity{Kind: source.NVSwitch, GPU: -1, ID: s,
			UUID: switchUUID(b.scn.name, s), PCIBusID: switchBusID(s)})
		specs = append(specs, mergeFabric(1<<40|uint64(s)<<16, f.switchFields, nil))
	}
	for s := range f.switches {
		for k, pt := range ports[s] {
			e := source.Entity{Kind: source.NVLink, Parent: source.NVSwitch, GPU: -1, ID: s, Link: k,
				PeerType: source.PeerGPU, Peer: strconv.Itoa(pt.gpu)}
			for i := range ents {
				// A port is down while the GPU link it serves is.
				if ents[i].Kind == source.NVLink && ents[i].Parent == source.GPU && ents[i].GPU == pt.gpu && ents[i].Link == pt.link {
					if t, ok := down[i]; ok {
						down[len(ents)] = t
					}
				}
			}
			ents = append(ents, e)
			specs = append(specs, mergeFabric(1<<41|uint64(s)<<16|uint64(k), f.portFields, nil))
		}
	}
	return ents, specs, down
}

// mergeFabric instantiates a fabric entity's fields: defaults, overridden
// by its own.
func mergeFabric(salt uint64, defaults, own map[uint16]*template) map[uint16]*fieldSpec {
	specs := make(map[uint16]*fieldSpec, len(defaults)+len(own))
	for id, t := range defaults {
		specs[id] = t.instantiate(salt)
	}
	for id, t := range own {
		specs[id] = t.instantiate(salt)
	}
	return specs
}

// switchUUID and switchBusID derive an NVSwitch's ids from the scenario
// name and its id; the buses are those of an HGX H100 baseboard's four
// NVSwitches (0x05-0x08), then on.
func switchUUID(scenario string, id int) string {
	return derivedID("SWX-", scenario, "nvswitch", strconv.Itoa(id))
}

func switchBusID(id int) string { return fmt.Sprintf("%08X:%02X:00.0", 0, 0x05+id) }

// linkStates fills the state of every NVLink row of a segment at elapsed
// time t: up, or down from its down time on.
func (s *Scenario) linkStates(seg *segment, t time.Duration) []source.LinkState {
	if !s.hasLinks {
		return nil
	}
	out := make([]source.LinkState, len(seg.rows))
	for r, e := range seg.rows {
		if s.entities[e].Kind != source.NVLink {
			continue
		}
		out[r] = source.LinkUp
		if at, ok := s.linkDown[e]; ok && t >= at {
			out[r] = source.LinkDown
		}
	}
	return out
}
