//go:build !unix

package bounded

// openNonBlocking is unix only; elsewhere the type check and the deadline
// guard the read.
const openNonBlocking = 0
