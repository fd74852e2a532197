//go:build unix

package bounded

import (
	"errors"
	"io/fs"
	"syscall"
)

// readRegular reads the regular file at path, at most limit bytes,
// appending to buf. It opens with O_NONBLOCK, so that opening a named pipe
// that has no writer returns at once (fifo(7)); the type is checked on the
// open file, so a path replaced by something else is refused too; reads of
// a regular file do not change with O_NONBLOCK. System calls, not os.File:
// it runs for every GPU process of every collection (procfs), and an
// os.File costs three allocations and a finalizer for a read of a few
// hundred bytes.
func readRegular(path string, limit int64, buf []byte) ([]byte, error) {
	fd, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd) //nolint:errcheck // read only: nothing to lose at close
	if size > limit {
		return nil, tooLarge(path, limit)
	}
	from := len(buf)
	if buf == nil {
		buf = make([]byte, 0, min(limit+1, 512))
	}
	for int64(len(buf)-from) <= limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := buf[len(buf):min(cap(buf), from+int(limit)+1)]
		n, err := retry(func() (int, error) { return syscall.Read(fd, room) })
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
	return nil, tooLarge(path, limit) // it grew since the stat, or its size says less
}

// openRegular opens path read-only with O_NONBLOCK and checks on the open
// file that it is a regular file, returning its descriptor and size; the
// descriptor is closed when it is not.
func openRegular(path string) (int, int64, error) {
	fd, err := retry(func() (int, error) {
		return syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return -1, 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if _, err := retry(func() (int, error) { return 0, syscall.Fstat(fd, &st) }); err != nil {
		syscall.Close(fd) //nolint:errcheck // read only: nothing to lose at close
		return -1, 0, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd) //nolint:errcheck // read only: nothing to lose at close
		return -1, 0, notRegular(path, modeOf(uint32(st.Mode)))
	}
	return fd, st.Size, nil
}

// retry repeats a system call interrupted by a signal (the Go runtime
// preempts with SIGURG).
func retry(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if !errors.Is(err, syscall.EINTR) {
			return n, err
		}
	}
}

// modeOf turns a stat mode's file type into an fs.FileMode's.
func modeOf(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	default:
		return fs.ModeIrregular
	}
}
