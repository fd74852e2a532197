package exposition_test

import (
	"bytes"
	stdgzip "compress/gzip"
	"io"
	"strconv"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
)

// BenchmarkCompressLevels measures compressing one page body with the
// standard library's gzip (what the exporter used before, and what
// promhttp uses), klauspost/compress's gzip at each level and zstd, and
// decompressing the result as a scraper would: the numbers behind the
// level the exporter uses (docs/PERFORMANCE.md). ratio is plain/compressed
// bytes; the decompress benchmarks decode with the standard library (gzip)
// or klauspost (zstd), the decoders Prometheus uses.
func BenchmarkCompressLevels(b *testing.B) {
	in := benchInput(b, "scale-64")
	plain := exposition.NewRenderer(exposition.Options{}).Render(in).OpenMetrics
	type codec struct {
		name string
		enc  func(dst *bytes.Buffer)
		dec  func(src []byte) error
	}
	gunzip := func(src []byte) error {
		zr, err := stdgzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, zr)
		return err
	}
	var codecs []codec
	std, _ := stdgzip.NewWriterLevel(nil, stdgzip.DefaultCompression)
	codecs = append(codecs, codec{"stdlib-gzip-default", func(dst *bytes.Buffer) {
		std.Reset(dst)
		_, _ = std.Write(plain)
		_ = std.Close()
	}, gunzip})
	for _, level := range []int{gzip.HuffmanOnly, 1, 2, 3, 4, 5, 6, 7, 9} {
		zw, err := gzip.NewWriterLevel(nil, level)
		if err != nil {
			b.Fatal(err)
		}
		codecs = append(codecs, codec{"klauspost-gzip-" + strconv.Itoa(level), func(dst *bytes.Buffer) {
			zw.Reset(dst)
			_, _ = zw.Write(plain)
			_ = zw.Close()
		}, gunzip})
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer dec.Close()
	for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault} {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
		if err != nil {
			b.Fatal(err)
		}
		codecs = append(codecs, codec{"zstd-" + level.String(), func(dst *bytes.Buffer) {
			dst.Write(enc.EncodeAll(plain, dst.AvailableBuffer()))
		}, func(src []byte) error {
			_, err := dec.DecodeAll(src, nil)
			return err
		}})
	}
	for _, c := range codecs {
		var buf bytes.Buffer
		c.enc(&buf)
		out := bytes.Clone(buf.Bytes())
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				c.enc(&buf)
			}
			b.ReportMetric(float64(len(plain))/float64(len(out)), "ratio")
		})
		b.Run(c.name+"/decompress", func(b *testing.B) {
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				if err := c.dec(out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
