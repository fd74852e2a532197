package sim

import (
	"context"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

func utilField(t *testing.T) []fields.Field {
	t.Helper()
	f, ok := fields.MustNew().Lookup("DCGM_FI_DEV_GPU_UTIL")
	if !ok {
		t.Fatal("no DCGM_FI_DEV_GPU_UTIL")
	}
	return []fields.Field{f}
}

func newSampler(t *testing.T, s *player) (*ProcessSampler, string) {
	t.Helper()
	root := t.TempDir()
	ps, err := s.src.ProcessSampler(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps, root
}

// On every GPU of the time-slicing scenario the processes' SM utilization
// adds up to the device's, and the real resolver attributes every process
// written into the fake procfs to its pod and container.
func TestTimeslicingProcessesAddUp(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "timeslicing"), utilField(t))
	ps, root := newSampler(t, s)
	acc, err := processes.NewAccountant(processes.Config{Procfs: root, Mode: processes.ModeContainer, Pods: ps}, ps, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{0, 17 * time.Second, 2 * time.Minute, 4*time.Minute + 3*time.Second} {
		smp := s.readAt(at)
		usage, err := acc.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(usage) != 4 {
			t.Fatalf("at %s: %d devices, want 4 GPUs", at, len(usage))
		}
		for _, d := range usage {
			device, _ := smp.At(d.GPU, 0).Number()
			sum := 0.0
			for _, c := range d.Containers {
				if c.Namespace == "" && c.PodUID != "" && c.PodUID != orphanUID {
					t.Errorf("at %s: %s: process not named: %+v", at, d.UUID, c)
				}
				sum += c.SM
			}
			if math.Abs(sum*100-device) > 0.5 {
				t.Errorf("at %s: GPU %d: containers add up to %.2f, device utilization %v", at, d.GPU, sum*100, device)
			}
		}
		gpu0 := usage[0].Containers
		byPod := map[string]float64{}
		for _, c := range gpu0 {
			byPod[c.Pod] = c.SM
		}
		if len(gpu0) != 4 || byPod["shared-a"] < 0.3 || byPod["shared-b"] != 0 || byPod[""] != 0.01 {
			t.Errorf("at %s: GPU 0 containers = %+v; want busy shared-a, idle shared-b, the host's Xorg", at, gpu0)
		}
	}
}

func TestSamplerMPSAndTypes(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "timeslicing"), utilField(t))
	ps, _ := newSampler(t, s)
	s.readAt(time.Minute)
	devs, err := ps.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range devs[1].Processes {
		if p.Type != processes.MPS || !p.UsedKnown || p.UsedBytes != 12000<<20 {
			t.Errorf("GPU 1 process %+v; want an MPS client with 12000 MiB", p)
		}
	}
	xorg := devs[0].Processes[0]
	if xorg.PID != 2101 || xorg.Type != processes.Graphics {
		t.Errorf("GPU 0 first process %+v; want the host's Xorg", xorg)
	}
}

const migProcesses = `
defaults: {fields: {DCGM_FI_DEV_GPU_UTIL: 5}}
gpus:
  - model: "NVIDIA A100-SXM4-80GB"
    memory_mib: 81920
    mig:
      - {profile: 3g.40gb, gpu_instance: 1, memory_mib: 40000}
      - {profile: 3g.40gb, gpu_instance: 2, memory_mib: 40000}
  - model: "NVIDIA A100-SXM4-80GB"
    memory_mib: 81920
pods:
  - namespace: ml
    name: mig-job
    cgroup: v1/cgroupfs/containerd
    until: 1m
    repeat: 2m
    containers:
      - name: main
        devices: [{resource: nvidia.com/mig-3g.40gb, mig: [{gpu: 0, gpu_instance: 2}]}]
        processes:
          - {pid: 300, mig: {gpu: 0, gpu_instance: 2}, memory_mib: 9000, sm: 50}
`

// A process on a MIG instance is listed under the instance, without
// per-process utilization (NVML has none under MIG); a pod that comes back
// runs a new process under the same PID (a reused PID), which the resolver
// resolves anew.
func TestSamplerMIGAndPIDReuse(t *testing.T) {
	t.Parallel()
	s := newSim(t, parse(t, migProcesses), utilField(t))
	ps, root := newSampler(t, s)
	r, err := processes.NewResolver(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.readAt(10 * time.Second)
	devs, err := ps.Sample(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 3 || devs[0].GPUInstance != 1 || devs[1].GPUInstance != 2 || devs[2].GPUInstance != -1 {
		t.Fatalf("devices = %+v; want GPU 0's two instances, then GPU 1", devs)
	}
	mig := devs[1]
	if mig.Utilization || len(mig.Processes) != 1 || mig.Processes[0].Sampled || mig.Processes[0].UsedBytes != 9000<<20 {
		t.Errorf("MIG device = %+v", mig)
	}
	r.Begin()
	o1, err := r.Resolve(t.Context(), 300)
	if err != nil || o1.Host() {
		t.Fatalf("Resolve = %+v, %v", o1, err)
	}
	start1 := ps.written[300]

	// Gone between 1m and 2m: the tree forgets it.
	s.readAt(90 * time.Second)
	if _, err := ps.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Begin()
	if _, err := r.Resolve(t.Context(), 300); err == nil {
		t.Error("a process of a pod that left still resolves")
	}
	// Back at 2m10s: same PID, new start time.
	s.readAt(130 * time.Second)
	if _, err := ps.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ps.written[300] == start1 {
		t.Error("the returning pod's process kept the old start time")
	}
}

// Every cgroup format the simulator writes parses to its pod and
// container with the real parser, in every QoS class.
func TestCgroupFormatsParse(t *testing.T) {
	t.Parallel()
	uid := "0d7f8e21-3c4b-4a59-8e6f-7a8b9c0d1e2f"
	cid := containerID("s", uid, "main")
	for _, format := range cgroupFormats {
		for _, qos := range qosClasses {
			content := cgroupFile(format, qos, uid, cid)
			o, err := processes.ParseCgroup([]byte(content))
			if err != nil || o.PodUID != uid || o.ContainerID != cid {
				t.Errorf("%s %s: %q parsed as %+v, %v", format, qos, content, o, err)
			}
		}
	}
}

func TestProcessScenarioErrors(t *testing.T) {
	t.Parallel()
	gpus := "gpus:\n  - {model: A100, memory_mib: 1000}\n  - model: A100\n    memory_mib: 81920\n    mig: [{profile: 3g.40gb, gpu_instance: 1, memory_mib: 40000}]\n"
	pod := func(procs string) string {
		return gpus + "pods:\n  - namespace: a\n    name: b\n    containers:\n      - name: c\n        processes: " + procs + "\n"
	}
	cases := []struct{ name, in, want string }{
		{"no pid", pod("[{gpu: 0}]"), `missing key "pid"`},
		{"pid 1", pod("[{pid: 1, gpu: 0}]"), "pid"},
		{"duplicate pid", pod("[{pid: 5, gpu: 0}, {pid: 5, gpu: 0}]"), "already used"},
		{"no device", pod("[{pid: 5}]"), "needs gpu or mig"},
		{"both devices", pod("[{pid: 5, gpu: 0, mig: {gpu: 1, gpu_instance: 1}}]"), "not both"},
		{"MIG GPU as whole", pod("[{pid: 5, gpu: 1}]"), "MIG mode"},
		{"no such instance", pod("[{pid: 5, mig: {gpu: 1, gpu_instance: 7}}]"), "no MIG instance 7"},
		{"bad type", pod("[{pid: 5, gpu: 0, type: vgpu}]"), "unknown process type"},
		{"bad sm", pod("[{pid: 5, gpu: 0, sm: lots}]"), "sm"},
		{"bad cgroup format", gpus + "pods:\n  - {namespace: a, name: b, cgroup: v3/x/y, containers: [{name: c}]}\n", "unknown cgroup format"},
		{"host cgroup only on host", pod("[{pid: 5, gpu: 0, cgroup: /x}]"), `unknown key "cgroup"`},
		{"host process without pid", gpus + "host_processes: [{gpu: 0}]\n", `missing key "pid"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("test.yaml", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "test.yaml:") {
				t.Fatalf("error = %v, want one naming test.yaml:<line> and containing %q", err, tc.want)
			}
		})
	}
}

// Scenarios without processes keep their device utilization from their
// field specs.
func TestNoProcessesKeepsDeviceUtilization(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "demo"), utilField(t))
	if s.src.HasProcesses() {
		t.Fatal("the demo scenario has processes")
	}
	smp := s.readAt(time.Minute)
	if v := smp.At(0, 0); v.Kind == source.Blank {
		t.Error("demo GPU 0 utilization is blank")
	}
}

// A process that takes a PID the tree shows for another is written after
// the other's removal, as the kernel reaps a PID before reusing it: a
// liveness file a resolver holds open for the old process stops
// answering (reads empty) instead of answering for the new one.
func TestSamplerReusedPIDEmptiesHeldFiles(t *testing.T) {
	t.Parallel()
	s := newSim(t, parse(t, migProcesses), utilField(t))
	ps, root := newSampler(t, s)
	s.readAt(10 * time.Second)
	if _, err := ps.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(root, "300", "oom_score_adj"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The tree last wrote another process under the PID.
	ps.written[300]--
	if err := ps.writeTree(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 16)
	if n, _ := f.ReadAt(b, 0); n != 0 {
		t.Errorf("the old process's held liveness file reads %q; want it emptied", b[:n])
	}
	if b, err := os.ReadFile(filepath.Join(root, "300", "oom_score_adj")); err != nil || len(b) == 0 {
		t.Errorf("the new process's liveness file: %q, %v", b, err)
	}
}

// The kai scenario's fractional pods run processes started with the
// environment KAI's binder gives a fraction container: the accountant
// reads GPU_PORTION as their share of the GPU's memory, mechanism kai.
func TestKAIFractionShares(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "kai"), utilField(t))
	ps, root := newSampler(t, s)
	acc, err := processes.NewAccountant(processes.Config{Procfs: root, Mode: processes.ModeContainer, Pods: ps}, ps, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.readAt(time.Minute)
	usage, err := acc.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"frac-train": 0.5, "frac-notebook": 0.25}
	got := map[string]float64{}
	for _, d := range usage {
		for _, c := range d.Containers {
			if c.Mechanism == processes.MechanismKAI {
				if d.GPU != 0 {
					t.Errorf("%s/%s has a KAI share on GPU %d", c.Namespace, c.Pod, d.GPU)
				}
				got[c.Pod] = c.MemoryShare
			}
		}
	}
	if !maps.Equal(got, want) {
		t.Errorf("KAI shares %v, want %v", got, want)
	}
}
