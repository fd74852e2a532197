package server

import (
	"bytes"
	"compress/gzip"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// metricsHandler writes the current GPU page followed by the exporter's own
// metrics. The page's bytes (and their gzip member) were prepared by the
// collector. The self-metrics are gathered and encoded at most once per
// selfMaxAge and shared by every scrape in that window, so that a scrape is
// two copies of prepared bytes whatever the scrape rate. A gzip response is
// two gzip members back to back (RFC 1952, section 2.2), which every gzip
// reader, Prometheus' included, decodes as one stream.
type metricsHandler struct {
	pages      Pages
	gatherer   prometheus.Gatherer
	logger     *slog.Logger
	selfMaxAge time.Duration
	now        func() time.Time

	self    atomic.Pointer[selfPage]
	selfMu  sync.Mutex // one rebuild at a time
	scrapes [2][2]prometheus.Counter
	gathErr prometheus.Counter
}

// selfPage is one encoding of the self-metrics in both formats.
type selfPage struct {
	at                         time.Time
	text, textGzip, om, omGzip []byte
}

const (
	fmtText = iota
	fmtOpenMetrics
)

const (
	encIdentity = iota
	encGzip
)

func newMetricsHandler(pages Pages, gatherer prometheus.Gatherer, reg prometheus.Registerer, logger *slog.Logger, selfMaxAge time.Duration) (*metricsHandler, error) {
	h := &metricsHandler{pages: pages, gatherer: gatherer, logger: logger, selfMaxAge: selfMaxAge, now: time.Now}
	scrapes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gpu_exporter_scrapes_total", Help: "Metrics requests served, by negotiated format and encoding.",
	}, []string{"format", "encoding"})
	for f, fname := range []string{"text", "openmetrics"} {
		for e, ename := range []string{"identity", "gzip"} {
			h.scrapes[f][e] = scrapes.WithLabelValues(fname, ename)
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
	e := encIdentity
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		e = encGzip
	}
	page := h.pages.Page()
	self := h.selfMetrics()

	hdr := w.Header()
	hdr.Set("Content-Type", string(format))
	hdr.Set("Vary", "Accept-Encoding")
	var body, tail []byte
	switch {
	case f == fmtText && e == encIdentity:
		body, tail = page.Text, self.text
	case f == fmtText:
		body, tail = page.TextGzip(), self.textGzip
	case e == encIdentity:
		body, tail = page.OpenMetrics, self.om
	default:
		body, tail = page.OpenMetricsGzip(), self.omGzip
	}
	if e == encGzip {
		hdr.Set("Content-Encoding", "gzip")
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
	p := &selfPage{at: h.now()}
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
	p.text, p.om = text.Bytes(), om.Bytes()
	p.textGzip, p.omGzip = gzipMember(p.text), gzipMember(p.om)
	return p
}

func gzipMember(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b) // writes to a bytes.Buffer cannot fail
	_ = zw.Close()
	return buf.Bytes()
}

// acceptsGzip reports whether an Accept-Encoding header admits gzip.
func acceptsGzip(h string) bool {
	for _, part := range strings.Split(h, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
