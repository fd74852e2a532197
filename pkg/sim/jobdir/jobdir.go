// Package jobdir writes the simulator's HPC jobs into a job-mapping
// directory as a Slurm prolog and epilog would (deployment/slurm): one file
// per GPU or MIG instance, one line per job, replaced atomically. The
// exporter reads it with its real reader (pkg/hpcjobs), so the demo runs
// the same code path as an HPC node.
package jobdir

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/hpcjobs"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
)

// Writer keeps a directory in step with a list of jobs. It only ever
// touches the files it wrote.
type Writer struct {
	dir    string
	logger *slog.Logger

	mu      sync.Mutex
	written map[string]string // file name -> content written

	stop chan struct{}
	done chan struct{}
}

// New returns a writer for dir, creating it (0755) if needed.
func New(dir string, logger *slog.Logger) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // G301: the exporter may run as another user and must read it
		return nil, fmt.Errorf("job-mapping directory: %w", err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Writer{dir: dir, logger: logger, written: map[string]string{}}, nil
}

// Dir returns the directory written.
func (w *Writer) Dir() string { return w.dir }

// Sync writes the files of jobs and removes those of GPUs no job holds any
// more. Unchanged files are not rewritten.
func (w *Writer) Sync(jobs []sim.Job) error {
	want := map[string]string{}
	for _, j := range jobs {
		for _, k := range j.GPUs {
			want[k.Name()] += hpcjobs.Line(j.Job) + "\n"
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if w.written[name] == want[name] {
			continue
		}
		if err := writeAtomic(w.dir, name, want[name]); err != nil {
			errs = append(errs, err)
			continue
		}
		w.written[name] = want[name]
	}
	for name := range w.written {
		if _, ok := want[name]; ok {
			continue
		}
		if err := os.Remove(filepath.Join(w.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		delete(w.written, name)
	}
	return errors.Join(errs...)
}

// writeAtomic writes a dot-file (which the reader skips) and renames it
// over name.
func writeAtomic(dir, name, content string) error {
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(content)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644) //nolint:gosec // G302: read by the exporter, maybe as another user
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("job-mapping file %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

// Follow syncs the directory with src's jobs now and then every interval,
// on its own goroutine, until Stop.
func (w *Writer) Follow(src *sim.Source, every time.Duration) error {
	err := w.Sync(src.Jobs())
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.done)
		t := time.NewTicker(every)
		defer t.Stop()
		failing := false
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
			if err := w.Sync(src.Jobs()); err != nil {
				if !failing {
					w.logger.Warn("simulated job-mapping directory not written", "dir", w.dir, "err", err)
				}
				failing = true
				continue
			}
			failing = false
		}
	}()
	return err
}

// Stop ends Follow and removes the files the writer wrote.
func (w *Writer) Stop() {
	if w.stop != nil {
		close(w.stop)
		<-w.done
		w.stop = nil
	}
	_ = w.Sync(nil)
}
