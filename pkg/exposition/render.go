package exposition

import (
	"strconv"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// windowSizeLabel carries the window of dcgm-exporter's window counters.
const windowSizeLabel = "window_size_in_ms"

// pageWriter is the state of one Render call: it writes the series of
// one page into its text and OpenMetrics bodies.
type pageWriter struct {
	owner   *Renderer
	text    []byte
	om      []byte
	nseries int
	dropped int
	max     int
	// scratch buffers for one series
	extra, value []byte
	// the formats rendered (Options.RenderOnDemand); when one is left out,
	// heads records where each family header sits in the other.
	wantText, wantOM bool
	heads            []headAt
}

// headAt is a family header at an offset of the one body rendered.
type headAt struct {
	at int
	h  header
}

// family writes its header lazily, before its first kept series, so that
// an empty family (every value blank) leaves no trace on the page.
type family struct {
	name, help string
	typ        fields.Type
	started    bool
}

func (p *pageWriter) header(f *family) {
	k := headerKey{f.name, f.help, f.typ}
	h, ok := p.owner.headers[k]
	if !ok {
		h = buildHeader(f)
		p.owner.headers[k] = h
	}
	switch {
	case p.wantText && p.wantOM:
	case p.wantText:
		p.heads = append(p.heads, headAt{at: len(p.text), h: h})
	default:
		p.heads = append(p.heads, headAt{at: len(p.om), h: h})
	}
	if p.wantText {
		p.text = append(p.text, h.text...)
	}
	if p.wantOM {
		p.om = append(p.om, h.om...)
	}
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

	base, omType := f.name, f.typ.String()
	if f.typ == fields.Counter {
		if strings.HasSuffix(base, "_total") && len(base) > len("_total") {
			base = base[:len(base)-len("_total")]
		} else {
			// OpenMetrics requires _total on counter samples; a counter named
			// without it (dcgm naming) keeps its name as an unknown-typed
			// family rather than being renamed.
			omType = "unknown"
		}
	}
	om = append(om, "# TYPE "...)
	om = append(om, base...)
	om = append(om, ' ')
	om = append(om, omType...)
	om = append(om, "\n# HELP "...)
	om = append(om, base...)
	om = append(om, ' ')
	om = appendHelp(om, f.help, true)
	om = append(om, '\n')
	return header{text: text, om: om}
}

// line writes one series: name{labels[,extraName="extraValue"]} v.
func (p *pageWriter) line(f *family, labels []byte, extraName, extraValue string, v float64) {
	p.extra = p.extra[:0]
	if extraName != "" {
		p.extra = appendLabel(p.extra, len(labels) == 0, extraName, extraValue)
	}
	p.value = appendFloat(p.value[:0], v)
	p.series(f, labels, len(labels), p.extra, p.value)
}

// series writes name{labels[:cut] extra labels[cut:]} value. extra holds
// whole label pairs, with a leading comma unless it comes first.
func (p *pageWriter) series(f *family, labels []byte, cut int, extra, value []byte) {
	if p.max > 0 && p.nseries >= p.max {
		p.dropped++
		return
	}
	if !f.started {
		p.header(f)
	}
	// A series line is the same in both formats: write it into the first
	// body rendered, copy it into the other.
	b := p.text
	if !p.wantText {
		b = p.om
	}
	start := len(b)
	b = append(b, f.name...)
	b = append(b, '{')
	b = append(b, labels[:cut]...)
	b = append(b, extra...)
	b = append(b, labels[cut:]...)
	b = append(b, '}', ' ')
	b = append(b, value...)
	b = append(b, '\n')
	if p.wantText {
		p.text = b
		if p.wantOM {
			p.om = append(p.om, b[start:]...)
		}
	} else {
		p.om = b
	}
	p.nseries++
}

// renderField writes the family of one sample column: one series per
// holding whose entity carries the field and has a value (blank values are
// left out).
func (p *pageWriter) renderField(in Input, c *column) {
	s := in.Sample
	f := &s.Fields[c.col]
	fam := c.fam
	labels := p.owner.labels
	for i, t := range in.Holdings {
		e := &s.Inventory.Entities[t.Entity]
		l := &labels[i]
		row := t.Entity
		if !f.Levels.Has(e.Kind.Level()) {
			if !c.fromParent || l.parent == 0 {
				continue
			}
			row = l.parent - 1
		}
		if c.instancesOnly && l.migParent {
			continue
		}
		v := s.At(row, c.col)
		x, ok := v.Number()
		if !ok {
			continue
		}
		switch c.mode {
		case modeScaled:
			p.value = appendFloat(p.value[:0], f.Scaled(x))
			p.series(&fam, l.b, len(l.b), nil, p.value)
		case modeReasons:
			mask := uint64(x)
			for k, r := range f.Reasons {
				p.value = append(p.value[:0], '0')
				if mask&r.Bit != 0 {
					p.value[0] = '1'
				}
				p.series(&fam, l.b, len(l.b), c.reasons[k], p.value)
			}
		case modeRaw:
			p.value = appendRaw(p.value[:0], v)
			p.series(&fam, l.b, len(l.b), nil, p.value)
		case modeRawXID:
			p.value = appendRaw(p.value[:0], v)
			p.series(&fam, l.b, l.attr, c.attribute(int64(x)), p.value)
		}
	}
}

// appendRaw appends a value as DCGM reported it: integers exactly, floats in
// the shortest form that parses back to the same float64.
func appendRaw(b []byte, v source.Value) []byte {
	if v.Kind == source.Int {
		return strconv.AppendInt(b, v.Int, 10)
	}
	return appendFloat(b, v.Float)
}

// renderFields writes the families of the column plan.
func (p *pageWriter) renderFields(in Input) {
	plan := p.owner.plan
	for i := range plan {
		p.renderField(in, &plan[i])
	}
}
