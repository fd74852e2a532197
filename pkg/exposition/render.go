package exposition

import (
	"strconv"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Families the renderer adds besides the catalog fields.
const (
	infoName       = "gpu_info"
	infoHelp       = "Static facts about a GPU; always 1."
	migInfoName    = "gpu_mig_instance_info"
	migInfoHelp    = "Static facts about a MIG GPU instance; always 1."
	allocationName = "gpu_pod_allocation_info"
	allocationHelp = "A container holding a GPU or MIG instance, as the kubelet reports it; shared=\"true\" when several containers hold the same device. Always 1."
	xidName        = "gpu_xid_errors_total"
	xidHelp        = "XID errors reported by the driver since the exporter started, by XID code."
)

// page is the state of one Render call.
type page struct {
	owner   *Renderer
	text    []byte
	om      []byte
	series  int
	dropped int
	max     int
}

// family writes its header lazily, before its first kept series, so that
// an empty family (every value blank) leaves no trace on the page.
type family struct {
	name, help string
	typ        fields.Type
	started    bool
}

func (p *page) header(f *family) {
	h, ok := p.owner.headers[headerKey{f.name, f.typ}]
	if !ok {
		h = buildHeader(f)
		p.owner.headers[headerKey{f.name, f.typ}] = h
	}
	p.text = append(p.text, h.text...)
	p.om = append(p.om, h.om...)
	f.started = true
}

func buildHeader(f *family) header {
	var text, om []byte
	text = append(text, "# HELP "...)
	text = append(text, f.name...)
	text = append(text, ' ')
	text = appendHelp(text, f.help, false)
	text = append(text, "\n# TYPE "...)
	text = append(text, f.name...)
	text = append(text, ' ')
	text = append(text, f.typ.String()...)
	text = append(text, '\n')

	base := f.name
	if f.typ == fields.Counter && len(base) > len("_total") && base[len(base)-len("_total"):] == "_total" {
		base = base[:len(base)-len("_total")]
	}
	om = append(om, "# TYPE "...)
	om = append(om, base...)
	om = append(om, ' ')
	om = append(om, f.typ.String()...)
	om = append(om, "\n# HELP "...)
	om = append(om, base...)
	om = append(om, ' ')
	om = appendHelp(om, f.help, true)
	om = append(om, '\n')
	return header{text: text, om: om}
}

// line writes one series: name{labels[,extraName="extraValue"]} value.
func (p *page) line(f *family, labels []byte, extraName, extraValue string, v float64) {
	if p.max > 0 && p.series >= p.max {
		p.dropped++
		return
	}
	if !f.started {
		p.header(f)
	}
	start := len(p.text)
	p.text = append(p.text, f.name...)
	p.text = append(p.text, '{')
	p.text = append(p.text, labels...)
	if extraName != "" {
		p.text = appendLabel(p.text, len(labels) == 0, extraName, extraValue)
	}
	p.text = append(p.text, '}', ' ')
	p.text = appendFloat(p.text, v)
	p.text = append(p.text, '\n')
	p.om = append(p.om, p.text[start:]...)
	p.series++
}

// renderInfo writes gpu_info for every GPU and gpu_mig_instance_info for
// every MIG instance of the inventory, once each whatever the holders.
func (p *page) renderInfo(in Input) {
	inv := in.Sample.Inventory
	gpu := family{name: infoName, help: infoHelp, typ: fields.Gauge}
	mig := family{name: migInfoName, help: migInfoHelp, typ: fields.Gauge}
	var b []byte
	for i := range inv.Entities {
		e := &inv.Entities[i]
		if e.Kind != source.GPU {
			continue
		}
		b = appendLabel(b[:0], true, "gpu", strconv.Itoa(e.GPU))
		b = appendLabel(b, false, "uuid", e.UUID)
		b = appendLabel(b, false, "device", e.Device)
		b = appendLabel(b, false, "model", e.Model)
		b = appendLabel(b, false, "pci_bus_id", e.PCIBusID)
		b = appendLabel(b, false, "driver_version", inv.DriverVersion)
		p.line(&gpu, b, "", "", 1)
	}
	for i := range inv.Entities {
		e := &inv.Entities[i]
		if e.Kind != source.GPUInstance {
			continue
		}
		b = appendLabel(b[:0], true, "gpu", strconv.Itoa(e.GPU))
		b = appendLabel(b, false, "uuid", e.UUID)
		b = appendLabel(b, false, "gpu_instance", strconv.Itoa(e.GPUInstance))
		b = appendLabel(b, false, "mig_profile", e.MIGProfile)
		b = appendLabel(b, false, "mig_uuid", e.MIGUUID)
		p.line(&mig, b, "", "", 1)
	}
}

// renderField writes the family of sample column col: one series per target
// whose entity carries the field and has a value (blank values are left out).
func (p *page) renderField(in Input, col int) {
	s := in.Sample
	f := &s.Fields[col]
	fam := family{name: f.Name, help: f.Help, typ: f.Type}
	labels := p.owner.labels
	for i, t := range in.Targets {
		e := &s.Inventory.Entities[t.Entity]
		if !f.Levels.Has(e.Kind.Level()) {
			continue
		}
		v := s.At(t.Entity, col)
		x, ok := v.Number()
		if !ok {
			continue
		}
		if f.Kind == fields.Bitmask {
			mask := uint64(x)
			for _, r := range f.Reasons {
				active := 0.0
				if mask&r.Bit != 0 {
					active = 1
				}
				p.line(&fam, labels[i], "reason", r.Name, active)
			}
			continue
		}
		p.line(&fam, labels[i], "", "", f.Scaled(x))
	}
}

// renderAllocations writes gpu_pod_allocation_info for every held target.
func (p *page) renderAllocations(in Input) {
	fam := family{name: allocationName, help: allocationHelp, typ: fields.Gauge}
	for i, t := range in.Targets {
		if t.Holder == nil {
			continue
		}
		shared := "false"
		if t.Shared {
			shared = "true"
		}
		p.line(&fam, p.owner.labels[i], "shared", shared, 1)
	}
}

// renderXIDs writes gpu_xid_errors_total.
func (p *page) renderXIDs(in Input) {
	fam := family{name: xidName, help: xidHelp, typ: fields.Counter}
	var b []byte
	for _, x := range in.XIDs {
		b = entityLabels(b[:0], &in.Sample.Inventory.Entities[x.Entity], nil)
		p.line(&fam, b, "xid", strconv.FormatInt(x.XID, 10), float64(x.Count))
	}
}
