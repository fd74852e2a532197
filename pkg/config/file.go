package config

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
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
var ErrNotRegular = bounded.ErrNotRegular

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
	return bounded.ReadFile(ctx, path, limit, ReadTimeout)
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
