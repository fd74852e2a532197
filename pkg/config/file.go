package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// ReadTimeout bounds how long reading one configuration file may take: a
// file on a hung network mount fails start-up instead of stalling it.
const ReadTimeout = 10 * time.Second

// MaxFileBytes caps the size of a configuration file; counters files,
// scenarios and web configs are a few KiB.
const MaxFileBytes = 16 << 20

// ErrNotRegular is returned for a path that is not a regular file (a named
// pipe, a device, a directory, a socket): reading one could block forever
// or never end.
var ErrNotRegular = errors.New("not a regular file")

// ReadFile reads a configuration file the operator named. The path must be
// a regular file (symbolic links to one, as Kubernetes mounts ConfigMaps,
// are followed) of at most MaxFileBytes. The read is bounded by ctx and by
// ReadTimeout, so that nothing at start-up can hang or outlive SIGTERM.
func ReadFile(ctx context.Context, path string) ([]byte, error) {
	return ReadFileLimit(ctx, path, MaxFileBytes)
}

// ReadFileLimit is ReadFile with a size cap of the caller's, limit bytes,
// for files smaller than MaxFileBytes (a job-mapping file): whatever the
// path is (a symbolic link to a large file, a file that grows, a file of
// /proc whose size says 0), at most limit+1 bytes are read before it is
// refused, and a path that is not a regular file is refused before it is
// opened.
func ReadFileLimit(ctx context.Context, path string, limit int64) ([]byte, error) {
	return Bounded(ctx, path, ReadTimeout, func() ([]byte, error) { return readRegular(path, limit) })
}

// LoadCountersContext reads and parses a counters file, the read bounded by
// ctx and ReadTimeout.
func LoadCountersContext(ctx context.Context, path string, cat *fields.Catalog) (*CountersFile, error) {
	data, err := ReadFile(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("counters file: %w", err)
	}
	return ParseCounters(path, bytes.NewReader(data), cat)
}

// ErrPending is returned while an earlier read of the same thing, given
// up on, has not come back: a hung network file system then holds one
// goroutine per path, not one more per attempt.
var ErrPending = errors.New("an earlier read has not returned yet (hung file system?)")

// abandoned counts, per key, the reads given up on whose goroutine has not
// returned.
var abandoned = struct {
	sync.Mutex
	keys map[string]int
}{keys: map[string]int{}}

// Bounded runs read on its own goroutine and gives up when ctx is done or
// timeout passes (0: no timeout of its own). A read given up on finishes
// (or stays blocked) on its goroutine, its result dropped; until it
// returns, Bounded fails at once for the same key with ErrPending. Reads of
// one key that are not given up on may run at the same time.
func Bounded[T any](ctx context.Context, key string, timeout time.Duration, read func() (T, error)) (T, error) {
	var zero T
	abandoned.Lock()
	if abandoned.keys[key] > 0 {
		abandoned.Unlock()
		return zero, fmt.Errorf("%s: %w", key, ErrPending)
	}
	abandoned.Unlock()
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	var done, gaveUp bool // guarded by abandoned's lock
	go func() {
		v, err := read()
		abandoned.Lock()
		done = true
		if gaveUp {
			if abandoned.keys[key]--; abandoned.keys[key] <= 0 {
				delete(abandoned.keys, key)
			}
		}
		abandoned.Unlock()
		ch <- result{v, err}
	}()
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	giveUp := func() {
		abandoned.Lock()
		if !done {
			gaveUp = true
			abandoned.keys[key]++
		}
		abandoned.Unlock()
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		giveUp()
		return zero, fmt.Errorf("reading stopped: %w", context.Cause(ctx))
	case <-expired:
		giveUp()
		return zero, fmt.Errorf("no answer within %s: %w", timeout, context.DeadlineExceeded)
	}
}

// readRegular checks the file type before opening, so that opening a named
// pipe never blocks, and again on the open file, in case the path was
// replaced in between.
func readRegular(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, st); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNonBlocking, 0) //nolint:gosec // G304: the path is the operator's
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, st); err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, tooLarge(path, limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit { // it grew since the stat, or its size says less
		return nil, tooLarge(path, limit)
	}
	return data, nil
}

func tooLarge(path string, limit int64) error {
	return fmt.Errorf("%s: larger than %s", path, byteSize(limit))
}

// byteSize writes n in the largest binary unit that divides it: "16 MiB",
// "64 KiB", "100 bytes".
func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

func regular(path string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s: %w (it is %s)", path, ErrNotRegular, fileKind(st.Mode()))
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
