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
// level 1 compresses in about a fifth of the time of the standard
// library's default level (0.57 vs 2.66 ms) into a member 26% larger
// (ratio 16.4 vs 20.7) that the scraper decompresses about as fast (0.57
// vs 0.52 ms). Levels 2 and 3 make a 10% smaller member for the same
// compress + decompress time, but their writer holds 1.2 MiB instead of
// 0.8 MiB; levels 4 and up cost more time for little.
const GzipLevel = 1

// Encoder compresses page bodies. It keeps one gzip writer (0.8 MiB of
// state) for its whole life, rather than a sync.Pool the garbage collector
// empties, so that a compression per collection allocates only its output;
// compressions are rare (one per page and coding) and take turns on it. It
// creates a zstd encoder on the first zstd request only (it holds buffers
// of its own). It is safe for concurrent use.
type Encoder struct {
	gzipMu   sync.Mutex
	gzipW    *gzip.Writer // at GzipLevel, made on first use
	zstdOnce sync.Once
	zstd     *zstd.Encoder
	zstdErr  error
}

// NewEncoder returns an Encoder.
func NewEncoder() *Encoder {
	return &Encoder{}
}

// Encode returns plain in encoding e, as one gzip member or one zstd frame;
// plain itself for Identity. A coding that cannot be set up (zstd's
// encoder never fails with these options) yields nil.
func (c *Encoder) Encode(e Encoding, plain []byte) []byte {
	switch e {
	case Gzip:
		return c.gzip(plain)
	case Zstd:
		return c.zstdFrame(plain)
	default:
		return plain
	}
}

// encodeObserved is Encode telling observe (when set) how long it took.
func (c *Encoder) encodeObserved(e Encoding, plain []byte, observe func(time.Duration)) []byte {
	if observe == nil || e == Identity {
		return c.Encode(e, plain)
	}
	start := time.Now()
	out := c.Encode(e, plain)
	observe(time.Since(start))
	return out
}

func (c *Encoder) gzip(plain []byte) []byte {
	c.gzipMu.Lock()
	defer c.gzipMu.Unlock()
	if c.gzipW == nil {
		c.gzipW, _ = gzip.NewWriterLevel(nil, GzipLevel) // a valid level never fails
	}
	var buf bytes.Buffer
	buf.Grow(len(plain)/8 + 64)
	c.gzipW.Reset(&buf)
	_, _ = c.gzipW.Write(plain) // writes to a bytes.Buffer cannot fail
	_ = c.gzipW.Close()
	c.gzipW.Reset(nil) // drop the output buffer
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
