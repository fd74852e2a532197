//go:build unix

package bounded

import (
	"fmt"
	"io/fs"
	"syscall"
)

// openHeld is readRegular keeping the file open: it returns the content
// and the Held file.
func openHeld(path string, limit int64, buf []byte) ([]byte, *Held, error) {
	fd, _, err := openRegular(path)
	if err != nil {
		return nil, nil, err
	}
	h := &Held{path: path, fd: fd}
	data, err := h.readAt(limit, buf)
	if err != nil {
		closeFD(fd)
		return nil, nil, err
	}
	return data, h, nil
}

// again reads h from its start, at most limit bytes, appending to buf.
func (h *Held) again(limit int64, buf []byte) ([]byte, error) {
	if !h.acquire() {
		return nil, fmt.Errorf("%s: %w", h.path, ErrClosed)
	}
	defer h.release()
	return h.readAt(limit, buf)
}

// readAt reads the file from offset 0, stopping at the first short
// read: a regular file of a local file system returns less than asked only
// at its end, and so do procfs's files (seq_file's single_open files such
// as stat and cgroup hand over everything that fits in one call,
// fs/seq_file.c; environ copies until the buffer is full or the
// environment ends, fs/proc/base.c environ_read). A second pread at the
// end would make the kernel generate a seq_file again to find its end.
func (h *Held) readAt(limit int64, buf []byte) ([]byte, error) {
	from := len(buf)
	if buf == nil {
		buf = make([]byte, 0, min(limit+1, 512))
	}
	for int64(len(buf)-from) <= limit {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		room := buf[len(buf):min(cap(buf), from+int(limit)+1)]
		off := int64(len(buf) - from)
		n, err := retry(func() (int, error) { return syscall.Pread(h.fd, room, off) })
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: h.path, Err: err}
		}
		buf = buf[:len(buf)+n]
		if n < len(room) {
			return buf, nil
		}
	}
	return nil, tooLarge(h.path, limit)
}

func closeFD(fd int) { _ = syscall.Close(fd) }

// HoldLimit is how many files a process may keep held: a quarter of its
// limit on open files (RLIMIT_NOFILE, which the Go runtime raises to the
// hard limit at start), so that held files never starve other opens.
func HoldLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return int(min(rl.Cur/4, 1<<20)) //nolint:gosec // bounded above
}
