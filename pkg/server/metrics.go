package server

import (
	"bytes"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
)

// metricsHandler writes the current GPU page followed by the exporter's own
// metrics. The page's bytes were prepared by the collector; its compressed
// bodies are made by the first scrape asking for them and shared. The
// self-metrics are gathered and encoded at most once per selfMaxAge and
// shared by every scrape in that window, so that a scrape is two copies of
// prepared bytes whatever the scrape rate. A gzip response is two gzip
// members back to back (RFC 1952, section 2.2), which every gzip reader,
// Prometheus' included, decodes as one stream; a zstd response is two
// frames back to back, which a zstd decoder decodes as one stream
// (RFC 8878, section 3.1).
type metricsHandler struct {
	pages      Pages
	gatherer   prometheus.Gatherer
	logger     *slog.Logger
	selfMaxAge time.Duration
	now        func() time.Time

	self    atomic.Pointer[selfPage]
	selfMu  sync.Mutex // one rebuild at a time
	enc     *exposition.Encoder
	scrapes [2][numEncodings]prometheus.Counter
	gathErr prometheus.Counter
}

// selfPage is one encoding of the self-metrics in both formats; each
// compressed body is made by the first scrape asking for it.
type selfPage struct {
	at      time.Time
	plain   [2][]byte // by format
	encoded [2][numEncodings]struct {
		once sync.Once
		b    []byte
	}
	enc *exposition.Encoder
}

// body returns the self-metrics in format f and coding e.
func (p *selfPage) body(f int, e exposition.Encoding) []byte {
	if e == encIdentity {
		return p.plain[f]
	}
	l := &p.encoded[f][e]
	l.once.Do(func() { l.b = p.enc.Encode(e, p.plain[f]) })
	return l.b
}

const (
	fmtText = iota
	fmtOpenMetrics
)

const (
	encIdentity = exposition.Identity
	encGzip     = exposition.Gzip
	encZstd     = exposition.Zstd
	// numEncodings counts the codings served.
	numEncodings = int(exposition.Zstd) + 1
)

func newMetricsHandler(pages Pages, gatherer prometheus.Gatherer, reg prometheus.Registerer, logger *slog.Logger, selfMaxAge time.Duration) (*metricsHandler, error) {
	h := &metricsHandler{pages: pages, gatherer: gatherer, logger: logger, selfMaxAge: selfMaxAge, now: time.Now}
	// Share the pages' encoder where there is one: one gzip writer's state
	// (0.8 MiB) instead of two.
	if ep, ok := pages.(interface{ Encoder() *exposition.Encoder }); ok && ep.Encoder() != nil {
		h.enc = ep.Encoder()
	} else {
		h.enc = exposition.NewEncoder()
	}
	scrapes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gpu_exporter_scrapes_total", Help: "Metrics requests served, by negotiated format and encoding.",
	}, []string{"format", "encoding"})
	for f, fname := range []string{"text", "openmetrics"} {
		for e := range numEncodings {
			h.scrapes[f][e] = scrapes.WithLabelValues(fname, exposition.Encoding(e).String())
		}
	}
	h.gathErr = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gpu_exporter_self_metrics_errors_total", Help: "Times gathering the exporter's own metrics failed in part.",
	})
	for _, c := range []prometheus.Collector{scrapes, h.gathErr} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (h *metricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	format := expfmt.NegotiateAccept(r.Header, expfmt.FmtOpenMetrics_1_0_0, expfmt.FmtText)
	f := fmtText
	if format.FormatType() == expfmt.TypeOpenMetrics {
		f = fmtOpenMetrics
	}
	e := negotiateEncoding(r.Header.Get("Accept-Encoding"))
	page := h.pages.Page()
	for !page.Acquire() { // retired since it was loaded: its successor is published
		page = h.pages.Page()
	}
	defer page.Release()
	self := h.selfMetrics()
	body := page.Body(exposition.Format(f), e)
	if body == nil { // the coding could not be set up: serve the plain body
		e = encIdentity
		body = page.Body(exposition.Format(f), e)
	}
	tail := self.body(f, e)

	hdr := w.Header()
	hdr.Set("Content-Type", string(format))
	hdr.Set("Vary", "Accept-Encoding")
	if e != encIdentity {
		hdr.Set("Content-Encoding", e.String())
	}
	h.scrapes[f][e].Inc()
	if _, err := w.Write(body); err != nil {
		return // the client went away; nothing to tell it
	}
	_, _ = w.Write(tail)
}

// selfMetrics returns the self-metrics encoding, rebuilding it when older
// than selfMaxAge.
func (h *metricsHandler) selfMetrics() *selfPage {
	if p := h.self.Load(); p != nil && h.now().Sub(p.at) < h.selfMaxAge {
		return p
	}
	h.selfMu.Lock()
	defer h.selfMu.Unlock()
	if p := h.self.Load(); p != nil && h.now().Sub(p.at) < h.selfMaxAge {
		return p // another scrape rebuilt it while this one waited
	}
	p := h.buildSelf()
	h.self.Store(p)
	return p
}

func (h *metricsHandler) buildSelf() *selfPage {
	mfs, err := h.gatherer.Gather()
	if err != nil {
		// A partial gather still serves what it could.
		h.gathErr.Inc()
		h.logger.Warn("gathering self-metrics failed in part", "err", err)
	}
	p := &selfPage{at: h.now(), enc: h.enc}
	var text, om bytes.Buffer
	tenc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	oenc := expfmt.NewEncoder(&om, expfmt.FmtOpenMetrics_1_0_0)
	for _, mf := range mfs {
		if err := tenc.Encode(mf); err != nil {
			h.logger.Warn("encoding self-metric failed", "family", mf.GetName(), "err", err)
			continue
		}
		_ = oenc.Encode(mf) // the same family encoded as text already
	}
	_, _ = expfmt.FinalizeOpenMetrics(&om)
	p.plain = [2][]byte{text.Bytes(), om.Bytes()}
	return p
}

// negotiateEncoding picks the coding of a response from an Accept-Encoding
// header (RFC 9110, section 12.5.3): the acceptable coding (q > 0) with the
// highest weight among zstd and gzip, zstd on a tie (smaller and cheaper to
// decode), identity when neither is acceptable. "*" is not taken as a
// request for a coding.
func negotiateEncoding(h string) exposition.Encoding {
	best, bestQ := encIdentity, 0.0
	for part := range strings.SplitSeq(h, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		var e exposition.Encoding
		switch {
		case strings.EqualFold(strings.TrimSpace(coding), "gzip"):
			e = encGzip
		case strings.EqualFold(strings.TrimSpace(coding), "zstd"):
			e = encZstd
		default:
			continue
		}
		q := qValue(params)
		if q > bestQ || (q == bestQ && q > 0 && e == encZstd) {
			best, bestQ = e, q
		}
	}
	return best
}

// qValue returns the weight in a coding's parameters ("q=0.5"), 1 when
// there is none, 0 when it does not parse.
func qValue(params string) float64 {
	for p := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(strings.ReplaceAll(p, " ", ""), "=")
		if !ok || !strings.EqualFold(k, "q") {
			continue
		}
		q, err := strconv.ParseFloat(v, 64)
		if err != nil || q < 0 || q > 1 {
			return 0
		}
		return q
	}
	return 1
}
