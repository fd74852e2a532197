package bounded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ReadFile reads the regular file at path, at most limit bytes, on its own
// goroutine bounded by ctx and timeout (0: ctx only). A path that is not a
// regular file (a named pipe, a device, a directory) is refused before it
// is opened, and again once open in case it was replaced in between; a
// file that holds more than limit bytes (a symbolic link to a large file,
// a file that grows, a /proc file whose size says 0) is refused after
// limit+1 bytes. Files of /proc are regular files and read this way.
func ReadFile(ctx context.Context, path string, limit int64, timeout time.Duration) ([]byte, error) {
	return Call(ctx, path, timeout, func() ([]byte, error) { return readRegular(path, limit, nil) })
}

// ReadFileInto is ReadFile reading into buf's storage (grown as needed) for
// callers that read small files often, such as procfs on every collection.
// The result aliases buf. When the error wraps ErrAbandoned the read may
// still write into buf: the caller must drop it and use a new one.
func ReadFileInto(ctx context.Context, path string, limit int64, timeout time.Duration, buf []byte) ([]byte, error) {
	return Call(ctx, path, timeout, func() ([]byte, error) { return readRegular(path, limit, buf[:0]) })
}

// ReadDir lists the directory dir, at most limit entries (refused beyond),
// bounded by ctx and timeout (0: ctx only), in the order the file system
// returns them.
func ReadDir(ctx context.Context, dir string, limit int, timeout time.Duration) ([]fs.DirEntry, error) {
	return Call(ctx, dir, timeout, func() ([]fs.DirEntry, error) {
		f, err := os.Open(dir) //nolint:gosec // G304: callers name the directory (the operator's flag, procfs)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		entries, err := f.ReadDir(limit + 1)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if len(entries) > limit {
			return nil, fmt.Errorf("%s: more than %d entries: %w", dir, limit, ErrTooLarge)
		}
		return entries, nil
	})
}

// Stat is os.Stat bounded by ctx and timeout (0: ctx only): a stat on a
// hung network mount blocks as a read does.
func Stat(ctx context.Context, path string, timeout time.Duration) (fs.FileInfo, error) {
	return Call(ctx, path, timeout, func() (fs.FileInfo, error) { return os.Stat(path) })
}

// Lstat is os.Lstat bounded by ctx and timeout (0: ctx only).
func Lstat(ctx context.Context, path string, timeout time.Duration) (fs.FileInfo, error) {
	return Call(ctx, path, timeout, func() (fs.FileInfo, error) { return os.Lstat(path) })
}

// Readlink is os.Readlink bounded by ctx and timeout (0: ctx only).
func Readlink(ctx context.Context, path string, timeout time.Duration) (string, error) {
	return Call(ctx, path, timeout, func() (string, error) { return os.Readlink(path) })
}

// Glob is filepath.Glob bounded by ctx and timeout (0: ctx only): it
// lists directories, which block on a hung mount as reads do.
func Glob(ctx context.Context, pattern string, timeout time.Duration) ([]string, error) {
	return Call(ctx, pattern, timeout, func() ([]string, error) { return filepath.Glob(pattern) })
}

// ReadAll reads r to its end, at most limit bytes (refused beyond), and
// closes it when ctx ends first, which ends a read blocked on a network
// body. It does not close r otherwise.
func ReadAll(ctx context.Context, r io.ReadCloser, limit int64) ([]byte, error) {
	stop := context.AfterFunc(ctx, func() { _ = r.Close() })
	defer stop()
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if ctx.Err() != nil {
		return nil, fmt.Errorf("reading stopped: %w", context.Cause(ctx))
	}
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %s: %w", ByteSize(limit), ErrTooLarge)
	}
	return data, nil
}

func tooLarge(path string, limit int64) error {
	return fmt.Errorf("%s: larger than %s: %w", path, ByteSize(limit), ErrTooLarge)
}

// ByteSize writes n in the largest binary unit that divides it: "16 MiB",
// "64 KiB", "100 bytes".
func ByteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

func notRegular(path string, m fs.FileMode) error {
	return fmt.Errorf("%s: %w (it is %s)", path, ErrNotRegular, fileKind(m))
}

// fileKind names a non-regular file type for error messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	default:
		return "not a plain file"
	}
}

// Reader reads at most a cap of bytes from a stream and stops when its
// context ends, for replies decoded as they arrive (a JSON decoder over a
// response body). A read blocked on a connection is ended by its owner
// (net/http closes a request's connection when the request's context
// ends); Reader fails at the next read once ctx is done, even with bytes
// buffered.
type Reader struct {
	ctx   context.Context
	r     io.Reader
	limit int64
	// N is how many bytes were read.
	N int64
	// Err is the stream's own read error, if any (not EOF, not the cap,
	// not the context).
	Err error
}

// NewReader returns a Reader of r: the byte past limit fails the read with
// ErrTooLarge.
func NewReader(ctx context.Context, r io.Reader, limit int64) *Reader {
	return &Reader{ctx: ctx, r: io.LimitReader(r, limit+1), limit: limit}
}

func (b *Reader) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := b.r.Read(p)
	b.N += int64(n)
	if b.N > b.limit {
		return n, fmt.Errorf("larger than %d bytes: %w", b.limit, ErrTooLarge)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		b.Err = err
	}
	return n, err
}
