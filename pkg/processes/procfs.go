package processes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// WriteProcess writes, under the directory root, the files a Resolver
// reads for pid: <root>/<pid>/stat with start as its start time (field 22,
// proc(5)) and comm as its command name, <root>/<pid>/cgroup with cgroup
// as its content, and <root>/<pid>/oom_score_adj, the liveness file a
// Resolver holds open (0, the kernel's default). Files of a PID written
// again are rewritten in place, as one process's files are; a process
// taking the PID of another is written after RemoveProcess of the other,
// as the kernel reuses only a reaped PID. The simulator serves its processes this way, so
// that the real Resolver runs in the demo and in tests.
func WriteProcess(root string, pid uint32, comm string, start uint64, cgroup string) error {
	dir := filepath.Join(root, strconv.FormatUint(uint64(pid), 10))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("fake procfs: %w", err)
	}
	// Fields 3 to 21 as a sleeping process shows them; only 22 matters.
	stat := fmt.Sprintf("%d (%s) S 1 %d %d 0 -1 4194560 100 0 0 0 10 5 0 0 20 0 4 0 %d 1000000 100 18446744073709551615\n",
		pid, comm, pid, pid, start)
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o600); err != nil {
		return fmt.Errorf("fake procfs: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cgroup), 0o600); err != nil {
		return fmt.Errorf("fake procfs: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, aliveFile), []byte("0\n"), 0o600); err != nil {
		return fmt.Errorf("fake procfs: %w", err)
	}
	return nil
}

// WriteEnviron writes <root>/<pid>/environ, the environment the process
// started with, NUL-separated as procfs shows it (proc(5)); the Resolver
// reads the sharing limits from it (limits.go).
func WriteEnviron(root string, pid uint32, env []string) error {
	var b []byte
	for _, kv := range env {
		b = append(append(b, kv...), 0)
	}
	p := filepath.Join(root, strconv.FormatUint(uint64(pid), 10), "environ")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return fmt.Errorf("fake procfs: %w", err)
	}
	return nil
}

// RemoveProcess removes pid's directory under root, as the kernel does when
// the process is reaped. It first empties the process's files: a Resolver
// holds a cached process's liveness file open (bounded.Held), and on procfs
// reads of a held file fail once its process is gone, where a removed
// regular file would still read as before.
func RemoveProcess(root string, pid uint32) error {
	dir := filepath.Join(root, strconv.FormatUint(uint64(pid), 10))
	for _, name := range [...]string{"stat", "cgroup", "environ", aliveFile} {
		if err := os.Truncate(filepath.Join(dir, name), 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("fake procfs: %w", err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("fake procfs: %w", err)
	}
	return nil
}

// validText replaces bytes that are not UTF-8 with U+FFFD: a label value
// that is not UTF-8 makes Prometheus reject the whole scrape.
func validText(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
