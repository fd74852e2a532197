package server

import (
	"bytes"
	"compress/gzip"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// metricsHandler writes the current GPU page followed by the self-metrics
// gathered from the registry. The page's bytes (and their gzip member) were
// prepared by the collector; only the small self-metrics part is encoded per
// request. A gzip response is two gzip members back to back (RFC 1952,
// section 2.2), which every gzip reader, Prometheus' included, decodes as
// one stream.
type metricsHandler struct {
	pages    Pages
	gatherer prometheus.Gatherer
	logger   *slog.Logger
	bufs     sync.Pool
	zips     sync.Pool
	scrapes  *prometheus.CounterVec
	gatherEr prometheus.Counter
}

func newMetricsHandler(pages Pages, gatherer prometheus.Gatherer, reg prometheus.Registerer, logger *slog.Logger) (*metricsHandler, error) {
	h := &metricsHandler{
		pages: pages, gatherer: gatherer, logger: logger,
		scrapes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpu_exporter_scrapes_total", Help: "Metrics requests served, by negotiated format and encoding.",
		}, []string{"format", "encoding"}),
		gatherEr: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpu_exporter_self_metrics_errors_total", Help: "Requests where gathering the exporter's own metrics failed in part.",
		}),
	}
	for _, f := range []string{"text", "openmetrics"} {
		for _, e := range []string{"identity", "gzip"} {
			h.scrapes.WithLabelValues(f, e)
		}
	}
	h.bufs.New = func() any { return new(bytes.Buffer) }
	h.zips.New = func() any { return gzip.NewWriter(nil) }
	for _, c := range []prometheus.Collector{h.scrapes, h.gatherEr} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (h *metricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	format := expfmt.NegotiateAccept(r.Header, expfmt.FmtOpenMetrics_1_0_0, expfmt.FmtText)
	openMetrics := format.FormatType() == expfmt.TypeOpenMetrics
	gz := acceptsGzip(r.Header.Get("Accept-Encoding"))
	page := h.pages.Page()

	buf := h.bufs.Get().(*bytes.Buffer)
	defer h.bufs.Put(buf)
	buf.Reset()
	h.encodeSelf(buf, format, openMetrics)

	hdr := w.Header()
	hdr.Set("Content-Type", string(format))
	hdr.Add("Vary", "Accept-Encoding")
	formatLabel, encLabel := "text", "identity"
	if openMetrics {
		formatLabel = "openmetrics"
	}
	body := page.Text
	if openMetrics {
		body = page.OpenMetrics
	}
	if gz {
		encLabel = "gzip"
		hdr.Set("Content-Encoding", "gzip")
		body = page.TextGzip
		if openMetrics {
			body = page.OpenMetricsGzip
		}
	}
	h.scrapes.WithLabelValues(formatLabel, encLabel).Inc()
	if _, err := w.Write(body); err != nil {
		return // client went away; nothing to tell it
	}
	if !gz {
		_, _ = w.Write(buf.Bytes())
		return
	}
	zw := h.zips.Get().(*gzip.Writer)
	defer h.zips.Put(zw)
	zw.Reset(w)
	_, _ = zw.Write(buf.Bytes())
	_ = zw.Close()
}

// encodeSelf writes the registry's families (and the OpenMetrics EOF marker).
// A partial gather still serves what it could.
func (h *metricsHandler) encodeSelf(buf *bytes.Buffer, format expfmt.Format, openMetrics bool) {
	mfs, err := h.gatherer.Gather()
	if err != nil {
		h.gatherEr.Inc()
		h.logger.Warn("gathering self-metrics failed in part", "err", err)
	}
	enc := expfmt.NewEncoder(buf, format)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			h.logger.Warn("encoding self-metric failed", "family", mf.GetName(), "err", err)
		}
	}
	if openMetrics {
		_, _ = expfmt.FinalizeOpenMetrics(buf)
	}
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
