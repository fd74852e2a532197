// Package exposition renders GPU samples into ready-to-serve bytes: the
// Prometheus text format 0.0.4 and OpenMetrics 1.0, each also gzipped. A
// Page is rendered once per collection; a scrape only copies its bytes.
// Label sets are built once per (inventory, attribution) pair and reused
// until either changes.
package exposition

import (
	"bytes"
	"compress/gzip"
	"strconv"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Page is one rendered exposition. It is immutable once returned.
type Page struct {
	// Text is the Prometheus text format 0.0.4.
	Text []byte
	// TextGzip is Text compressed as one gzip member.
	TextGzip []byte
	// OpenMetrics is the OpenMetrics 1.0 body without the final "# EOF"
	// line, so that more families can follow it.
	OpenMetrics []byte
	// OpenMetricsGzip is OpenMetrics compressed as one gzip member.
	OpenMetricsGzip []byte
	// Series is the number of samples on the page.
	Series int
	// Dropped is the number of series left out by the series limit.
	Dropped int
}

// Empty is the page served before the first collection and while the
// source is failing: no GPU series at all, rather than stale ones.
func Empty() *Page {
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	_ = w.Close() // writing to a bytes.Buffer cannot fail
	return &Page{TextGzip: z.Bytes(), OpenMetricsGzip: z.Bytes()}
}

// Holder is a container that holds an entity.
type Holder struct {
	Namespace, Pod, Container string
}

// Target is one labelled row of the page: an entity of the sample, and the
// container holding it (nil when no container does).
type Target struct {
	Entity int
	Holder *Holder
	// Shared is true when several containers hold the entity.
	Shared bool
}

// XIDCount is the number of XID errors of one code seen on one GPU since
// the exporter started.
type XIDCount struct {
	Entity int
	XID    int64
	Count  uint64
}

// Input is what one collection hands to the renderer.
type Input struct {
	Sample *source.Sample
	// Targets lists, for every entity to export, one target per holding
	// container (or one without a holder). Entities not listed are not
	// exported.
	Targets []Target
	// Attribution identifies the attribution snapshot Targets came from.
	// Label sets are rebuilt only when it or Sample.Inventory changes, so it
	// must change whenever the holders change (a pointer to an immutable
	// snapshot is ideal).
	Attribution any
	// XIDs are per-GPU, per-code XID counters, sorted by entity then code.
	XIDs []XIDCount
}

// Options tune rendering.
type Options struct {
	// MaxSeries caps the number of series on a page; 0 means no limit.
	MaxSeries int
}

// Renderer turns Inputs into Pages. It keeps caches between calls and is
// not safe for concurrent use: one collector goroutine owns it.
type Renderer struct {
	opts Options

	inv     *source.Inventory
	attr    any
	labels  [][]byte // per target: label pairs without braces
	targets []Target

	headers map[headerKey]header
	zbuf    bytes.Buffer
	zw      *gzip.Writer

	lastText, lastOM int
}

type headerKey struct {
	name string
	typ  fields.Type
}

type header struct{ text, om []byte }

// NewRenderer returns a renderer.
func NewRenderer(opts Options) *Renderer {
	return &Renderer{opts: opts, headers: map[headerKey]header{}, zw: gzip.NewWriter(nil)}
}

// Render builds a page from one collection.
func (r *Renderer) Render(in Input) *Page {
	p := r.renderPlain(in)
	return &Page{
		Text:            p.text,
		TextGzip:        r.gzip(p.text),
		OpenMetrics:     p.om,
		OpenMetricsGzip: r.gzip(p.om),
		Series:          p.series,
		Dropped:         p.dropped,
	}
}

// renderPlain renders the text and OpenMetrics bodies.
func (r *Renderer) renderPlain(in Input) *page {
	r.refreshLabels(in)
	p := &page{
		text:  make([]byte, 0, r.lastText+r.lastText/8),
		om:    make([]byte, 0, r.lastOM+r.lastOM/8),
		max:   r.opts.MaxSeries,
		owner: r,
	}
	p.renderInfo(in)
	for f := range in.Sample.Fields {
		p.renderField(in, f)
	}
	p.renderAllocations(in)
	p.renderXIDs(in)
	r.lastText, r.lastOM = len(p.text), len(p.om)
	return p
}

func (r *Renderer) gzip(b []byte) []byte {
	r.zbuf.Reset()
	r.zw.Reset(&r.zbuf)
	_, _ = r.zw.Write(b) // writes to a bytes.Buffer cannot fail
	_ = r.zw.Close()
	return bytes.Clone(r.zbuf.Bytes())
}

// refreshLabels rebuilds the per-target label sets when the inventory or the
// attribution changed since the last render.
func (r *Renderer) refreshLabels(in Input) {
	inv := in.Sample.Inventory
	if inv == r.inv && in.Attribution == r.attr && len(in.Targets) == len(r.labels) {
		return
	}
	r.inv, r.attr = inv, in.Attribution
	r.targets = append(r.targets[:0], in.Targets...)
	r.labels = make([][]byte, len(in.Targets))
	for i, t := range in.Targets {
		r.labels[i] = entityLabels(nil, &inv.Entities[t.Entity], t.Holder)
	}
}

// entityLabels appends the identifying labels of e, then the holder's.
func entityLabels(b []byte, e *source.Entity, h *Holder) []byte {
	b = appendLabel(b, true, "gpu", strconv.Itoa(e.GPU))
	b = appendLabel(b, false, "uuid", e.UUID)
	b = appendLabel(b, false, "device", e.Device)
	b = appendLabel(b, false, "model", e.Model)
	switch e.Kind {
	case source.GPUInstance:
		b = appendLabel(b, false, "gpu_instance", strconv.Itoa(e.GPUInstance))
		b = appendLabel(b, false, "mig_profile", e.MIGProfile)
	case source.NVLink:
		b = appendLabel(b, false, "link", strconv.Itoa(e.Link))
	case source.NVSwitch:
		b = appendLabel(b, false, "nvswitch", strconv.Itoa(e.ID))
	}
	if h != nil {
		b = appendLabel(b, false, "namespace", h.Namespace)
		b = appendLabel(b, false, "pod", h.Pod)
		b = appendLabel(b, false, "container", h.Container)
	}
	return b
}
