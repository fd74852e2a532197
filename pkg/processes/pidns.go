package processes

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// HostPIDNamespace reports whether procfs shows the host's (the initial)
// PID namespace. NVML reports GPU processes by their PIDs in that
// namespace, whatever the caller's: "the nvidia-driver itself does not
// support pid-namespaces ... you will always get the host pids"
// (NVIDIA/nvidia-docker issue 1483). In a container's namespace those PIDs
// do not exist, or name unrelated processes of the container.
//
// The test: only the initial namespace shows kernel threads, and its PID 2
// is kthreadd, whose parent is the idle task, PID 0 (/proc/<pid>/stat
// field 4, proc(5)); in any other namespace only PID 1 has parent 0
// (pid_namespaces(7): the namespace's init sees no parent).
func HostPIDNamespace(procfs string) (bool, error) {
	path := filepath.Join(procfs, "2", "stat")
	b, err := os.ReadFile(path) //nolint:gosec // G304: the operator's --path.procfs
	if err != nil {
		return false, fmt.Errorf("pid 2: %w", err)
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return false, fmt.Errorf("%s: no command name in parentheses", path)
	}
	// After ')' come field 3 (state) and field 4 (ppid).
	f := bytes.Fields(b[end+1:])
	if len(f) < 2 {
		return false, fmt.Errorf("%s: no parent PID", path)
	}
	return string(f[1]) == "0", nil
}
