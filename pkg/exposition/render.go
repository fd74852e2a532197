package exposition

import (
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Options tune rendering.
type Options struct {
	// MaxSeries caps the number of series on a page; 0 means no limit.
	MaxSeries int
	// Naming selects names, units and labels.
	Naming Naming
	// DCGM tunes dcgm naming.
	DCGM DCGMOptions
	// ObserveCompression, when set, is told how long each compression of
	// a page body took (they happen on the first scrape asking for a
	// coding, not during the collection).
	ObserveCompression func(time.Duration)
	// RenderOnDemand renders only the formats scrapes asked for (Page.Body)
	// since the previous render, or, when none asked, those of the
	// previous render; a page makes a format left out from the other on
	// the first request. Both formats are rendered until a first request.
	RenderOnDemand bool
	// RecycleBuffers lets the renderer write a page into the buffers of
	// the page it rendered two renders before, when nobody holds that one
	// any more: readers of its pages must Acquire and Release them.
	RecycleBuffers bool
}

// Renderer turns Inputs into Pages. It keeps caches between calls and is
// not safe for concurrent use: one collector goroutine owns it.
type Renderer struct {
	opts Options
	// scheme is the naming's implementation: labels, column plans, derived
	// families and the order of the page.
	scheme scheme

	inv        *source.Inventory
	version    uint64
	labels     []holdingLabels // per holding
	labelCols  []int           // sample columns of Kind fields.Label, by label name
	labelNames []string        // their label names
	labelVals  []source.Value  // per target, per labelCols: values the labels hold

	plan       []column // per exported sample column, in page order
	planFields []fields.Field
	planExtra  int

	headers map[headerKey]header
	// scratch buffers of the page being rendered, kept between renders
	extra, value, buf []byte
	heads             []headAt
	enc               *Encoder // for the pages' compressed bodies

	lastText, lastOM int
	// retired are the last two pages rendered, newest first, whose buffers
	// the renderer may reuse (Options.RecycleBuffers).
	retired [2]*Page
	// demand collects the formats scrapes asked for since the last render,
	// as bits 1<<Format; formats are those rendered last.
	demand  atomic.Uint32
	formats uint32
}

// holdingLabels is the cached label set of one holding, label pairs without
// braces, and where labels that vary per series go.
type holdingLabels struct {
	b []byte
	// window is where window counter labels go: after the entity's labels,
	// before the holder's.
	window int
	// attr is where per-value attributes (err_code, err_msg) go: in the
	// holder's labels, kept in dcgm-exporter's sorted order.
	attr int
	// migParent is set on a GPU row whose GPU has MIG instances in the
	// inventory (dcgm naming); see column.instancesOnly.
	migParent bool
	// parent is, on a GPU instance row (dcgm naming), the inventory row of
	// its GPU plus one (0: none); see column.fromParent.
	parent int
}

type headerKey struct {
	name, help string
	typ        fields.Type
}

type header struct{ text, om []byte }

// NewRenderer returns a renderer.
func NewRenderer(opts Options) *Renderer {
	return &Renderer{opts: opts, scheme: newScheme(opts), headers: map[headerKey]header{},
		enc: NewEncoder()}
}

// Encoder returns the encoder of the renderer's pages, which others may
// share (the server compresses its self-metrics with it).
func (r *Renderer) Encoder() *Encoder { return r.enc }

// WatchSet returns the fields to watch for k under the renderer's naming:
// the counters' fields, then those the naming adds (label fields, inputs
// of derived families). The last extra fields only feed derived families;
// pass extra as Input.Extra.
func (r *Renderer) WatchSet(k Counters) (set []fields.Field, extra int) {
	return r.scheme.watchSet(k)
}

// WantsHealth reports whether the naming exports lost GPUs and health
// incidents (Input.Lost, Input.Health).
func (r *Renderer) WantsHealth() bool { return r.scheme.wantsHealth() }

// WantsP2P reports whether the naming exports the NVLink P2P status of the
// GPU pairs (Input.P2P).
func (r *Renderer) WantsP2P() bool { return r.scheme.wantsP2P() }

// Derive records the raw events of one collection (the sample's XID
// events) and sets the families the naming derives from them on in: XID
// counters since start (Input.XIDs) or window counters (Input.Windows),
// configured by k. Call it once per collection, before Render.
func (r *Renderer) Derive(in *Input, k Counters) { r.scheme.derive(in, k) }

// Render builds a page from one collection.
func (r *Renderer) Render(in Input) *Page {
	var text, om []byte
	if r.opts.RecycleBuffers {
		text, om = r.reclaim()
	}
	p := r.renderPlain(in, text, om)
	page := &Page{
		missing:     [numFormats]bool{!p.wantText, !p.wantOM},
		Text:        p.text,
		OpenMetrics: p.om,
		Series:      p.nseries,
		Dropped:     p.dropped,
		enc:         r.enc,
		observe:     r.opts.ObserveCompression,
		recycled:    r.opts.RecycleBuffers,
	}
	if r.opts.RenderOnDemand {
		page.demand = &r.demand
		if !p.wantText || !p.wantOM {
			page.heads = append([]headAt(nil), p.heads...)
		}
	}
	if r.opts.RecycleBuffers {
		page.refs.Store(1) // the renderer's hold, dropped two renders on
		r.retired[0], r.retired[1] = page, r.retired[0]
	}
	return page
}

// reclaim drops the renderer's hold on the page rendered two renders ago
// (its successor has been published since) and returns its buffers,
// emptied, when nobody holds it; nil otherwise.
func (r *Renderer) reclaim() (text, om []byte) {
	old := r.retired[1]
	r.retired[1] = nil
	if old == nil {
		return nil, nil
	}
	if old.refs.Add(-1) != 0 || !old.refs.CompareAndSwap(0, -1) {
		return nil, nil // a scrape still holds it: it is left to the garbage collector
	}
	return old.Text[:0:cap(old.Text)], old.OpenMetrics[:0:cap(old.OpenMetrics)]
}

// wanted returns the formats to render: all without RenderOnDemand, else
// those asked for since the last render, or the last render's when none
// were.
func (r *Renderer) wanted() (text, om bool) {
	if !r.opts.RenderOnDemand {
		return true, true
	}
	if d := r.demand.Swap(0); d != 0 {
		r.formats = d
	}
	if r.formats == 0 {
		return true, true // nobody asked yet
	}
	return r.formats&(1<<FormatText) != 0, r.formats&(1<<FormatOpenMetrics) != 0
}

// buffer returns b, emptied, when it can hold a body of the previous
// page's size (append grows it if this page is larger), else a new buffer
// of that size and an eighth more.
func buffer(b []byte, last int) []byte {
	if cap(b) == 0 || cap(b) < last {
		return make([]byte, 0, last+last/8)
	}
	return b[:0]
}

// renderPlain renders the text and OpenMetrics bodies, into text and om
// when they are large enough.
func (r *Renderer) renderPlain(in Input, text, om []byte) *pageWriter {
	r.refreshLabels(in)
	p := &pageWriter{
		max:   r.opts.MaxSeries,
		owner: r,
		extra: r.extra[:0],
		value: r.value[:0],
		buf:   r.buf[:0],
		heads: r.heads[:0],
	}
	p.wantText, p.wantOM = r.wanted()
	if p.wantText {
		p.text = buffer(text, r.lastText)
	}
	if p.wantOM {
		p.om = buffer(om, r.lastOM)
	}
	r.refreshPlan(in)
	r.scheme.render(p, in)
	if p.wantText {
		r.lastText = len(p.text)
	}
	if p.wantOM {
		r.lastOM = len(p.om)
	}
	r.extra, r.value, r.buf, r.heads = p.extra, p.value, p.buf, p.heads
	return p
}

// refreshLabels rebuilds the per-target label sets when the inventory, the
// attribution or (dcgm naming) a label field's value changed since the last
// render.
func (r *Renderer) refreshLabels(in Input) {
	inv := in.Sample.Inventory
	if inv == r.inv && in.HoldingsVersion == r.version && len(in.Holdings) == len(r.labels) && !r.labelValuesChanged(in) {
		return
	}
	r.inv, r.version = inv, in.HoldingsVersion
	r.findLabelColumns(in.Sample)
	r.labels = make([]holdingLabels, len(in.Holdings))
	r.labelVals = r.labelVals[:0]
	for i, t := range in.Holdings {
		for _, col := range r.labelCols {
			r.labelVals = append(r.labelVals, in.Sample.At(t.Entity, col))
		}
		r.labels[i] = r.scheme.label(in.Sample, t, r.labelCols)
	}
}

// findLabelColumns lists the sample columns of Kind fields.Label, sorted by
// label name as dcgm-exporter sorts them; none when the naming ignores
// label fields.
func (r *Renderer) findLabelColumns(s *source.Sample) {
	r.labelCols, r.labelNames = r.labelCols[:0], r.labelNames[:0]
	if !r.scheme.labelFields() {
		return
	}
	for col := range s.Fields {
		if s.Fields[col].Kind == fields.Label {
			r.labelCols = append(r.labelCols, col)
		}
	}
	sort.SliceStable(r.labelCols, func(a, b int) bool {
		return s.Fields[r.labelCols[a]].DCGMName < s.Fields[r.labelCols[b]].DCGMName
	})
	for _, col := range r.labelCols {
		r.labelNames = append(r.labelNames, s.Fields[col].DCGMName)
	}
}

// labelValuesChanged reports whether a label column holds another value
// than the cached label sets were built from, or sits elsewhere.
func (r *Renderer) labelValuesChanged(in Input) bool {
	if !r.scheme.labelFields() {
		return false
	}
	s := in.Sample
	n := 0
	for col := range s.Fields {
		if s.Fields[col].Kind == fields.Label {
			n++
		}
	}
	if n != len(r.labelCols) {
		return true
	}
	for i, col := range r.labelCols {
		if col >= len(s.Fields) || s.Fields[col].Kind != fields.Label || s.Fields[col].DCGMName != r.labelNames[i] {
			return true
		}
	}
	k := 0
	for _, t := range in.Holdings {
		for _, col := range r.labelCols {
			if s.At(t.Entity, col) != r.labelVals[k] {
				return true
			}
			k++
		}
	}
	return false
}

// Empty is the renderer's page before the first collection and while the
// source is failing: no series, its compressed bodies made with the
// renderer's encoder like those of the pages it renders, so that serving
// it compressed makes no gzip writer.
func (r *Renderer) Empty() *Page {
	return &Page{enc: r.enc}
}

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
	// scratch buffers for one series; buf for the label set of a declared
	// family's series
	extra, value, buf []byte
	// label sets several declared families share, built by the first one
	// on the page that needs them (xidLabels, usageLabels, deviceLabels)
	xids, usage, processes, devices [][]byte
	// gpuHealth is the counters row of DCGM_EXP_GPU_HEALTH_STATUS (dcgm
	// naming), nil when the counters do not list it.
	gpuHealth *ExporterFamily
	// p2p is the counters row of DCGM_EXP_P2P_STATUS (dcgm naming), nil
	// when the counters do not list it.
	p2p *ExporterFamily
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
