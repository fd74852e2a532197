package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log/slog"
	"os/exec"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
)

func TestNegotiateEncoding(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		header string
		want   exposition.Encoding
	}{
		{"", encIdentity},
		{"identity", encIdentity},
		{"*", encIdentity},
		{"gzip", encGzip},
		{"GZIP", encGzip},
		{"gzip;q=0", encIdentity},
		{"gzip; q=0.000", encIdentity},
		{"gzip;q=nonsense", encIdentity},
		{"gzip;q=2", encIdentity},
		{"zstd", encZstd},
		{"gzip, zstd", encZstd},
		{"zstd, gzip", encZstd},
		{"zstd;q=0.5, gzip", encGzip},
		{"gzip;q=0.5, zstd;q=0.9", encZstd},
		{"zstd;q=0, gzip;q=0.1", encGzip},
		{"br, deflate", encIdentity},
		{"deflate, gzip;q=1.0, *;q=0.5", encGzip}, // what Go's own clients and Prometheus ask
	} {
		if got := negotiateEncoding(tt.header); got != tt.want {
			t.Errorf("Accept-Encoding %q: %s, want %s", tt.header, got, tt.want)
		}
	}
}

// TestMetricsEncodingsDecodeToPlain decodes every coding of both formats
// with decoders that are not the encoder's: the standard library's gzip,
// and the gzip and zstd command-line tools where installed (klauspost's
// zstd decoder otherwise). The body must be the page's plain body followed
// by the self-metrics, as two members or frames in one stream.
func TestMetricsEncodingsDecodeToPlain(t *testing.T) {
	t.Parallel()
	s, pages := newTestServer(t, Config{})
	page := testPage(t)
	pages.page.Store(page)
	for _, format := range []struct {
		name, accept string
		plain        []byte
	}{
		{"text", "text/plain;version=0.0.4", page.Text},
		{"openmetrics", "application/openmetrics-text;version=1.0.0", page.OpenMetrics},
	} {
		for _, enc := range []struct {
			accept, want string
			decoders     []func(context.Context, []byte) ([]byte, error)
		}{
			{"gzip", "gzip", []func(context.Context, []byte) ([]byte, error){gunzip, command("gzip", "-dc")}},
			{"zstd, gzip;q=0.5", "zstd", []func(context.Context, []byte) ([]byte, error){unzstd, command("zstd", "-dcq")}},
		} {
			r := get(t, s.Handler(), "/metrics", map[string]string{"Accept": format.accept, "Accept-Encoding": enc.accept})
			if got := r.Header.Get("Content-Encoding"); got != enc.want {
				t.Fatalf("%s, Accept-Encoding %q: Content-Encoding %q, want %q", format.name, enc.accept, got, enc.want)
			}
			if got := r.Header.Get("Vary"); got != "Accept-Encoding" {
				t.Errorf("%s %s: Vary %q", format.name, enc.want, got)
			}
			wire := body(t, r)
			for i, dec := range enc.decoders {
				plain, err := dec(t.Context(), wire)
				if err != nil {
					t.Errorf("%s %s decoder %d: %v", format.name, enc.want, i, err)
					continue
				}
				if plain == nil {
					continue // the tool is not installed
				}
				if !bytes.HasPrefix(plain, format.plain) || !bytes.Contains(plain, []byte("gpu_exporter_test_value")) {
					t.Errorf("%s %s decoder %d: decodes to something else:\n%.300s", format.name, enc.want, i, plain)
				}
			}
		}
	}
}

func gunzip(_ context.Context, b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func unzstd(_ context.Context, b []byte) ([]byte, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.DecodeAll(b, nil)
}

// command decodes with an installed tool reading stdin; nil, nil when the
// tool is not installed.
func command(name string, args ...string) func(context.Context, []byte) ([]byte, error) {
	return func(ctx context.Context, b []byte) ([]byte, error) {
		path, err := exec.LookPath(name)
		if err != nil {
			return nil, nil
		}
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.Stdin = bytes.NewReader(b)
		return cmd.Output()
	}
}

type pagesWithEncoder struct {
	fakePages
	enc *exposition.Encoder
}

func (p *pagesWithEncoder) Encoder() *exposition.Encoder { return p.enc }

// TestSelfMetricsShareThePagesEncoder: the self-metrics are compressed with
// the pages' encoder when the pages have one, so that the process keeps one
// gzip writer's state, not two.
func TestSelfMetricsShareThePagesEncoder(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		pages Pages
		share bool
	}{
		{"pages with an encoder", &pagesWithEncoder{enc: exposition.NewEncoder()}, true},
		{"pages without", &fakePages{}, false},
	} {
		reg := prometheus.NewRegistry()
		h, err := newMetricsHandler(tt.pages, reg, reg, slog.New(slog.DiscardHandler), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		pe, ok := tt.pages.(*pagesWithEncoder)
		if shared := ok && h.enc == pe.enc; shared != tt.share || h.enc == nil {
			t.Errorf("%s: shared %v, want %v", tt.name, shared, tt.share)
		}
	}
}
