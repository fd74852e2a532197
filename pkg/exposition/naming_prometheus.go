package exposition

import (
	"sort"
	"strconv"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// prometheusScheme is Prometheus naming: gpu_* names in base units, one 0/1
// series per bitmask reason, info families for static facts, XID counters
// since start, lost GPUs and health incidents.
type prometheusScheme struct {
	// xids counts XID codes per GPU (by UUID, so that counts follow a GPU
	// across inventory changes) since the exporter started.
	xids map[xidKey]xidState
}

// xidState counts one XID code on one GPU and remembers when it was last
// seen.
type xidState struct {
	count uint64
	last  time.Time
}

type xidKey struct {
	uuid string
	xid  int64
}

func newPrometheusScheme() *prometheusScheme {
	return &prometheusScheme{xids: map[xidKey]xidState{}}
}

// watchSet watches the counters' fields alone: label fields and window
// counters are dcgm naming's.
func (*prometheusScheme) watchSet(k Counters) ([]fields.Field, int) {
	return append([]fields.Field(nil), k.Fields...), 0
}

func (*prometheusScheme) wantsHealth() bool { return true }

func (*prometheusScheme) wantsP2P() bool { return false }

func (*prometheusScheme) labelFields() bool { return false }

// derive counts the sample's XID events and lists the counters of the
// current inventory's GPUs.
func (n *prometheusScheme) derive(in *Input, _ Counters) {
	n.countXIDs(in.Sample)
	in.XIDs = n.xidCounts(in.Sample.Inventory)
}

func (n *prometheusScheme) countXIDs(s *source.Sample) {
	for _, ev := range s.XIDs {
		if ev.Entity < 0 || ev.Entity >= len(s.Inventory.Entities) {
			continue
		}
		k := xidKey{s.Inventory.Entities[ev.Entity].UUID, ev.XID}
		st := n.xids[k]
		st.count++
		seen := ev.Time
		if seen.IsZero() {
			seen = s.Time
		}
		if seen.After(st.last) {
			st.last = seen
		}
		n.xids[k] = st
	}
}

// xidCounts maps the XID counters onto the current inventory's GPUs.
func (n *prometheusScheme) xidCounts(inv *source.Inventory) []XIDCount {
	if len(n.xids) == 0 {
		return nil
	}
	var out []XIDCount
	for i := range inv.Entities {
		e := &inv.Entities[i]
		if e.Kind != source.GPU {
			continue
		}
		for k, st := range n.xids {
			if k.uuid == e.UUID {
				out = append(out, XIDCount{Entity: i, XID: k.xid, Count: st.count, LastSeen: st.last})
			}
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Entity != out[b].Entity {
			return out[a].Entity < out[b].Entity
		}
		return out[a].XID < out[b].XID
	})
	return out
}

// label writes the entity's labels, then the holder's.
func (*prometheusScheme) label(s *source.Sample, t Holding, _ []int) holdingLabels {
	b := entityLabels(nil, &s.Inventory.Entities[t.Entity], t.Holder)
	return holdingLabels{b: b, window: len(b), attr: len(b)}
}

// column scales a value to base units, or splits a bitmask into reasons.
func (*prometheusScheme) column(f *fields.Field, col int) column {
	c := column{col: col, fam: family{name: f.Name, help: f.Help, typ: f.Type}, mode: modeScaled}
	if f.Kind == fields.Bitmask {
		c.mode = modeReasons
		for _, reason := range f.Reasons {
			c.reasons = append(c.reasons, appendLabel(nil, false, "reason", reason.Name))
		}
	}
	return c
}

// prometheusHead and prometheusTail are the families Prometheus naming
// writes before and after the catalog's fields, in page order.
var (
	prometheusHead = []*Family{&gpuInfoFamily, &migInstanceInfoFamily, &migDeviceInfoFamily,
		&nvswitchInfoFamily, &nvlinkUpFamily, &nvlinkPeerFamily}
	prometheusTail = []*Family{&allocationFamily, &workloadFamily, &sharedReplicasFamily, &containerReplicasFamily,
		&draClaimFamily, &xidErrorsFamily, &xidLastSeenFamily,
		&lostFamily, &healthFamily,
		&containerUtilizationFamily, &containerMemoryFamily, &containerProcessesFamily,
		&containerMemoryLimitFamily, &containerSMLimitFamily,
		&processUtilizationFamily, &processMemoryFamily,
		&containerEnergyFamily, &idleEnergyFamily, &orphanProcessesFamily, &orphanMemoryFamily}
)

// render writes the info and fabric families, the fields, the
// allocations, the XID counters, the health and the process accounting
// families.
func (*prometheusScheme) render(p *pageWriter, in Input) {
	p.renderFamilies(in, prometheusHead)
	p.renderFields(in)
	p.renderFamilies(in, prometheusTail)
}

// gpuInfoFamily is gpu_info: every GPU of the inventory, once whatever
// the holders.
var gpuInfoFamily = Family{
	Name: "gpu_info", Type: fields.Gauge, Naming: NamingPrometheus,
	Help:   "Static facts about a GPU; always 1.",
	Labels: []string{"gpu", "uuid", "device", "model", "pci_bus_id", "driver_version"},
	render: func(p *pageWriter, in Input, f family) {
		inv := in.Sample.Inventory
		b := p.buf[:0]
		for i := range inv.Entities {
			e := &inv.Entities[i]
			if e.Kind != source.GPU {
				continue
			}
			b = entityLabels(b[:0], e, nil)
			b = appendLabel(b, false, "pci_bus_id", e.PCIBusID)
			b = appendLabel(b, false, "driver_version", inv.DriverVersion)
			p.line(&f, b, "", "", 1)
		}
		p.buf = b
	},
}

// migInstanceInfoFamily is gpu_mig_instance_info: every MIG instance of
// the inventory.
var migInstanceInfoFamily = Family{
	Name: "gpu_mig_instance_info", Type: fields.Gauge, Naming: NamingPrometheus,
	Help:     "Static facts about a MIG GPU instance; always 1. mig_uuid is left out for an instance split into several compute instances: gpu_mig_device_info names each.",
	Labels:   []string{"gpu", "uuid", "device", "model", "gpu_instance", "mig_profile", "mig_uuid"},
	Optional: []string{"mig_uuid"},
	render: func(p *pageWriter, in Input, f family) {
		inv := in.Sample.Inventory
		b := p.buf[:0]
		for i := range inv.Entities {
			e := &inv.Entities[i]
			if e.Kind != source.GPUInstance {
				continue
			}
			b = entityLabels(b[:0], e, nil) // gpu … model, gpu_instance, mig_profile
			if e.MIGUUID != "" {
				b = appendLabel(b, false, "mig_uuid", e.MIGUUID)
			}
			p.line(&f, b, "", "", 1)
		}
		p.buf = b
	},
}

// migDeviceInfoFamily is gpu_mig_device_info: every MIG device (compute
// instance) of the inventory.
var migDeviceInfoFamily = Family{
	Name: "gpu_mig_device_info", Type: fields.Gauge, Naming: NamingPrometheus,
	Help:   "A MIG device (a compute instance of a MIG GPU instance, with its own UUID, as nvidia-smi -L lists it and the device plugin hands it to pods); always 1. Its telemetry and holders are its GPU instance's series.",
	Labels: []string{"gpu", "uuid", "device", "model", "gpu_instance", "mig_profile", "compute_instance", "compute_profile", "mig_uuid"},
	render: func(p *pageWriter, in Input, f family) {
		inv := in.Sample.Inventory
		if len(inv.MIGDevices) == 0 {
			return
		}
		b := p.buf[:0]
		for i := range inv.Entities {
			e := &inv.Entities[i]
			for _, d := range inv.MIGDevicesOf(e) {
				b = entityLabels(b[:0], e, nil)
				b = appendLabel(b, false, "compute_instance", strconv.Itoa(d.ComputeInstance))
				b = appendLabel(b, false, "compute_profile", d.Profile)
				b = appendLabel(b, false, "mig_uuid", d.UUID)
				p.line(&f, b, "", "", 1)
			}
		}
		p.buf = b
	},
}

// allocationFamily is gpu_pod_allocation_info: every held GPU and MIG
// instance.
var allocationFamily = Family{
	Name: "gpu_pod_allocation_info", Type: fields.Gauge, Naming: NamingPrometheus,
	Help:   "A holder of a GPU or MIG instance: a container, as the kubelet reports it, or an HPC job, as the job-mapping directory lists it; shared=\"true\" when several hold the same device. Always 1.",
	Labels: []string{EntityLabels, HolderLabels, "shared"},
	render: func(p *pageWriter, in Input, f family) {
		for i, t := range in.Holdings {
			// A GPU's links are held with it, but allocations are of GPUs and
			// MIG instances: one series each.
			if k := in.Sample.Inventory.Entities[t.Entity].Kind; t.Holder == nil || k != source.GPU && k != source.GPUInstance {
				continue
			}
			shared := "false"
			if t.Shared {
				shared = "true"
			}
			p.line(&f, p.owner.labels[i].b, "shared", shared, 1)
		}
	},
}

// xidErrorsFamily is gpu_xid_errors_total: Input.XIDs.
var xidErrorsFamily = Family{
	Name: "gpu_xid_errors_total", Type: fields.Counter, Naming: NamingPrometheus,
	Help:   "XID errors reported by the driver since the exporter started, by XID code.",
	Labels: []string{EntityLabels, "xid"},
	render: func(p *pageWriter, in Input, f family) {
		for i, l := range p.xidLabels(in) {
			x := &in.XIDs[i]
			p.line(&f, l, "xid", strconv.FormatInt(x.XID, 10), float64(x.Count))
		}
	},
}

// xidLastSeenFamily is gpu_xid_last_seen_timestamp_seconds: Input.XIDs.
var xidLastSeenFamily = Family{
	Name: "gpu_xid_last_seen_timestamp_seconds", Type: fields.Gauge, Naming: NamingPrometheus,
	Help:   "Unix time the driver last reported an XID error of this code for the GPU.",
	Labels: []string{EntityLabels, "xid"},
	render: func(p *pageWriter, in Input, f family) {
		for i, l := range p.xidLabels(in) {
			x := &in.XIDs[i]
			p.line(&f, l, "xid", strconv.FormatInt(x.XID, 10), float64(x.LastSeen.UnixNano())/1e9)
		}
	},
}

// xidLabels returns the entity labels of each of in.XIDs, built once per
// page for the two XID families.
func (p *pageWriter) xidLabels(in Input) [][]byte {
	if p.xids == nil && len(in.XIDs) > 0 {
		p.xids = make([][]byte, len(in.XIDs))
		for i, x := range in.XIDs {
			p.xids[i] = entityLabels(nil, &in.Sample.Inventory.Entities[x.Entity], nil)
		}
	}
	return p.xids
}

// lostFamily is gpu_lost_since_timestamp_seconds: the GPUs that left the
// inventory (Input.Lost).
var lostFamily = Family{
	Name: "gpu_lost_since_timestamp_seconds", Type: fields.Gauge, Naming: NamingPrometheus,
	Help:   "A GPU that was in the inventory and is gone (fell off the bus, marked lost or inaccessible): Unix time it left. Absent while every GPU is present.",
	Labels: []string{"gpu", "uuid"},
	render: func(p *pageWriter, in Input, f family) {
		b := p.buf[:0]
		for _, g := range in.Lost {
			b = appendLabel(b[:0], true, "gpu", strconv.Itoa(g.GPU))
			b = appendLabel(b, false, "uuid", g.UUID)
			p.line(&f, b, "", "", float64(g.Since.UnixNano())/1e9)
		}
		p.buf = b
	},
}

// healthFamily is gpu_health_status: each failing incident of the
// source's health watches (Input.Health).
var healthFamily = Family{
	Name: "gpu_health_status", Type: fields.Gauge, Naming: NamingPrometheus,
	Help:   "A failing health watch of the GPU's source, by subsystem: 1 warning, 2 failure. Absent while the subsystem passes.",
	Labels: []string{"gpu", "uuid", "subsystem"},
	render: func(p *pageWriter, in Input, f family) {
		b := p.buf[:0]
		for _, h := range in.Health {
			if h.Status == source.HealthPass {
				continue
			}
			b = appendLabel(b[:0], true, "gpu", strconv.Itoa(h.GPU))
			b = appendLabel(b, false, "uuid", h.UUID)
			p.line(&f, b, "subsystem", h.Subsystem, float64(h.Status))
		}
		p.buf = b
	},
}
