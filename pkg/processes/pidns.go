package processes

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
)

// HostPIDNamespace reports whether procfs shows the host's (the initial)
// PID namespace. NVML reports GPU processes by their PIDs in that
// namespace, whatever the caller's: "the nvidia-driver itself does not
// support pid-namespaces ... you will always get the host pids"
// (NVIDIA/nvidia-docker issue 1483). In a container's namespace those PIDs
// do not exist, or name unrelated processes of the container.
//
// The test: only the initial namespace shows kernel threads, and its PID 2
// is kthreadd, a kernel thread (PF_KTHREAD in /proc/<pid>/stat field 9,
// include/linux/sched.h) whose parent is the idle task, PID 0 (field 4,
// proc(5)). A parent of 0 alone is not enough: in another namespace PID 1
// sees no parent, nor does a process entered with setns (kubectl exec),
// nor PID 1's threads, whose /proc/<tid>/stat is readable though not
// listed (pid_namespaces(7)). The exporter is PID 1 of a pod without
// hostPID, and a Go program's first thread takes TID 2: its
// /proc/2/stat reads "2 (gpu-exporter) S 0 ...".
//
// The read is bounded by ctx, ProcReadTimeout and MaxStatBytes.
func HostPIDNamespace(ctx context.Context, procfs string) (bool, error) {
	path := filepath.Join(procfs, "2", "stat")
	b, err := bounded.ReadFile(ctx, path, MaxStatBytes, ProcReadTimeout)
	if err != nil {
		return false, fmt.Errorf("pid 2: %w", err)
	}
	start, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if start < 0 || end < start {
		return false, fmt.Errorf("%s: no command name in parentheses", path)
	}
	// After ')' come field 3 (state), field 4 (ppid) ... field 9 (flags).
	f := bytes.Fields(b[end+1:])
	if len(f) < 7 {
		return false, fmt.Errorf("%s: no parent PID and flags", path)
	}
	flags, err := strconv.ParseUint(string(f[6]), 10, 64)
	if err != nil {
		return false, fmt.Errorf("%s: flags: %w", path, err)
	}
	return string(b[start+1:end]) == "kthreadd" && string(f[1]) == "0" && flags&pfKthread != 0, nil
}

// pfKthread is PF_KTHREAD, "I am a kernel thread" (include/linux/sched.h).
const pfKthread = 0x00200000
