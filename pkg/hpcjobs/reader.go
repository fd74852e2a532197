package hpcjobs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
	"github.com/gpu-exporter/gpu-exporter/pkg/config"
	"github.com/gpu-exporter/gpu-exporter/pkg/logthrottle"
)

// Config configures a Reader.
type Config struct {
	// Dir is the job-mapping directory.
	Dir string
	// RefreshInterval is the time between two reads of Dir.
	RefreshInterval time.Duration
	// Timeout bounds one read of the directory and its files (a hung
	// network file system); 0 means the refresh interval, at most
	// config.ReadTimeout.
	Timeout time.Duration
}

// Reader polls a job-mapping directory and publishes what it holds as a
// Table. Refresh and Run read the directory; Table is what the collector
// calls, and never touches the file system.
type Reader struct {
	cfg    Config
	logger *slog.Logger
	logs   *logthrottle.Logger
	m      *metrics

	table atomic.Pointer[Table]

	// readBytes reads one mapping file: readMappingFile; tests make it
	// hang as a network file system can.
	readBytes func(ctx context.Context, path string) ([]byte, error)

	mu sync.Mutex // serialises refreshes and guards the fields below
	// down is set while the directory cannot be read (logged once).
	down bool
	// timedOut is set when the last refresh ran out of time half-way.
	timedOut bool
	// problems are the (file, reason) pairs of the last refresh, so that a
	// file that stays malformed is logged when it becomes so, not on every
	// refresh.
	problems map[fileProblem]bool
}

type fileProblem struct{ file, reason string }

// New returns a reader; call Refresh or Run to read the directory. Its
// self-metrics are registered on reg (nil: none).
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Reader, error) {
	if cfg.Dir == "" {
		return nil, errors.New("hpc job mapping: empty directory path")
	}
	if cfg.RefreshInterval <= 0 {
		return nil, fmt.Errorf("hpc job mapping: refresh interval must be positive, got %s", cfg.RefreshInterval)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = min(cfg.RefreshInterval, config.ReadTimeout)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Reader{cfg: cfg, logger: logger, logs: logthrottle.New(logger, logthrottle.Config{}), problems: map[fileProblem]bool{},
		readBytes: readMappingFile}
	m, err := newMetrics(reg, r.logs)
	if err != nil {
		return nil, err
	}
	r.m = m
	r.table.Store(&Table{})
	return r, nil
}

// Table returns the current table; never nil. The same pointer is returned
// while the directory's jobs are unchanged.
func (r *Reader) Table() *Table { return r.table.Load() }

// Run refreshes at once, then every refresh interval until ctx is done.
func (r *Reader) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.RefreshInterval)
	defer t.Stop()
	for {
		_ = r.Refresh(ctx) // failures are reported through metrics and logs
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh reads the directory once and publishes its table. When the
// directory cannot be read (deleted, not mounted, not a directory) the
// table becomes empty, so that no series keeps a job that may have ended,
// gpu_exporter_hpc_job_mapping_up is 0, and the error is returned; the
// exporter keeps serving without hpc_job labels. A read that runs out of
// time half-way sets up to 0 too; its table goes at the second in a row.
func (r *Reader) Refresh(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	entries, err := readDir(ctx, r.cfg.Dir)
	if err != nil {
		r.publish(&Table{})
		r.m.up.Set(0)
		r.setProblems(map[fileProblem]bool{})
		if !r.down {
			r.logger.Warn("HPC job mapping directory unreadable; series carry no hpc_job labels until it is back", "dir", r.cfg.Dir, "err", err)
		}
		r.down = true
		return fmt.Errorf("hpc job mapping directory %s: %w", r.cfg.Dir, err)
	}
	if r.down {
		r.logger.Info("HPC job mapping directory readable again", "dir", r.cfg.Dir)
	}
	r.down = false
	files := map[Key][]Job{}
	problems := map[fileProblem]bool{}
	for _, de := range entries {
		name := de.Name()
		if strings.HasPrefix(name, ".") || de.IsDir() {
			continue // temporary files of atomic writes; subdirectories, as dcgm-exporter skips them
		}
		path := filepath.Join(r.cfg.Dir, name)
		if linksToDir(ctx, de, path) {
			continue // a subdirectory too, reached through a link
		}
		key, ok := ParseName(name)
		if !ok {
			r.problem(problems, path, ReasonName, 0, nil)
			continue
		}
		jobs, err := r.readFile(ctx, path, de, problems)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if len(jobs) > 0 {
			files[key] = jobs
		}
	}
	if err := ctx.Err(); err != nil {
		// Out of time half-way: the read failed. A partial table would drop
		// jobs that still run, so the last table stands for this refresh;
		// at the second failure in a row it goes, so that no job outlives
		// its file for as long as the file system hangs.
		r.m.up.Set(0)
		if r.timedOut {
			r.publish(&Table{})
		}
		r.timedOut = true
		r.logs.Warn("hpcjobs/timeout", "HPC job mapping directory read timed out; the last job table stands for one refresh", "dir", r.cfg.Dir, "timeout", r.cfg.Timeout)
		return fmt.Errorf("hpc job mapping directory %s: %w", r.cfg.Dir, err)
	}
	r.timedOut = false
	r.publish(NewTable(files))
	r.m.up.Set(1)
	r.setProblems(problems)
	r.logs.Flush(ctx)
	return nil
}

// readFile reads and parses one mapping file, noting its problems. A file
// that vanished since the directory was listed is a job that ended: no
// jobs, no problem.
func (r *Reader) readFile(ctx context.Context, path string, de fs.DirEntry, problems map[fileProblem]bool) ([]Job, error) {
	info, err := bounded.Call(ctx, path, 0, de.Info) // an lstat: it blocks on a hung mount as a read does
	if err == nil && info.Mode().IsRegular() && info.Size() > MaxFileBytes {
		err = fmt.Errorf("larger than %d KiB", MaxFileBytes>>10)
	}
	var data []byte
	if err == nil {
		data, err = r.readBytes(ctx, path)
	}
	if err == nil && len(data) > MaxFileBytes { // it grew since the listing
		err = fmt.Errorf("larger than %d KiB", MaxFileBytes>>10)
	}
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && ctx.Err() == nil {
			r.problem(problems, path, ReasonUnreadable, 0, err)
		}
		return nil, err
	}
	jobs, probs := ParseContent(data)
	for _, p := range probs {
		r.problem(problems, path, p.Reason, p.Line, nil)
	}
	return jobs, nil
}

// problem records that file has a problem of reason and logs it when the
// file did not have it at the last refresh; lines are limited per reason.
func (r *Reader) problem(problems map[fileProblem]bool, file, reason string, line int, err error) {
	p := fileProblem{file, reason}
	problems[p] = true
	if r.problems[p] {
		return
	}
	args := []any{"file", file, "reason", reason}
	if line > 0 {
		args = append(args, "line", line)
	}
	if err != nil {
		args = append(args, "err", err)
	}
	r.logs.Warn("hpcjobs/"+reason, "HPC job mapping file malformed; what does not parse is skipped", args...)
}

// setProblems keeps the problems of this refresh and sets the malformed
// files gauge from them.
func (r *Reader) setProblems(problems map[fileProblem]bool) {
	r.problems = problems
	counts := map[string]int{}
	for p := range problems {
		counts[p.reason]++
	}
	for _, reason := range Reasons() {
		r.m.malformed.WithLabelValues(reason).Set(float64(counts[reason]))
	}
}

// publish swaps t in unless it holds what the current table holds, so that
// the collector's join cache keeps its labels.
func (r *Reader) publish(t *Table) {
	if cur := r.table.Load(); !cur.Equal(t) {
		r.table.Store(t)
	}
	r.m.jobs.Set(float64(r.table.Load().JobCount()))
}

// readMappingFile reads one mapping file through a limit of MaxFileBytes+1
// bytes, whatever the directory entry is: a symbolic link to a large file
// is refused after that many bytes, not read whole, and one to a named pipe
// or a device is refused before it is opened, with an error naming the
// file. The read is bounded by ctx (the refresh's deadline) and
// config.ReadTimeout.
func readMappingFile(ctx context.Context, path string) ([]byte, error) {
	return config.ReadFileLimit(ctx, path, MaxFileBytes)
}

// linksToDir reports whether a directory entry is a symbolic link to a
// directory, which is skipped as a subdirectory is. os.ReadDir's entries
// describe the link itself, not its target, so de.IsDir is false for it;
// dcgm-exporter skips directories by the entry alone (getGPUFiles in
// internal/pkg/transformation/hpc.go: DirEntry.Info().IsDir()), so a link
// to a directory passes its check and the read of it fails; here it is
// skipped as the directory it leads to. The stat is bounded as the file
// reads are; a link that cannot be followed is no directory, and its read
// reports it.
func linksToDir(ctx context.Context, de fs.DirEntry, path string) bool {
	if de.Type()&fs.ModeSymlink == 0 {
		return false
	}
	st, err := bounded.Stat(ctx, path, config.ReadTimeout)
	return err == nil && st.IsDir()
}

// MaxDirEntries caps the entries of the job-mapping directory: one file a
// GPU or MIG instance, so a directory of more is not the mapping.
const MaxDirEntries = 1 << 16

// readDir lists dir, sorted by name, on its own goroutine and gives up when
// ctx is done: a hung network file system stalls neither the refresh loop
// nor shutdown, and holds at most one goroutine (bounded.Call).
func readDir(ctx context.Context, dir string) ([]fs.DirEntry, error) {
	entries, err := bounded.ReadDir(ctx, dir, MaxDirEntries, 0)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}
