// Package exposition renders GPU samples into ready-to-serve bytes: the
// Prometheus text format 0.0.4 and OpenMetrics 1.0, each also gzipped. A
// Page is rendered once per collection; a scrape only copies its bytes.
// Label sets are built once per (inventory, attribution) pair and reused
// until either changes (or, in dcgm naming, a label field's value). The
// naming (Prometheus conventions, or dcgm-exporter's names, units and
// labels) is chosen when the renderer is built: it decides the label sets
// and a per-column plan, so the per-series loop is the same for both.
package exposition

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Page is one rendered exposition. It is immutable once returned, and safe
// for concurrent use. A page of a renderer with Options.RecycleBuffers
// stays so while it is acquired (Acquire, Release) and, without that,
// until its renderer has rendered two more pages: then its buffers may hold
// a newer page.
type Page struct {
	// Text is the Prometheus text format 0.0.4. Nil when the renderer
	// left it out (Options.RenderOnDemand): Body makes it on request.
	Text []byte
	// OpenMetrics is the OpenMetrics 1.0 body without the final "# EOF"
	// line, so that more families can follow it. Nil when the renderer
	// left it out, as Text.
	OpenMetrics []byte
	// Series is the number of samples on the page.
	Series int
	// Dropped is the number of series left out by the series limit.
	Dropped int

	// The compressed bodies are made on first use, once per page, format
	// and coding: a node scraped in one format by gzip-capable clients
	// (Prometheus) pays for one compression per collection, none per scrape,
	// and keeps no body no client asked for.
	encoded [numFormats][numEncodings]lazyBytes
	enc     *Encoder // shared with the renderer
	observe func(time.Duration)

	// A format the renderer left out is made from the other on first
	// request: the series lines are the same, only family headers differ,
	// and heads says where they are. demand tells the renderer which
	// formats scrapes asked for.
	missing [numFormats]bool
	heads   []headAt
	derived [numFormats]lazyBytes
	demand  *atomic.Uint32

	// recycled pages count their holders in refs: 1 for the renderer
	// until it renders the page after next, plus one per Acquire not yet
	// released. Once refs is 0 nobody can acquire the page again, and the
	// renderer may claim its buffers (refs -1) for a new page.
	recycled bool
	refs     atomic.Int32
}

// Acquire keeps the page's bytes valid until Release. It returns false
// when the page has been retired (its renderer may be reusing its
// buffers): load the current page again and acquire that one.
func (p *Page) Acquire() bool {
	if !p.recycled {
		return true
	}
	for {
		n := p.refs.Load()
		if n <= 0 {
			return false
		}
		if p.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release ends an Acquire.
func (p *Page) Release() {
	if p.recycled {
		p.refs.Add(-1)
	}
}

// Format is an exposition format of a page body.
type Format int

// The exposition formats.
const (
	FormatText Format = iota
	FormatOpenMetrics
	numFormats
)

// TextGzip returns Text compressed as one gzip member.
func (p *Page) TextGzip() []byte { return p.Body(FormatText, Gzip) }

// OpenMetricsGzip returns OpenMetrics compressed as one gzip member.
func (p *Page) OpenMetricsGzip() []byte { return p.Body(FormatOpenMetrics, Gzip) }

// Body returns the body of format f in coding e: Text or OpenMetrics
// itself for Identity, else one gzip member or zstd frame of it, made on
// the first call and shared by every later one. It returns nil when the
// coding could not be set up.
func (p *Page) Body(f Format, e Encoding) []byte {
	if f >= numFormats {
		f = FormatText
	}
	if p.demand != nil {
		p.demand.Or(1 << f)
	}
	plain := p.plain(f)
	if e == Identity || e >= numEncodings {
		return plain
	}
	l := &p.encoded[f][e]
	l.once.Do(func() {
		enc := p.enc
		if enc == nil { // a page not made by a Renderer (Empty)
			enc = sharedEncoder()
		}
		l.b = enc.encodeObserved(e, plain, p.observe)
	})
	return l.b
}

// plain returns the body of format f, made from the other format when the
// renderer left it out.
func (p *Page) plain(f Format) []byte {
	if p.missing[f] {
		l := &p.derived[f]
		l.once.Do(func() { l.b = p.convert(f) })
		return l.b
	}
	if f == FormatOpenMetrics {
		return p.OpenMetrics
	}
	return p.Text
}

// convert writes the body the renderer rendered with the family headers of
// format to.
func (p *Page) convert(to Format) []byte {
	src := p.Text
	if to == FormatText {
		src = p.OpenMetrics
	}
	out := make([]byte, 0, len(src)+len(src)/16)
	prev := 0
	for _, h := range p.heads {
		from, into := h.h.text, h.h.om
		if to == FormatText {
			from, into = h.h.om, h.h.text
		}
		out = append(out, src[prev:h.at]...)
		out = append(out, into...)
		prev = h.at + len(from)
	}
	return append(out, src[prev:]...)
}

type lazyBytes struct {
	once sync.Once
	b    []byte
}

// Empty is the page served before the first collection and while the
// source is failing: no GPU series at all, rather than stale ones. Its
// compressed bodies are made with an encoder the package keeps for pages
// no renderer made; a renderer's own empty page is Renderer.Empty.
func Empty() *Page {
	return &Page{}
}

// sharedEncoder compresses the bodies of pages no renderer made, so that
// no page makes a gzip writer (0.8 MiB of state) of its own.
var sharedEncoder = sync.OnceValue(NewEncoder)

// Empty is the renderer's page before the first collection and while the
// source is failing: no series, its compressed bodies made with the
// renderer's encoder like those of the pages it renders, so that serving
// it compressed makes no gzip writer.
func (r *Renderer) Empty() *Page {
	return &Page{enc: r.enc}
}

// Holder is a container that holds an entity.
type Holder struct {
	Namespace, Pod, Container string
	// PodUID and Labels come from the Kubernetes API when the pod informer
	// is on: the UID as pod_uid, allowlisted pod labels already named
	// label_<key>. Both are empty otherwise.
	PodUID string
	Labels []Label
	// VGPU is the replica of a shared GPU the container holds ("3" of
	// "GPU-…::3"), empty when it holds a whole device. Dcgm naming writes it
	// as the vgpu label when DCGMOptions.VirtualGPUs is set.
	VGPU string
	// HPCJob, when set, makes the holder an HPC scheduler job (the
	// job-mapping directory) rather than a container: its series carry
	// hpc_job and, when the mapping file says them, hpc_user and
	// hpc_partition, instead of the pod labels.
	HPCJob, HPCUser, HPCPartition string
}

// Label is one extra label of a holder.
type Label struct {
	Name, Value string
}

// Holding is one labelled row of the page: an entity of the sample, and
// the container or HPC job holding it (nil when nobody does). An entity
// held by several has one holding per holder.
type Holding struct {
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
	// LastSeen is when the code was last reported.
	LastSeen time.Time
}

// Input is what one collection hands to the renderer.
type Input struct {
	Sample *source.Sample
	// Holdings lists, for every entity to export, one holding per container
	// or HPC job holding it (or one without a holder). Entities not listed are not
	// exported.
	Holdings []Holding
	// HoldingsVersion identifies Holdings: label sets are rebuilt only when
	// it or Sample.Inventory changes, so it must change whenever the
	// holdings do (the collector's join counts its rebuilds).
	HoldingsVersion uint64
	// XIDs are per-GPU, per-code XID counters, sorted by entity then code
	// (Prometheus naming); Derive sets them from the sample's XID events.
	XIDs []XIDCount
	// Lost are GPUs that left the inventory; Health the incidents of the
	// source's health watches (Prometheus naming; dcgm naming when the
	// counters list DCGM_EXP_GPU_HEALTH_STATUS, where nil means no check
	// result and an empty slice a check every watch passed).
	Lost   []source.LostGPU
	Health []source.HealthIncident
	// Extra is the number of trailing sample columns watched only to feed
	// window counters; they are never exported as series. Columns of Kind
	// fields.Label are not exported as series either: in dcgm naming they
	// label the series of their entity.
	Extra int
	// Windows are dcgm-exporter's window counters, in page order (dcgm
	// naming); Derive sets them.
	Windows []WindowFamily
	// Containers and Processes are the GPU usage of each container, and
	// of each process, from process accounting (Prometheus naming), sorted
	// by entity then container.
	Containers, Processes []ContainerUsage
}

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
	// families are the declared families besides the catalog's.
	families [numFamilies]Family
	// scratch buffers of the page being rendered, kept between renders
	extra, value []byte
	heads        []headAt
	enc          *Encoder // for the pages' compressed bodies

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
	return &Renderer{opts: opts, scheme: newScheme(opts), headers: map[headerKey]header{}, families: declaredFamilies(),
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
	r.extra, r.value, r.heads = p.extra, p.value, p.heads
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
