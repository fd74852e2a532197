package bounded

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
)

// stuckOn is a Batch read that blocks on path until release is closed, as a
// /proc read blocks behind a process stuck in the kernel; other files read
// as usual.
func stuckOn(path string, release <-chan struct{}) func(string, int64, []byte) ([]byte, error) {
	return func(p string, limit int64, buf []byte) ([]byte, error) {
		if p == path {
			<-release
			return append(buf, "late"...), nil
		}
		return readRegular(p, limit, buf)
	}
}

func writeFiles(t *testing.T, contents ...string) []File {
	t.Helper()
	dir := t.TempDir()
	var files []File
	for i, c := range contents {
		p := filepath.Join(dir, string(rune('a'+i)))
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, File{Path: p, Limit: 8})
	}
	return files
}

// TestBatchReadsInOrder: each file's content or error lands at its index,
// each capped by its own limit, and the results of one Read stay intact
// while the next reuses the storage.
func TestBatchReadsInOrder(t *testing.T) {
	t.Parallel()
	files := writeFiles(t, "one", "two", "nine bytes")
	files = append(files, File{Path: filepath.Join(t.TempDir(), "missing"), Limit: 8})
	var b Batch
	out := make([]Result, len(files))
	b.Read(t.Context(), files, out)
	if string(out[0].Data) != "one" || string(out[1].Data) != "two" || out[0].Err != nil || out[1].Err != nil {
		t.Errorf("results %q %v, %q %v", out[0].Data, out[0].Err, out[1].Data, out[1].Err)
	}
	if !errors.Is(out[2].Err, ErrTooLarge) || !strings.Contains(out[2].Err.Error(), files[2].Path) {
		t.Errorf("file over its cap: %v", out[2].Err)
	}
	if !errors.Is(out[3].Err, os.ErrNotExist) {
		t.Errorf("missing file: %v", out[3].Err)
	}
	again := make([]Result, 2)
	b.Read(t.Context(), files[:2], again)
	if string(out[0].Data) != "one" || string(again[1].Data) != "two" {
		t.Errorf("after a second read: %q %q", out[0].Data, again[1].Data)
	}
}

// TestBatchAbandonsAStalledRead: a read that makes no progress for the
// stall bound is abandoned, the files after it are read, the stuck path
// fails at once while it stays stuck (one goroutine held, not one per
// Read), and reads again once it returns.
func TestBatchAbandonsAStalledRead(t *testing.T) {
	t.Parallel()
	files := writeFiles(t, "a", "b", "c")
	release := make(chan struct{})
	b := Batch{Stall: 20 * time.Millisecond, ReadFile: stuckOn(files[1].Path, release)}
	out := make([]Result, 3)
	done := make(chan struct{})
	go func() { defer close(done); b.Read(t.Context(), files, out) }()
	poll.ReceiveWithin(t, 20*time.Second, "the Read past the stalled file", done)
	if string(out[0].Data) != "a" || string(out[2].Data) != "c" {
		t.Errorf("the files around the stalled one: %q %v, %q %v", out[0].Data, out[0].Err, out[2].Data, out[2].Err)
	}
	if !errors.Is(out[1].Err, ErrAbandoned) || !errors.Is(out[1].Err, context.DeadlineExceeded) {
		t.Errorf("stalled file: %v, want it abandoned", out[1].Err)
	}
	for range 3 {
		b.Read(t.Context(), files, out)
		if !errors.Is(out[1].Err, ErrPending) || string(out[2].Data) != "c" {
			t.Fatalf("while stuck: %v, %q; want ErrPending and the rest read", out[1].Err, out[2].Data)
		}
	}
	close(release)
	poll.Until(t, "the stuck path reads again once it returned", func() bool {
		b.ReadFile = nil
		b.Read(t.Context(), files, out)
		return out[1].Err == nil && string(out[1].Data) == "b"
	})
}

// TestBatchEndsWithItsContext: when the context ends, the read in flight is
// abandoned and the files not read fail with the context's error.
func TestBatchEndsWithItsContext(t *testing.T) {
	t.Parallel()
	files := writeFiles(t, "a", "b", "c")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	b := Batch{ReadFile: stuckOn(files[1].Path, release)} // no stall bound: only the context
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	out := make([]Result, 3)
	done := make(chan struct{})
	go func() { defer close(done); b.Read(ctx, files, out) }()
	poll.ReceiveWithin(t, 20*time.Second, "the Read to end with its context", done)
	if string(out[0].Data) != "a" {
		t.Errorf("first file: %q %v", out[0].Data, out[0].Err)
	}
	for _, r := range out[1:] {
		if !errors.Is(r.Err, context.Canceled) {
			t.Errorf("after the cancellation: %v, want it", r.Err)
		}
	}
}
