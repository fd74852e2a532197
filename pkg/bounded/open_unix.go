//go:build unix

package bounded

import "syscall"

// openNonBlocking keeps open(2) from blocking on a named pipe that has no
// writer (fifo(7)); it does not change reads of a regular file.
const openNonBlocking = syscall.O_NONBLOCK
