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
	"sync"
	"sync/atomic"
	"time"

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

// Holder is a container that holds an entity.
type Holder struct {
	Namespace, Pod, Container string
	// PodUID and Labels come from the Kubernetes API when the pod informer
	// is on: the UID as pod_uid, allowlisted pod labels already named
	// label_<key>. Both are empty otherwise.
	PodUID string
	Labels []Label
	// Workload is the pod's workload (--kubernetes.workload-info), stated
	// once per pod by gpu_workload_info, never as labels of the series.
	Workload Workload
	// VGPU is the replica of a shared GPU the container holds ("3" of
	// "GPU-…::3"), empty when it holds a whole device. Dcgm naming writes it
	// as the vgpu label when DCGMOptions.VirtualGPUs is set.
	VGPU string
	// HPCJob, when set, makes the holder an HPC scheduler job (the
	// job-mapping directory) rather than a container: its series carry
	// hpc_job and, when the mapping file says them, hpc_user and
	// hpc_partition, instead of the pod labels.
	HPCJob, HPCUser, HPCPartition string
	// DRA is the DRA claim the container holds the entity through, the
	// zero DRAClaim for a device-plugin allocation: Prometheus naming
	// states it in gpu_dra_claim_info, dcgm naming in dra_* labels.
	DRA DRAClaim
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
	// Replicas is how many "::N" replicas of the entity the holder holds
	// (NVIDIA's device plugin sharing it, podresources.Holder.Replicas);
	// 0 for a whole device. DeviceReplicas is how many the entity is
	// advertised as (podresources.Table.Replicas), the same on each of its
	// holdings; 0 when not shared that way or not known.
	Replicas, DeviceReplicas int
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
	// P2P is the NVLink P2P status of the GPU pairs (dcgm naming when the
	// counters list DCGM_EXP_P2P_STATUS and the source tells it,
	// source.P2PReporter); nil when not asked or the read failed.
	P2P []source.P2PLink
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
	// Accounting is what process accounting tells of each device as a
	// whole (orphan processes, idle energy), by entity (accounting.go).
	Accounting []DeviceAccounting
}
