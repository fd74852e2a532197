//go:build linux

package processes

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// PID file descriptors (pidfd_open(2), Linux 5.3): where procfs shows the
// exporter's own PID namespace, a cached process is held by a pidfd
// rather than by its liveness file, and one poll(2) over all of them
// tells which processes exited since the previous collection, in place of
// one pread(2) per process. "When the process that it refers to
// terminates, these interfaces indicate the file descriptor as readable"
// (pidfd_open(2)): for a thread-group leader's pidfd, when the whole group
// has exited, as a /proc/<pid> file stops answering then too (pidfd_poll,
// kernel/pid.c: "Inform pollers only when the whole thread group exits").
// A pidfd, like a /proc/<pid> file, stays bound to its process whoever
// takes the PID next.

// pidfdsFor reports whether pidfd_open(2) names the processes procfs
// lists: procfs's "self" is the reading process as procfs's PID namespace
// numbers it, and pidfd_open takes PIDs of the caller's namespace. A
// procfs of another namespace (the host's, read from a container without
// hostPID), or a directory laid out as procfs (tests, the simulator),
// has no such link or another number.
func pidfdsFor(self string) bool {
	return self == strconv.Itoa(os.Getpid())
}

// openPidfd returns a pidfd for pid, -1 when none could be opened (an old
// kernel, a PID that is gone, one that is not a thread-group leader).
func openPidfd(pid uint32) int {
	fd, err := unix.PidfdOpen(int(pid), 0)
	if err != nil {
		return -1
	}
	return fd
}

func closePidfd(fd int) {
	if fd >= 0 {
		_ = unix.Close(fd)
	}
}

// pidfdSet polls a collection's pidfds at once.
type pidfdSet struct {
	fds []unix.PollFd
}

func (s *pidfdSet) reset() { s.fds = s.fds[:0] }

// add adds fd and returns its index.
func (s *pidfdSet) add(fd int) int {
	s.fds = append(s.fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}) //nolint:gosec // a descriptor fits
	return len(s.fds) - 1
}

// poll asks, without waiting, which processes have exited.
func (s *pidfdSet) poll() error {
	if len(s.fds) == 0 {
		return nil
	}
	for {
		_, err := unix.Poll(s.fds, 0)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// exited reports whether the process of the i-th pidfd has exited (or its
// pidfd cannot tell: it is then resolved anew).
func (s *pidfdSet) exited(i int) bool {
	return s.fds[i].Revents != 0
}
