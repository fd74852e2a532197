//go:build !linux

package processes

// pidfd_open(2) is Linux's: elsewhere cached processes are held by their
// liveness file only.

func pidfdsFor(string) bool { return false }

func openPidfd(uint32) int { return -1 }

func closePidfd(int) {}

type pidfdSet struct{}

func (*pidfdSet) reset()          {}
func (*pidfdSet) add(int) int     { return -1 }
func (*pidfdSet) poll() error     { return nil }
func (*pidfdSet) exited(int) bool { return true }
