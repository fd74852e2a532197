package exposition

import (
	"bytes"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Encoding is a content coding of a page body.
type Encoding int

// The content codings a scrape can ask for in Accept-Encoding.
const (
	Identity Encoding = iota
	Gzip
	Zstd
	numEncodings
)

// String returns the Content-Encoding token ("identity" for Identity).
func (e Encoding) String() string {
	switch e {
	case Gzip:
		return "gzip"
	case Zstd:
		return "zstd"
	default:
		return "identity"
	}
}

// GzipLevel is the gzip level pages are compressed at. On the 64-GPU page
// (BenchmarkCompressLevels, docs/PERFORMANCE.md) klauspost/compress at
// level 3 compresses in about a quarter of the time of the standard
// library's default level (0.61 vs 2.66 ms), into a member 12% larger
// (ratio 18.1 vs 20.7), which the scraper decompresses about as fast
// (0.54 vs 0.52 ms). Level 1 compresses about as fast but 10% larger and
// slower to decompress, levels 4 and up cost more for little: for a body
// compressed once per collection and decompressed once per scrape, level 3
// has the lowest total.
const GzipLevel = 3

// Encoder compresses page bodies. It keeps gzip writers between calls and
// creates a zstd encoder on the first zstd request only (it holds buffers
// of its own). It is safe for concurrent use.
type Encoder struct {
	gzips    sync.Pool // of *gzip.Writer at GzipLevel
	zstdOnce sync.Once
	zstd     *zstd.Encoder
	zstdErr  error
	// observe, when set, is told how long each compression took.
	observe func(time.Duration)
}

// NewEncoder returns an Encoder; observe (may be nil) is told the duration
// of every compression.
func NewEncoder(observe func(time.Duration)) *Encoder {
	return &Encoder{observe: observe}
}

// Encode returns plain in encoding e, as one gzip member or one zstd frame;
// plain itself for Identity. A coding that cannot be set up (zstd's
// encoder never fails with these options) yields nil.
func (c *Encoder) Encode(e Encoding, plain []byte) []byte {
	if e == Identity {
		return plain
	}
	start := time.Now()
	var out []byte
	switch e {
	case Gzip:
		out = c.gzip(plain)
	case Zstd:
		out = c.zstdFrame(plain)
	}
	if c.observe != nil {
		c.observe(time.Since(start))
	}
	return out
}

func (c *Encoder) gzip(plain []byte) []byte {
	zw, _ := c.gzips.Get().(*gzip.Writer)
	if zw == nil {
		zw, _ = gzip.NewWriterLevel(nil, GzipLevel) // a valid level never fails
	}
	var buf bytes.Buffer
	buf.Grow(len(plain)/6 + 64)
	zw.Reset(&buf)
	_, _ = zw.Write(plain) // writes to a bytes.Buffer cannot fail
	_ = zw.Close()
	c.gzips.Put(zw)
	return buf.Bytes()
}

func (c *Encoder) zstdFrame(plain []byte) []byte {
	c.zstdOnce.Do(func() {
		// One frame per body, encoded whole (EncodeAll is safe for
		// concurrent use); the fastest level, with the smaller buffers a
		// low-memory encoder keeps.
		c.zstd, c.zstdErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
	})
	if c.zstdErr != nil {
		return nil
	}
	return c.zstd.EncodeAll(plain, make([]byte, 0, len(plain)/8+64))
}
