package bounded

import (
	"errors"
	"sync"
)

// ErrClosed is returned by a read of a Held file after Close.
var ErrClosed = errors.New("held file closed")

// Held is a regular file kept open by a Batch (File.Hold) so that later
// Batch reads read it again from its start (File.Held) instead of opening
// its path: one pread(2) in place of open, fstat, read and close.
//
// On procfs that is also an identity: a file of /proc/<pid> opened once
// stays bound to the process that held the PID then (its struct pid, not
// the number), and reading it fails with ESRCH once that process is gone,
// even when another process has taken the PID (fs/proc/base.c: reads go
// through get_proc_task/get_pid_task of the inode's pid). On other file
// systems a held file reads as it is now, and a file removed since it was
// opened still reads: whoever plays procfs there (processes.RemoveProcess)
// empties a file before removing it, as the kernel's stop answering.
//
// A Held is safe to Close while a read of it is in flight (a read given up
// on): the descriptor is closed when that read returns.
type Held struct {
	path    string
	mu      sync.Mutex
	fd      int
	reading int  // reads in flight, guarded by mu
	closed  bool // guarded by mu
}

// Path returns the path the file was opened at.
func (h *Held) Path() string { return h.path }

// Close closes the file now, or when the read in flight returns.
func (h *Held) Close() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	if h.reading == 0 {
		closeFD(h.fd)
	}
}

// acquire marks a read in flight; false after Close.
func (h *Held) acquire() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.reading++
	return true
}

// release ends a read, closing the descriptor if Close came meanwhile.
func (h *Held) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reading--; h.reading == 0 && h.closed {
		closeFD(h.fd)
	}
}
