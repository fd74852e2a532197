package bounded

import (
	"context"
	"fmt"
	"time"
)

// Batch reads many small files in order on one goroutine, for callers that
// read hundreds of them per collection (procfs: a stat and a cgroup file
// per GPU process). Handing each read to a goroutine of its own, as Call
// does, doubled the cost of process accounting on a node of 1,024 GPU
// processes (BenchmarkAccountantCollect64x16); a Batch hands over one list
// per call instead, and bounds each read by watching that the list makes
// progress.
//
// A read that makes no progress for Stall (a process stuck in the kernel
// behind its /proc file) is abandoned with its goroutine, as Call abandons
// one: until it returns, reads of that path fail at once with ErrPending.
// The rest of the list goes on, on a new goroutine. When ctx ends, the
// reads not done fail with its error.
//
// A Batch is not safe for concurrent use: one collector goroutine owns it.
type Batch struct {
	// Stall bounds one read: a read during which the list makes no
	// progress for between one and two Stalls is abandoned; 0 means ctx
	// alone bounds them.
	Stall time.Duration
	// ReadFile reads one file, capped at limit, appending to buf; nil
	// means the regular-file read of ReadFile. Tests put a read that
	// blocks in its place.
	ReadFile func(path string, limit int64, buf []byte) ([]byte, error)

	// buf is the storage of the last list's results, reused when nothing
	// of that list was abandoned.
	buf []byte
}

// File is a path to read and its cap.
type File struct {
	Path  string
	Limit int64
	// Hold asks to keep the file open: Result.Held is then set when the
	// read succeeds (nil where files cannot be held, or when ReadFile
	// stands in for the read).
	Hold bool
	// Held, when set, is read again from its start in place of opening
	// Path (which should be Held.Path(): reads given up on are held
	// pending by Path).
	Held *Held
}

// Result is one file's content or error. Data aliases the Batch's storage
// and stays valid until the next Read. Held is the file kept open for
// File.Hold; the caller closes it.
type Result struct {
	Data []byte
	Err  error
	Held *Held
}

// batchRun is one goroutine's part of a list. Under abandoned's lock it
// publishes result i and then moves progress past i; the caller gives up
// under the same lock, so it takes exactly the results below progress, and
// the path at progress, still being read, is the one held pending.
type batchRun struct {
	files    []File
	results  []Result
	progress int  // guarded by abandoned's lock
	gaveUp   bool // guarded by abandoned's lock
	buf      []byte
	done     chan struct{}
}

// Read reads files into out (len(out) must be len(files)), in order.
func (b *Batch) Read(ctx context.Context, files []File, out []Result) {
	read := b.ReadFile
	if read == nil {
		read = readRegular
	}
	for start := 0; start < len(files); {
		if ctx.Err() != nil {
			stopped(ctx, files[start:], out[start:])
			return
		}
		run := &batchRun{files: files[start:], results: make([]Result, len(files)-start), done: make(chan struct{})}
		buf := b.buf[:0]
		b.buf = nil // the run owns it until it is done
		go run.loop(read, b.ReadFile == nil, buf)
		n, finished := b.wait(ctx, run)
		copy(out[start:], run.results[:n])
		if finished {
			return
		}
		at := start + n
		if ctx.Err() != nil {
			stopped(ctx, files[at:], out[at:])
			return
		}
		out[at] = Result{Err: fmt.Errorf("%s: no answer within %s: %w: %w", files[at].Path, b.Stall, ErrAbandoned, context.DeadlineExceeded)}
		start = at + 1
	}
}

func stopped(ctx context.Context, files []File, out []Result) {
	for i, f := range files {
		out[i] = Result{Err: fmt.Errorf("%s: reading stopped: %w", f.Path, context.Cause(ctx))}
	}
}

// wait waits for run to finish, to make no progress for a Stall, or for
// ctx to end. It returns how many of run's results are taken, and whether
// run finished.
func (b *Batch) wait(ctx context.Context, run *batchRun) (int, bool) {
	var tick <-chan time.Time
	if b.Stall > 0 {
		t := time.NewTicker(b.Stall)
		defer t.Stop()
		tick = t.C
	}
	last := -1
	for {
		select {
		case <-run.done:
			b.buf = run.buf
			return len(run.files), true
		case <-ctx.Done():
			if n, given := run.giveUp(); given {
				return n, false
			}
		case <-tick:
			abandoned.Lock()
			n := run.progress
			abandoned.Unlock()
			if n != last {
				last = n
				continue
			}
			if n, given := run.giveUp(); given {
				return n, false
			}
		}
		// The run finished as it was given up on.
		<-run.done
		b.buf = run.buf
		return len(run.files), true
	}
}

// giveUp abandons the run at its progress, holding the path in flight
// pending; false when the run had already finished.
func (r *batchRun) giveUp() (int, bool) {
	abandoned.Lock()
	defer abandoned.Unlock()
	if r.progress == len(r.files) {
		return 0, false
	}
	r.gaveUp = true
	abandoned.keys[r.files[r.progress].Path]++
	return r.progress, true
}

// loop reads the run's paths in order until it is done or given up on.
func (r *batchRun) loop(read func(string, int64, []byte) ([]byte, error), canHold bool, buf []byte) {
	for i, f := range r.files {
		p := f.Path
		abandoned.Lock()
		if r.gaveUp {
			abandoned.Unlock()
			return
		}
		pending := abandoned.keys[p] > 0
		abandoned.Unlock()
		var res Result
		if pending {
			res.Err = fmt.Errorf("%s: %w", p, ErrPending)
		} else {
			from := len(buf)
			var data []byte
			var err error
			switch {
			case f.Held != nil:
				data, err = f.Held.again(f.Limit, buf)
			case f.Hold && canHold:
				data, res.Held, err = openHeld(p, f.Limit, buf)
			default:
				data, err = read(p, f.Limit, buf)
			}
			if err == nil {
				buf = data
				res.Data = data[from:len(data):len(data)]
			} else {
				res.Err = err
			}
		}
		abandoned.Lock()
		if r.gaveUp {
			// This read was the one given up on: it is back.
			res.Held.Close()
			if abandoned.keys[p]--; abandoned.keys[p] <= 0 {
				delete(abandoned.keys, p)
			}
			abandoned.Unlock()
			return
		}
		r.results[i] = res
		r.progress = i + 1
		abandoned.Unlock()
	}
	r.buf = buf
	close(r.done)
}
