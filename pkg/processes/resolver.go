package processes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"syscall"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
)

// ErrExited reports a process that is gone: it exited (or its PID was
// reused) between the GPU listing it and the procfs read.
var ErrExited = errors.New("process exited")

// ProcReadTimeout bounds one procfs read. Reading a process's stat or
// cgroup file takes microseconds; a read during which the collection's
// reads make no progress for one to two of these is stuck (a process hung
// in the kernel, a test's named pipe) and is abandoned, so that one such
// process costs a collection at most that long once; later reads of its
// file fail at once until the stuck one returns (bounded.ErrPending).
const ProcReadTimeout = time.Second

// MaxStatBytes caps a /proc/<pid>/stat read: 52 numeric fields and a
// command name of at most 64 bytes (TASK_COMM_LEN is 16; proc(5) allows
// 64 for kernel threads' names), a few hundred bytes in all.
const MaxStatBytes = 4 << 10

// MaxCgroupBytes caps a /proc/<pid>/cgroup read: one line per hierarchy
// (about a dozen under cgroup v1, one under v2), each a path of at most a
// few hundred bytes.
const MaxCgroupBytes = 64 << 10

// MaxAliveBytes caps a read of a process's liveness file,
// /proc/<pid>/oom_score_adj: one integer from -1000 to 1000 and a newline.
const MaxAliveBytes = 64

// aliveFile is the file of a cached process the Resolver holds open and
// reads again at every collection to learn that the process is still the
// one it resolved. Any /proc/<pid> file opened once stays bound to its
// process and fails with ESRCH once the process is gone (bounded.Held);
// oom_score_adj is chosen for being the cheapest to read: the kernel
// answers it from one field of the task (oom_score_adj_read,
// fs/proc/base.c), where it builds /proc/<pid>/stat from every thread's
// times (do_task_stat, fs/proc/array.c), which costs several times more
// for a process with dozens of threads, as training processes have
// (BenchmarkResolveRealProcfs). It is in every /proc/<pid> since Linux
// 2.6.36 and readable by all (mode 0644, proc(5)).
const aliveFile = "oom_score_adj"

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
	// batch reads the procfs files of a collection on one goroutine,
	// each read bounded (ProcReadTimeout, the collection's context).
	batch bounded.Batch
	// files, results, misses and path are reused by ResolveAll: it runs
	// for every GPU process of every collection.
	files   []bounded.File
	results []bounded.Result
	misses  []miss
	again   []int
	path    []byte
	// pidfds says cached processes are held by pidfds (pidfd_linux.go):
	// procfs shows the exporter's own PID namespace. pfds, fileIdx and
	// newPidfds are reused by ResolveAll.
	pidfds    bool
	pfds      pidfdSet
	fileIdx   []int
	newPidfds []int
	// holdMax bounds the liveness files and pidfds held open (bounded.HoldLimit: a
	// quarter of the open-file limit); held counts them as of the last
	// End, holds what this collection asked for since.
	holdMax, held, holds int
}

// Lookup is one PID for ResolveAll; Known asks ResolveKnown's question.
type Lookup struct {
	PID   uint32
	Known bool
}

// Resolution is the answer to one Lookup.
type Resolution struct {
	Owner Owner
	// Limits are what a sharing mechanism gave the process, read once
	// from its environment when it was first resolved.
	Limits Limits
	Err    error
}

// miss is a listed PID the cache could not answer, with the start time
// read for it.
type miss struct {
	i     int
	start uint64
}

type cached struct {
	start  uint64
	owner  Owner
	limits Limits
	round  uint64
	// held is the process's liveness file (aliveFile), kept open; nil
	// where it could not be or a pidfd holds the process.
	held *bounded.Held
	// pidfd is the process's pidfd plus one; 0: none.
	pidfd int
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
	self, err := bounded.Readlink(context.Background(), procfs+"/self", ProcReadTimeout)
	return &Resolver{root: procfs, max: maxCached, cache: map[uint32]cached{}, batch: bounded.Batch{Stall: ProcReadTimeout},
		holdMax: min(maxCached, bounded.HoldLimit()), pidfds: err == nil && pidfdsFor(self)}, nil
}

// Begin starts a collection.
func (r *Resolver) Begin() { r.round++ }

// End forgets the PIDs not resolved since Begin: they have exited or left
// the GPUs.
func (r *Resolver) End() {
	r.held, r.holds = 0, 0
	for pid, c := range r.cache {
		if c.round != r.round {
			r.forget(pid)
		} else if c.held != nil || c.pidfd != 0 {
			r.held++
		}
	}
}

// hold reports whether one more liveness file or pidfd may be held open.
func (r *Resolver) hold() bool {
	if r.held+r.holds >= r.holdMax {
		return false
	}
	r.holds++
	return true
}

// Cached returns the number of PIDs in the cache.
func (r *Resolver) Cached() int { return len(r.cache) }

// Resolve returns the owner of pid. The error wraps ErrExited when the
// process is gone, and names the file otherwise. Its reads end when ctx
// does, and each after ProcReadTimeout.
func (r *Resolver) Resolve(ctx context.Context, pid uint32) (Owner, error) {
	var out [1]Resolution
	r.ResolveAll(ctx, []Lookup{{PID: pid}}, out[:])
	return out[0].Owner, out[0].Err
}

// ResolveKnown is Resolve for a PID the GPU no longer lists: it answers
// only when the cache holds pid with its current start time (the process a
// previous collection resolved while it was listed), and fails with
// ErrExited otherwise: a process not in the cache may have taken the PID
// of one that exited.
func (r *Resolver) ResolveKnown(ctx context.Context, pid uint32) (Owner, error) {
	var out [1]Resolution
	r.ResolveAll(ctx, []Lookup{{PID: pid, Known: true}}, out[:])
	return out[0].Owner, out[0].Err
}

// ResolveAll answers each lookup into out (len(out) must be len(in)), as
// Resolve or ResolveKnown would, reading procfs in bounded batches: every
// PID's stat (its start time) or, for a cached process, its held liveness
// file; then the liveness file (held open from then on), cgroup, environ
// and stat again of the PIDs the cache cannot answer.
//
// A cached PID's liveness file (aliveFile) is held open (bounded.Held) and
// read again through its descriptor, one pread(2) instead of open, fstat,
// read and close of its stat: on procfs the descriptor stays bound to the
// process that was resolved, and fails once it is gone, so a reused PID is
// never answered from the cache. It is opened between the two stat reads
// that showed the same start time, so it is bound to the process those
// reads and the cgroup read between them saw. A listed PID whose held
// file says the process is gone is resolved anew by path: another process
// may have taken it. Where procfs shows the exporter's own PID namespace,
// a pidfd holds a cached process instead (pidfd_linux.go), opened where
// the liveness file would be, and one poll(2) over all of them replaces
// the reads. A cached PID held by neither (past the hold limit) has its
// stat read by path and its start time compared.
func (r *Resolver) ResolveAll(ctx context.Context, in []Lookup, out []Resolution) {
	r.files, r.fileIdx = r.files[:0], r.fileIdx[:0]
	r.pfds.reset()
	for _, l := range in {
		c, ok := r.cache[l.PID]
		switch {
		case ok && c.pidfd != 0:
			// -1 - the pidfd's place in the poll set.
			r.fileIdx = append(r.fileIdx, -1-r.pfds.add(c.pidfd-1))
		case ok && c.held != nil:
			r.fileIdx = append(r.fileIdx, len(r.files))
			r.files = append(r.files, bounded.File{Path: c.held.Path(), Limit: MaxAliveBytes, Held: c.held})
		default:
			r.fileIdx = append(r.fileIdx, len(r.files))
			r.files = append(r.files, bounded.File{Path: r.procPath(l.PID, "stat"), Limit: MaxStatBytes})
		}
	}
	// One poll for every process held by a pidfd; it does not wait. A
	// failed poll sends them all to be resolved anew.
	pollErr := r.pfds.poll()
	r.read(ctx)
	r.misses, r.again = r.misses[:0], r.again[:0]
	for i, l := range in {
		o := &out[i]
		c, ok := r.cache[l.PID]
		var start uint64
		var err error
		switch k := r.fileIdx[i]; {
		case k < 0:
			// The pidfd answers for the process it is bound to.
			if pollErr != nil || r.pfds.exited(-1-k) {
				err = fmt.Errorf("pid %d: %w", l.PID, ErrExited)
			}
			start = c.start
		case r.files[k].Held != nil:
			// So does the held file.
			err = alive(l.PID, r.results[k])
			start = c.start
		default:
			start, err = r.startTime(l.PID, r.files[k].Path, r.results[k])
		}
		if err != nil {
			r.forget(l.PID)
			if ok && (c.held != nil || c.pidfd != 0) && !l.Known && errors.Is(err, ErrExited) {
				r.again = append(r.again, i)
				continue
			}
			*o = Resolution{Err: err}
			continue
		}
		switch {
		case ok && c.start == start:
			c.round = r.round
			r.cache[l.PID] = c
			*o = Resolution{Owner: c.owner, Limits: c.limits}
		case l.Known && ok:
			r.forget(l.PID)
			*o = Resolution{Err: fmt.Errorf("pid %d: not listed and reused: %w", l.PID, ErrExited)}
		case l.Known:
			*o = Resolution{Err: fmt.Errorf("pid %d: not listed and not seen before: %w", l.PID, ErrExited)}
		default:
			if ok && (c.held != nil || c.pidfd != 0) {
				c.held.Close()
				closePidfd(c.pidfd - 1)
				c.held, c.pidfd = nil, 0
				r.cache[l.PID] = c
			}
			r.misses = append(r.misses, miss{i: i, start: start})
		}
	}
	r.readAgain(ctx, in, out)
	if len(r.misses) == 0 {
		return
	}
	r.files, r.newPidfds = r.files[:0], r.newPidfds[:0]
	for _, m := range r.misses {
		pid := in[m.i].PID
		// The pidfd (opened now), liveness file, cgroup and environ before
		// the second stat: the stat read vouches for what was opened and
		// read before it, back to the first.
		hold, pfd := r.hold(), -1
		if hold && r.pidfds {
			pfd = openPidfd(pid)
		}
		r.newPidfds = append(r.newPidfds, pfd)
		r.files = append(r.files,
			bounded.File{Path: r.procPath(pid, aliveFile), Limit: MaxAliveBytes, Hold: hold && pfd < 0},
			bounded.File{Path: r.procPath(pid, "cgroup"), Limit: MaxCgroupBytes},
			bounded.File{Path: r.procPath(pid, "environ"), Limit: MaxEnvironBytes},
			bounded.File{Path: r.procPath(pid, "stat"), Limit: MaxStatBytes})
	}
	r.read(ctx)
	const per = 4 // files read per miss
	for k, m := range r.misses {
		pid := in[m.i].PID
		held, pfd := r.results[per*k].Held, r.newPidfds[k]
		if alive(pid, r.results[per*k]) != nil {
			// Not held, but no verdict either: the stat reads around it
			// tell whether the process is still the one first read (a
			// procfs tree without the file, as a test's may be, is
			// resolved by path every collection).
			held.Close()
			held = nil
		}
		owner, err := r.owner(pid, r.files[per*k+1].Path, r.results[per*k+1])
		// An environment that cannot be read (no ptrace access to the
		// process, larger than its cap) leaves the limits unknown; it
		// does not stop attribution.
		var limits Limits
		if env := r.results[per*k+2]; env.Err == nil {
			limits = ParseEnviron(env.Data)
		}
		if err == nil {
			// The cgroup file read may belong to a process that took the
			// PID after the first stat read: the start time must not have
			// moved.
			if again, serr := r.startTime(pid, r.files[per*k+3].Path, r.results[per*k+3]); serr != nil || again != m.start {
				err = fmt.Errorf("pid %d: reused during the read: %w", pid, ErrExited)
			}
		}
		if err != nil {
			r.forget(pid)
			held.Close()
			closePidfd(pfd)
			out[m.i] = Resolution{Err: err}
			continue
		}
		if _, ok := r.cache[pid]; ok || len(r.cache) < r.max {
			r.cache[pid] = cached{start: m.start, owner: owner, limits: limits, round: r.round, held: held, pidfd: pfd + 1}
		} else {
			held.Close()
			closePidfd(pfd)
			r.Uncached++
		}
		out[m.i] = Resolution{Owner: owner, Limits: limits}
	}
}

// readAgain reads by path the stat of the listed PIDs in r.again, whose
// held file said the cached process is gone, and adds them to r.misses.
func (r *Resolver) readAgain(ctx context.Context, in []Lookup, out []Resolution) {
	if len(r.again) == 0 {
		return
	}
	r.files = r.files[:0]
	for _, i := range r.again {
		r.files = append(r.files, bounded.File{Path: r.procPath(in[i].PID, "stat"), Limit: MaxStatBytes})
	}
	r.read(ctx)
	for k, i := range r.again {
		start, err := r.startTime(in[i].PID, r.files[k].Path, r.results[k])
		if err != nil {
			out[i] = Resolution{Err: err}
			continue
		}
		r.misses = append(r.misses, miss{i: i, start: start})
	}
}

// forget drops pid from the cache, closing its held file.
func (r *Resolver) forget(pid uint32) {
	if c, ok := r.cache[pid]; ok {
		c.held.Close()
		closePidfd(c.pidfd - 1)
		delete(r.cache, pid)
	}
}

// Close closes the held files and empties the cache.
func (r *Resolver) Close() {
	for pid := range r.cache {
		r.forget(pid)
	}
}

// read reads r.files into r.results.
func (r *Resolver) read(ctx context.Context) {
	if cap(r.results) < len(r.files) {
		r.results = make([]bounded.Result, len(r.files))
	}
	r.results = r.results[:len(r.files)]
	r.batch.Read(ctx, r.files, r.results)
}

// procPath is <procfs>/<pid>/<name>.
func (r *Resolver) procPath(pid uint32, name string) string {
	r.path = append(append(r.path[:0], r.root...), '/')
	r.path = append(strconv.AppendUint(r.path, uint64(pid), 10), '/')
	r.path = append(r.path, name...)
	return string(r.path)
}

// owner parses a read of <procfs>/<pid>/cgroup.
func (r *Resolver) owner(pid uint32, path string, res bounded.Result) (Owner, error) {
	if res.Err != nil {
		if gone(res.Err) {
			return Owner{}, fmt.Errorf("pid %d: %w", pid, ErrExited)
		}
		return Owner{}, fmt.Errorf("pid %d: %w", pid, res.Err)
	}
	owner, err := ParseCgroup(res.Data)
	if errors.Is(err, errNoCgroup) {
		return Owner{}, fmt.Errorf("pid %d: %w", pid, ErrExited)
	}
	if err != nil {
		return Owner{}, fmt.Errorf("%s: %w", path, err)
	}
	return owner, nil
}

// alive checks a read of a process's liveness file: it fails once the
// process is gone (ESRCH on procfs; whoever plays procfs with regular
// files empties it, as RemoveProcess does).
func alive(pid uint32, res bounded.Result) error {
	if res.Err != nil {
		if gone(res.Err) {
			return fmt.Errorf("pid %d: %w", pid, ErrExited)
		}
		return fmt.Errorf("pid %d: %w", pid, res.Err)
	}
	if len(res.Data) == 0 {
		return fmt.Errorf("pid %d: %w", pid, ErrExited)
	}
	return nil
}

// startTime parses field 22 of a read of <procfs>/<pid>/stat, the
// process's start time in clock ticks since boot (proc(5)). Field 2, the
// command name in parentheses, may hold spaces and parentheses itself, so
// fields are counted from the last ')'.
func (r *Resolver) startTime(pid uint32, path string, res bounded.Result) (uint64, error) {
	b, err := res.Data, res.Err
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
	// Fields are counted by hand: bytes.Fields allocated a slice per
	// process per collection.
	const startField = 22 - 3
	field, n := statField(b[end+1:], startField)
	if field == nil {
		return 0, fmt.Errorf("%s: %d fields after the command name, want at least %d", path, n, startField+1)
	}
	v, err := strconv.ParseUint(string(field), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: start time: %w", path, err)
	}
	return v, nil
}

// statField returns the k-th (from 0) of the fields of b separated by
// ASCII white space, or nil and how many fields b has.
func statField(b []byte, k int) ([]byte, int) {
	n := 0
	for i := 0; i < len(b); {
		if asciiSpace(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && !asciiSpace(b[j]) {
			j++
		}
		if n == k {
			return b[i:j], n
		}
		n++
		i = j
	}
	return nil, n
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// gone reports whether a read failed because the process is gone: its
// /proc directory no longer exists (ENOENT) or the kernel refuses reads of
// an exiting task (ESRCH).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}
