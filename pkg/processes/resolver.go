package processes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
)

// ErrExited reports a process that is gone: it exited (or its PID was
// reused) between the GPU listing it and the procfs read.
var ErrExited = errors.New("process exited")

// ProcReadTimeout bounds one procfs read. Reading a process's stat or
// cgroup file takes microseconds; a read that takes longer is stuck (a
// process hung in the kernel, a test's named pipe), and is abandoned so
// that one such process costs a collection at most this long once; later
// reads of its file fail at once until the stuck one returns
// (bounded.ErrPending).
const ProcReadTimeout = time.Second

// MaxStatBytes caps a /proc/<pid>/stat read: 52 numeric fields and a
// command name of at most 64 bytes (TASK_COMM_LEN is 16; proc(5) allows
// 64 for kernel threads' names), a few hundred bytes in all.
const MaxStatBytes = 4 << 10

// MaxCgroupBytes caps a /proc/<pid>/cgroup read: one line per hierarchy
// (about a dozen under cgroup v1, one under v2), each a path of at most a
// few hundred bytes.
const MaxCgroupBytes = 64 << 10

// DefaultMaxCached bounds a Resolver's cache unless told otherwise: far
// above the processes a node's GPUs run (64 GPUs x 16 processes is 1024).
const DefaultMaxCached = 4096

// Resolver maps PIDs to the pod and container that run them, reading
// <procfs>/<pid>/cgroup. It caches each answer until the PID goes away: a
// PID is known by its start time (/proc/<pid>/stat field 22, proc(5)), so
// a PID the kernel reused for another process is resolved anew. A
// collection calls Begin, Resolve for each PID, then End, which forgets the
// PIDs not seen since Begin. The cache holds at most its bound; PIDs beyond
// it are resolved on every collection. Not safe for concurrent use: one
// collector goroutine owns it.
type Resolver struct {
	root  string
	max   int
	cache map[uint32]cached
	round uint64
	// Uncached counts resolutions the bound kept out of the cache.
	Uncached int
	// path and buf are reused by startTime: it runs for every GPU process
	// of every collection.
	path, buf []byte
	// read is bounded.ReadFileInto; tests put a read that blocks in its
	// place, as a process stuck in the kernel blocks a /proc read.
	read func(ctx context.Context, path string, limit int64, timeout time.Duration, buf []byte) ([]byte, error)
	// timeout is ProcReadTimeout; tests shorten it.
	timeout time.Duration
}

type cached struct {
	start uint64
	owner Owner
	round uint64
}

// NewResolver returns a Resolver reading procfs (a directory laid out as
// /proc, "/proc" on a host) keeping at most maxCached PIDs (0 means
// DefaultMaxCached).
func NewResolver(procfs string, maxCached int) (*Resolver, error) {
	if procfs == "" {
		return nil, errors.New("processes: empty procfs path")
	}
	if maxCached < 0 {
		return nil, fmt.Errorf("processes: cache bound must not be negative, got %d", maxCached)
	}
	if maxCached == 0 {
		maxCached = DefaultMaxCached
	}
	return &Resolver{root: procfs, max: maxCached, cache: map[uint32]cached{}, read: bounded.ReadFileInto, timeout: ProcReadTimeout}, nil
}

// Begin starts a collection.
func (r *Resolver) Begin() { r.round++ }

// End forgets the PIDs not resolved since Begin: they have exited or left
// the GPUs.
func (r *Resolver) End() {
	for pid, c := range r.cache {
		if c.round != r.round {
			delete(r.cache, pid)
		}
	}
}

// Cached returns the number of PIDs in the cache.
func (r *Resolver) Cached() int { return len(r.cache) }

// Resolve returns the owner of pid. The error wraps ErrExited when the
// process is gone, and names the file otherwise. Its reads end when ctx
// does, and each after ProcReadTimeout.
func (r *Resolver) Resolve(ctx context.Context, pid uint32) (Owner, error) {
	start, err := r.startTime(ctx, pid)
	if err != nil {
		delete(r.cache, pid)
		return Owner{}, err
	}
	if c, ok := r.cache[pid]; ok && c.start == start {
		c.round = r.round
		r.cache[pid] = c
		return c.owner, nil
	}
	path := filepath.Join(r.root, strconv.FormatUint(uint64(pid), 10), "cgroup")
	b, err := r.read(ctx, path, MaxCgroupBytes, r.timeout, nil)
	if err != nil {
		delete(r.cache, pid)
		if gone(err) {
			return Owner{}, fmt.Errorf("pid %d: %w", pid, ErrExited)
		}
		return Owner{}, fmt.Errorf("pid %d: %w", pid, err)
	}
	owner, err := ParseCgroup(b)
	if errors.Is(err, errNoCgroup) {
		return Owner{}, fmt.Errorf("pid %d: %w", pid, ErrExited)
	}
	if err != nil {
		return Owner{}, fmt.Errorf("%s: %w", path, err)
	}
	// The cgroup file read may belong to a process that took the PID
	// after the stat read: the start time must not have moved.
	if again, err := r.startTime(ctx, pid); err != nil || again != start {
		delete(r.cache, pid)
		return Owner{}, fmt.Errorf("pid %d: reused during the read: %w", pid, ErrExited)
	}
	if _, ok := r.cache[pid]; ok || len(r.cache) < r.max {
		r.cache[pid] = cached{start: start, owner: owner, round: r.round}
	} else {
		r.Uncached++
	}
	return owner, nil
}

// ResolveKnown is Resolve for a PID the GPU no longer lists: it answers
// only when the cache holds pid with its current start time (the process a
// previous collection resolved while it was listed), and fails with
// ErrExited otherwise: a process not in the cache may have taken the PID
// of one that exited.
func (r *Resolver) ResolveKnown(ctx context.Context, pid uint32) (Owner, error) {
	c, ok := r.cache[pid]
	if !ok {
		return Owner{}, fmt.Errorf("pid %d: not listed and not seen before: %w", pid, ErrExited)
	}
	start, err := r.startTime(ctx, pid)
	if err != nil || start != c.start {
		delete(r.cache, pid)
		return Owner{}, fmt.Errorf("pid %d: not listed and reused: %w", pid, ErrExited)
	}
	c.round = r.round
	r.cache[pid] = c
	return c.owner, nil
}

// startTime reads field 22 of <procfs>/<pid>/stat, the process's start
// time in clock ticks since boot (proc(5)). Field 2, the command name in
// parentheses, may hold spaces and parentheses itself, so fields are
// counted from the last ')'.
func (r *Resolver) startTime(ctx context.Context, pid uint32) (uint64, error) {
	r.path = append(append(r.path[:0], r.root...), '/')
	r.path = append(strconv.AppendUint(r.path, uint64(pid), 10), "/stat"...)
	path := string(r.path)
	b, err := r.read(ctx, path, MaxStatBytes, r.timeout, r.buf)
	if errors.Is(err, bounded.ErrAbandoned) {
		r.buf = nil // the abandoned read may still write into it
	} else if err == nil {
		r.buf = b
	}
	if err != nil {
		if gone(err) {
			return 0, fmt.Errorf("pid %d: %w", pid, ErrExited)
		}
		return 0, fmt.Errorf("pid %d: %w", pid, err)
	}
	if len(b) == 0 {
		return 0, fmt.Errorf("pid %d: %w", pid, ErrExited)
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, fmt.Errorf("%s: no command name in parentheses", path)
	}
	// After ')' come field 3 (state) onwards; start time is field 22.
	f := bytes.Fields(b[end+1:])
	const startField = 22 - 3
	if len(f) <= startField {
		return 0, fmt.Errorf("%s: %d fields after the command name, want at least %d", path, len(f), startField+1)
	}
	v, err := strconv.ParseUint(string(f[startField]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: start time: %w", path, err)
	}
	return v, nil
}

// gone reports whether a read failed because the process is gone: its
// /proc directory no longer exists (ENOENT) or the kernel refuses reads of
// an exiting task (ESRCH).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}
