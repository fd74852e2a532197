package processes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// ErrExited reports a process that is gone: it exited (or its PID was
// reused) between the GPU listing it and the procfs read.
var ErrExited = errors.New("process exited")

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
	return &Resolver{root: procfs, max: maxCached, cache: map[uint32]cached{}}, nil
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
// process is gone, and names the file otherwise.
func (r *Resolver) Resolve(pid uint32) (Owner, error) {
	start, err := r.startTime(pid)
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
	b, err := os.ReadFile(path) //nolint:gosec // G304: a procfs path the exporter builds from a PID
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
	if again, err := r.startTime(pid); err != nil || again != start {
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
func (r *Resolver) ResolveKnown(pid uint32) (Owner, error) {
	c, ok := r.cache[pid]
	if !ok {
		return Owner{}, fmt.Errorf("pid %d: not listed and not seen before: %w", pid, ErrExited)
	}
	start, err := r.startTime(pid)
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
func (r *Resolver) startTime(pid uint32) (uint64, error) {
	r.path = append(append(r.path[:0], r.root...), '/')
	r.path = append(strconv.AppendUint(r.path, uint64(pid), 10), "/stat"...)
	path := string(r.path)
	b, err := r.read(path)
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

// read reads a small file into the Resolver's buffer; the result is valid
// until the next call.
func (r *Resolver) read(path string) ([]byte, error) {
	f, err := os.Open(path) //nolint:gosec // G304: a procfs path the exporter builds from a PID
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if cap(r.buf) == 0 {
		r.buf = make([]byte, 0, 1024)
	}
	r.buf = r.buf[:0]
	for {
		if len(r.buf) == cap(r.buf) {
			r.buf = append(r.buf, 0)[:len(r.buf)]
		}
		n, err := f.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return r.buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
