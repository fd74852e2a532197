package doctor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
)

// Fake procfs trees. In the host's PID namespace PID 2 is kthreadd, whose
// parent is PID 0 (proc(5), /proc/<pid>/stat field 4); in a container's
// namespace PID 2 is one of its processes, child of its PID 1.
const (
	kthreadd      = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0 18446744073709551615\n"
	containerPID2 = "2 (sh) S 1 2 2 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 500 1000000 100 18446744073709551615\n"
	podCgroup     = "0::/kubepods/burstable/podaaaaaaaa-0000-4000-8000-000000000001/b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0\n"
	hostCgroup    = "0::/system.slice/xorg.service\n"
)

// A pod without hostPID: the exporter is PID 1, its first thread TID 2
// with PID 1's parent, 0 (/proc/2/stat read in such a namespace).
const exporterThread = "2 (gpu-exporter) S 0 0 0 0 -1 4194368 209 0 0 0 0 0 0 0 20 0 4 0 3379233 1256628224 546 18446744073709551615\n"

// procTree writes a fake procfs: PID 2's stat (none when pid2 is empty)
// and a process for each pid -> cgroup.
func procTree(t *testing.T, pid2 string, procs map[uint32]string) string {
	t.Helper()
	root := t.TempDir()
	if pid2 != "" {
		write(t, mkdir(t, root, "2"), "stat", pid2)
	}
	for pid, cg := range procs {
		if err := processes.WriteProcess(root, pid, "python3", 1000, cg); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func mkdir(t *testing.T, parts ...string) string {
	t.Helper()
	d := filepath.Join(parts...)
	if err := os.MkdirAll(d, 0o750); err != nil {
		t.Fatal(err)
	}
	return d
}

// fixedSampler lists the same devices, or fails, each time.
type fixedSampler struct {
	devs []processes.Device
	err  error
}

func (f fixedSampler) Sample(context.Context) ([]processes.Device, error) { return f.devs, f.err }
func (fixedSampler) Close() error                                         { return nil }

// onGPU0 lists pids on one whole GPU.
func onGPU0(pids ...uint32) fixedSampler {
	d := processes.Device{GPU: 0, UUID: testUUID, GPUInstance: -1}
	for _, pid := range pids {
		d.Processes = append(d.Processes, processes.Process{PID: pid, Type: processes.Compute})
	}
	return fixedSampler{devs: []processes.Device{d}}
}

func TestCheckProcesses(t *testing.T) {
	t.Parallel()
	withNVML := func(s processes.Sampler, procfs string) func() *ProcessSampling {
		return func() *ProcessSampling { return &ProcessSampling{Sampler: s, Procfs: procfs, HostPIDs: true} }
	}
	hostTree := func(t *testing.T) string {
		return procTree(t, kthreadd, map[uint32]string{100: podCgroup, 200: hostCgroup})
	}
	unavailable := fixedSampler{err: fmt.Errorf("nvml init: ERROR_LIBRARY_NOT_FOUND: %w", processes.ErrUnavailable)}
	cases := []struct {
		name string
		// procs sets Config.Processes; procfs is the tree it may use.
		procs    func(t *testing.T) Processes
		nodeName string
		want     Status
		found    string // substring of Found
		fix      string // substring of Fix
		details  string // substring of one detail line
	}{
		{
			name:  "off is skipped",
			procs: func(*testing.T) Processes { return Processes{Mode: processes.ModeOff, Runs: true} },
			want:  OK, found: "skipped: process accounting is off",
		},
		{
			name:  "dcgm naming, the default mode: skipped",
			procs: func(*testing.T) Processes { return Processes{Mode: processes.ModeContainer, Naming: "dcgm"} },
			want:  OK, found: "--naming=dcgm does not run process accounting",
		},
		{
			name: "dcgm naming, container mode given: no effect",
			procs: func(*testing.T) Processes {
				return Processes{Mode: processes.ModeContainer, Given: true, Naming: "dcgm"}
			},
			want: Warn, found: "--collect.processes=container has no effect", fix: "--naming=prometheus",
		},
		{
			name: "the source did not open",
			procs: func(*testing.T) Processes {
				return Processes{Mode: processes.ModeContainer, Runs: true, Sampling: func() *ProcessSampling { return nil }}
			},
			want: Warn, found: "not checked", fix: "gpu-source",
		},
		{
			name: "host namespace, pods named",
			procs: func(t *testing.T) Processes {
				return Processes{Mode: processes.ModeContainer, Runs: true, Sampling: withNVML(onGPU0(100, 200), hostTree(t))}
			},
			nodeName: "node-1",
			want:     OK, found: "1 devices sampled, 2 GPU processes",
			details: "2 GPU processes: 1 in pods' containers, 1 on the host, 0 not in procfs",
		},
		{
			name: "no NODE_NAME: pod UIDs only",
			procs: func(t *testing.T) Processes {
				return Processes{Mode: processes.ModeContainer, Runs: true, Sampling: withNVML(onGPU0(100), hostTree(t))}
			},
			want: Warn, fix: "NODE_NAME", details: "labelled with pod_uid and container_id",
		},
		{
			name: "NVML missing, the default mode",
			procs: func(t *testing.T) Processes {
				return Processes{Mode: processes.ModeContainer, Runs: true, Sampling: withNVML(unavailable, hostTree(t))}
			},
			nodeName: "node-1",
			want:     Warn, found: "NVML cannot be loaded or initialised", fix: "--collect.processes=off",
		},
		{
			name: "NVML missing, the mode given",
			procs: func(t *testing.T) Processes {
				return Processes{Mode: processes.ModeProcess, Given: true, Runs: true, Sampling: withNVML(unavailable, hostTree(t))}
			},
			nodeName: "node-1",
			want:     Fail, found: "--collect.processes=process: NVML cannot be loaded",
		},
		{
			name: "a container's PID namespace",
			procs: func(t *testing.T) Processes {
				tree := procTree(t, containerPID2, map[uint32]string{1: hostCgroup})
				return Processes{Mode: processes.ModeContainer, Given: true, Runs: true, Sampling: withNVML(onGPU0(100), tree)}
			},
			nodeName: "node-1",
			want:     Fail, found: "shows a container's PID namespace", fix: "hostPID: true",
		},
		{
			name: "a container's PID namespace, PID 2 is PID 1's thread",
			procs: func(t *testing.T) Processes {
				tree := procTree(t, exporterThread, map[uint32]string{1: hostCgroup})
				return Processes{Mode: processes.ModeContainer, Given: true, Runs: true, Sampling: withNVML(onGPU0(1), tree)}
			},
			nodeName: "node-1",
			want:     Fail, found: "shows a container's PID namespace", fix: "hostPID: true",
		},
		{
			name: "no PID 2",
			procs: func(t *testing.T) Processes {
				tree := procTree(t, "", map[uint32]string{1: hostCgroup})
				return Processes{Mode: processes.ModeContainer, Runs: true, Sampling: withNVML(onGPU0(100), tree)}
			},
			nodeName: "node-1",
			want:     Warn, found: "does not show the host's PID namespace", fix: "--path.procfs",
		},
		{
			name: "procfs missing",
			procs: func(t *testing.T) Processes {
				return Processes{Mode: processes.ModeContainer, Given: true, Runs: true, Sampling: withNVML(onGPU0(100), filepath.Join(t.TempDir(), "proc"))}
			},
			nodeName: "node-1",
			want:     Fail, found: "cannot be read", fix: "--path.procfs",
		},
		{
			name: "procfs is not a proc filesystem",
			procs: func(t *testing.T) Processes {
				return Processes{Mode: processes.ModeContainer, Given: true, Runs: true, Sampling: withNVML(onGPU0(100), t.TempDir())}
			},
			nodeName: "node-1",
			want:     Fail, found: "lists no process",
		},
		{
			name: "no listed PID in procfs",
			procs: func(t *testing.T) Processes {
				return Processes{Mode: processes.ModeContainer, Given: true, Runs: true, Sampling: withNVML(onGPU0(4242, 4243), hostTree(t))}
			},
			nodeName: "node-1",
			want:     Fail, found: "none of them is in", fix: "hostPID: true",
		},
		{
			name: "a cgroup file not understood",
			procs: func(t *testing.T) Processes {
				tree := procTree(t, kthreadd, map[uint32]string{100: "nonsense\n"})
				return Processes{Mode: processes.ModeContainer, Runs: true, Sampling: withNVML(onGPU0(100), tree)}
			},
			nodeName: "node-1",
			want:     Warn, fix: "unreadable", details: "100/cgroup",
		},
		{
			name: "some devices fail",
			procs: func(t *testing.T) Processes {
				s := onGPU0(100)
				s.err = fmt.Errorf("GPU-1: nvmlDeviceGetComputeRunningProcesses: ERROR_GPU_IS_LOST")
				return Processes{Mode: processes.ModeContainer, Runs: true, Sampling: withNVML(s, hostTree(t))}
			},
			nodeName: "node-1",
			want:     Warn, details: "ERROR_GPU_IS_LOST",
		},
		{
			name: "no device answers",
			procs: func(t *testing.T) Processes {
				s := fixedSampler{err: fmt.Errorf("nvmlDeviceGetCount: ERROR_UNKNOWN")}
				return Processes{Mode: processes.ModeContainer, Given: true, Runs: true, Sampling: withNVML(s, hostTree(t))}
			},
			nodeName: "node-1",
			want:     Fail, found: "listing the GPUs' processes: nvmlDeviceGetCount",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Processes: tc.procs(t), NodeName: tc.nodeName, Timeout: 5 * time.Second}
			res := checkProcesses(context.Background(), cfg)
			if res.Check != CheckProcesses || res.Status != tc.want {
				t.Errorf("%s %s, want %s %s: %+v", res.Check, res.Status, CheckProcesses, tc.want, res)
			}
			if !strings.Contains(res.Found, tc.found) {
				t.Errorf("found %q, want %q", res.Found, tc.found)
			}
			if !strings.Contains(res.Fix, tc.fix) || (res.Status == OK) != (res.Fix == "") {
				t.Errorf("status %s with fix %q, want %q", res.Status, res.Fix, tc.fix)
			}
			if tc.details != "" && !strings.Contains(strings.Join(res.Details, "\n"), tc.details) {
				t.Errorf("details %q, want a line with %q", res.Details, tc.details)
			}
		})
	}
}

// TestCheckProcessesSimulator runs the simulator's process sampler on its
// own procfs tree, as --source=sim does: its time-sliced GPUs' processes
// resolve to pods and the host, named by the simulator.
func TestCheckProcessesSimulator(t *testing.T) {
	t.Parallel()
	scn, err := sim.LoadBuiltin("timeslicing")
	if err != nil {
		t.Fatal(err)
	}
	src := sim.New(scn)
	t.Cleanup(func() { _ = src.Close() })
	root := t.TempDir()
	ps, err := src.ProcessSampler(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	cfg := Config{Timeout: 5 * time.Second, Processes: Processes{Mode: processes.ModeContainer, Runs: true, Sampling: func() *ProcessSampling {
		return &ProcessSampling{Sampler: ps, Procfs: root, Pods: true}
	}}}
	res := checkProcesses(context.Background(), cfg)
	details := strings.Join(res.Details, "\n")
	if res.Status != OK || !strings.Contains(details, "named by the simulator") || !strings.Contains(details, "0 not in procfs") {
		t.Errorf("%s %q, want ok with every process resolved and named by the simulator:\n%s", res.Status, res.Found, details)
	}
	if strings.Contains(res.Found, " 0 GPU processes") {
		t.Errorf("found %q: the timeslicing scenario runs processes", res.Found)
	}
}

// TestCheckProcessesBounded: a procfs file that would block (here a named
// pipe nobody writes) is refused without being opened, and the check ends
// with a verdict, not a hang. A read that blocks in the kernel is abandoned
// at its deadline (pkg/bounded, pkg/processes' resolver tests).
func TestCheckProcessesBounded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tree   func(t *testing.T) string
		status Status
		found  string
	}{
		{"PID 2's stat blocks", func(t *testing.T) string {
			root := procTree(t, "", map[uint32]string{100: podCgroup})
			mkdir(t, root, "2")
			mkfifo(t, filepath.Join(root, "2", "stat"))
			return root
		}, Fail, "not a regular file (it is a named pipe)"},
		{"a GPU process's cgroup blocks", func(t *testing.T) string {
			root := procTree(t, kthreadd, map[uint32]string{100: podCgroup})
			if err := os.Remove(filepath.Join(root, "100", "cgroup")); err != nil {
				t.Fatal(err)
			}
			mkfifo(t, filepath.Join(root, "100", "cgroup"))
			return root
		}, Warn, "1 GPU processes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tree := tc.tree(t)
			cfg := Config{NodeName: "node-1", Timeout: 200 * time.Millisecond, Processes: Processes{
				Mode: processes.ModeContainer, Given: true, Runs: true,
				Sampling: func() *ProcessSampling {
					return &ProcessSampling{Sampler: onGPU0(100), Procfs: tree, HostPIDs: true}
				},
			}}
			done := make(chan Result, 1)
			go func() { done <- checkProcesses(context.Background(), cfg) }()
			select {
			case res := <-done:
				if res.Status != tc.status || !strings.Contains(res.Found, tc.found) {
					t.Errorf("%s %q, want %s with %q", res.Status, res.Found, tc.status, tc.found)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the check still blocked after 20s, its deadline 200ms")
			}
		})
	}
}
