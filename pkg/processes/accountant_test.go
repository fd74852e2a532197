package processes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// fixedSampler returns the same devices on every Sample.
type fixedSampler struct {
	devs []Device
	err  error
}

func (f *fixedSampler) Sample(context.Context) ([]Device, error) {
	out := make([]Device, len(f.devs))
	for i, d := range f.devs {
		d.Processes = append([]Process(nil), d.Processes...)
		out[i] = d
	}
	return out, f.err
}

func (*fixedSampler) Close() error { return nil }

// podTable is a PodLookup over a fixed table.
type podTable map[string]podlabels.ContainerRef // "uid/cid" -> ref; "uid/" -> pod only

func (p podTable) LookupContainer(uid, cid string) (podlabels.ContainerRef, bool) {
	if ref, ok := p[uid+"/"+cid]; ok {
		return ref, true
	}
	if ref, ok := p[uid+"/"]; ok {
		return ref, true
	}
	return podlabels.ContainerRef{}, false
}

const (
	busyUID, busyCID = "aaaaaaaa-0000-4000-8000-000000000001", "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0"
	idleUID, idleCID = "aaaaaaaa-0000-4000-8000-000000000002", "c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1"
)

// sharedGPU is a time-sliced GPU: a busy pod with two processes, an idle
// pod and a host process.
func sharedGPU(t *testing.T, root string) *fixedSampler {
	t.Helper()
	writeProc(t, root, 10, 1, cgroupOf(busyUID, busyCID))
	writeProc(t, root, 11, 1, "0::/kubepods/burstable/pod"+busyUID+"/"+busyCID+"\n")
	writeProc(t, root, 20, 1, v1("/kubepods/besteffort/pod"+idleUID+"/"+idleCID))
	writeProc(t, root, 30, 1, "0::/system.slice/xorg.service\n")
	return &fixedSampler{devs: []Device{{GPU: 0, UUID: "GPU-0", GPUInstance: -1, Utilization: true, Processes: []Process{
		{PID: 10, Type: Compute, UsedBytes: 4 << 30, UsedKnown: true, SM: 60, Sampled: true},
		{PID: 11, Type: Compute, UsedBytes: 2 << 30, UsedKnown: true, SM: 25, Sampled: true},
		{PID: 20, Type: Compute, UsedBytes: 1 << 30, UsedKnown: true},
		{PID: 30, Type: Graphics, UsedBytes: 100 << 20, UsedKnown: true, SM: 2, Sampled: true},
	}}}}
}

var names = podTable{
	busyUID + "/" + busyCID: {Namespace: "ml", Pod: "busy", Container: "train"},
	idleUID + "/" + idleCID: {Namespace: "ml", Pod: "idle", Container: "notebook"},
}

func newTestAccountant(t *testing.T, root string, s Sampler, mode Mode, pods PodLookup) (*Accountant, *prometheus.Registry, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	a, err := NewAccountant(Config{Procfs: root, Mode: mode, Pods: pods}, s, slog.New(slog.NewTextHandler(&logs, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	return a, reg, &logs
}

func TestAccountantBusyAndIdlePods(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a, _, _ := newTestAccountant(t, root, sharedGPU(t, root), ModeContainer, names)
	got, err := a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Usage{
		{Who: Who{}, Processes: 1, MemoryBytes: 100 << 20, MemoryKnown: true, SM: 0.02},
		{Who: Who{Namespace: "ml", Pod: "busy", Container: "train"}, Processes: 2, MemoryBytes: 6 << 30, MemoryKnown: true, SM: 0.85},
		{Who: Who{Namespace: "ml", Pod: "idle", Container: "notebook"}, Processes: 1, MemoryBytes: 1 << 30, MemoryKnown: true, SM: 0},
	}
	if len(got) != 1 || !equalUsage(got[0].Containers, want) || got[0].Processes != nil {
		t.Fatalf("usage = %+v\nwant containers %+v", got, want)
	}
}

// The containers' SM shares add up to the processes' on every device:
// attribution loses nothing and counts nothing twice.
func TestAccountantSharesAddUp(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := sharedGPU(t, root)
	a, _, _ := newTestAccountant(t, root, s, ModeProcess, names)
	got, err := a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var procs, containers, perProcess float64
	for _, p := range s.devs[0].Processes {
		procs += p.SM / 100
	}
	for _, c := range got[0].Containers {
		containers += c.SM
	}
	for _, p := range got[0].Processes {
		perProcess += p.SM
	}
	if math.Abs(procs-containers) > 1e-9 || math.Abs(procs-perProcess) > 1e-9 {
		t.Errorf("process SM %v, containers %v, per-process rows %v; want equal", procs, containers, perProcess)
	}
	if len(got[0].Processes) != 4 || got[0].Processes[1].PID != 10 || got[0].Processes[1].Pod != "busy" {
		t.Errorf("per-process rows = %+v", got[0].Processes)
	}
}

func TestAccountantWithoutAPI(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	a, reg, logs := newTestAccountant(t, root, sharedGPU(t, root), ModeContainer, nil)
	for range 2 {
		got, err := a.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c := got[0].Containers
		if len(c) != 3 || c[1].Who != (Who{PodUID: busyUID, ContainerID: busyCID}) || c[2].Who != (Who{PodUID: idleUID, ContainerID: idleCID}) {
			t.Fatalf("containers = %+v; want pod_uid and container_id labels", c)
		}
	}
	if n := strings.Count(logs.String(), "no Kubernetes API access"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs)
	}
	if v := gauge(t, reg, "gpu_exporter_process_accounting_pod_names"); v != 0 {
		t.Errorf("gpu_exporter_process_accounting_pod_names = %v, want 0", v)
	}
}

func TestAccountantUnknownPodAndContainer(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pods := podTable{busyUID + "/": {Namespace: "ml", Pod: "busy"}} // container not in the status yet; idle pod unknown
	a, _, _ := newTestAccountant(t, root, sharedGPU(t, root), ModeContainer, pods)
	got, err := a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := got[0].Containers
	if len(c) != 3 || c[1].Who != (Who{PodUID: idleUID, ContainerID: idleCID}) ||
		c[2].Who != (Who{Namespace: "ml", Pod: "busy", ContainerID: busyCID}) {
		t.Fatalf("containers = %+v", c)
	}
	if v := testutil.ToFloat64(a.m.unresolved.WithLabelValues("unknown_pod")); v != 1 {
		t.Errorf("unknown_pod = %v, want 1", v)
	}
}

// A process the GPU lists that exits before its cgroup is read is left
// out and counted; the others are attributed.
func TestAccountantExitRace(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := sharedGPU(t, root)
	if err := RemoveProcess(root, 11); err != nil {
		t.Fatal(err)
	}
	a, _, logs := newTestAccountant(t, root, s, ModeContainer, names)
	got, err := a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c := got[0].Containers[1]; c.Pod != "busy" || c.Processes != 1 || c.MemoryBytes != 4<<30 {
		t.Errorf("busy container = %+v; want its remaining process only", c)
	}
	if v := testutil.ToFloat64(a.m.unresolved.WithLabelValues("exited")); v != 1 {
		t.Errorf("exited = %v, want 1", v)
	}
	if strings.Contains(logs.String(), "cannot tell") {
		t.Errorf("a routine exit was logged:\n%s", logs)
	}
}

// A PID with utilization samples but in no listing (Unlisted) exited after
// its samples: the process now under that PID is another one unless it is
// the one the previous collection resolved (same start time). A reused
// PID must not take the exited process's GPU time to its own pod.
func TestAccountantSampledOnlyPIDReused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeProc(t, root, 10, 1, cgroupOf(busyUID, busyCID))
	writeProc(t, root, 50, 7, cgroupOf(idleUID, idleCID)) // PID 50 reused by the idle pod
	s := &fixedSampler{devs: []Device{{GPU: 0, UUID: "GPU-0", GPUInstance: -1, Utilization: true, Processes: []Process{
		{PID: 10, Type: Compute, UsedBytes: 1 << 30, UsedKnown: true, SM: 20, Sampled: true},
		{PID: 50, SM: 70, Sampled: true, Unlisted: true}, // sampled, then exited
	}}}}
	a, _, _ := newTestAccountant(t, root, s, ModeContainer, names)
	got, err := a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Usage{{Who: Who{Namespace: "ml", Pod: "busy", Container: "train"}, Processes: 1, MemoryBytes: 1 << 30, MemoryKnown: true, SM: 0.2}}
	if !equalUsage(got[0].Containers, want) {
		t.Errorf("containers = %+v\nwant %+v (the reused PID left out)", got[0].Containers, want)
	}
	if v := testutil.ToFloat64(a.m.unresolved.WithLabelValues("exited")); v != 1 {
		t.Errorf("exited = %v, want 1", v)
	}

	// Listed in one collection, sampled only in the next (it exited
	// after its last sample, /proc still shows it): the same process.
	s.devs[0].Processes[1].Unlisted = false
	if _, err := a.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.devs[0].Processes[1].Unlisted = true
	got, err = a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got[0].Containers) != 2 || got[0].Containers[1].Pod != "idle" || math.Abs(got[0].Containers[1].SM-0.7) > 1e-9 {
		t.Errorf("containers = %+v; want the idle pod's process, resolved before, with its samples", got[0].Containers)
	}
}

func TestAccountantUnreadableLoggedOnce(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeProc(t, root, 1, 1, "garbage\n")
	writeProc(t, root, 2, 1, "garbage\n")
	s := &fixedSampler{devs: []Device{{UUID: "GPU-0", GPUInstance: -1, Processes: []Process{{PID: 1}, {PID: 2}}}}}
	a, _, logs := newTestAccountant(t, root, s, ModeContainer, names)
	if _, err := a.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "cannot tell"); n != 1 {
		t.Errorf("logged %d times, want once", n)
	}
	if v := testutil.ToFloat64(a.m.unresolved.WithLabelValues("unreadable")); v != 2 {
		t.Errorf("unreadable = %v, want 2", v)
	}
}

func TestAccountantMIGAndPartialFailure(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeProc(t, root, 10, 1, cgroupOf(busyUID, busyCID))
	s := &fixedSampler{
		devs: []Device{{GPU: 3, UUID: "GPU-3", GPUInstance: 2, MIGUUID: "MIG-x", Processes: []Process{{PID: 10, UsedBytes: 5 << 30, UsedKnown: true}}}},
		err:  fmt.Errorf("GPU-4: %w", context.DeadlineExceeded),
	}
	a, reg, _ := newTestAccountant(t, root, s, ModeContainer, names)
	got, err := a.Collect(context.Background())
	if err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("error = %v; want the sampler's partial failure, a failed collection", err)
	}
	if v := gauge(t, reg, "gpu_exporter_process_accounting_available"); v != 1 {
		t.Errorf("gpu_exporter_process_accounting_available = %v after a partial failure, want 1", v)
	}
	if len(got) != 1 || got[0].GPUInstance != 2 || got[0].MIGUUID != "MIG-x" || got[0].Utilization ||
		len(got[0].Containers) != 1 || got[0].Containers[0].Pod != "busy" {
		t.Errorf("usage = %+v", got)
	}
}

// A GPU instance split into compute instances is one MIG device per
// compute instance in NVML (nvmlDeviceGetMigDeviceHandleByIndex), but one
// entity in the inventory: its devices are joined into one usage, so each
// container has one row per GPU instance (two rows with the same labels
// are a duplicate series), and a process on two of them counts once.
func TestAccountantMIGComputeInstancesJoined(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeProc(t, root, 10, 1, cgroupOf(busyUID, busyCID))
	writeProc(t, root, 11, 1, cgroupOf(busyUID, busyCID))
	writeProc(t, root, 30, 1, "0::/system.slice/xorg.service\n")
	s := &fixedSampler{devs: []Device{
		{GPU: 0, UUID: "GPU-0", GPUInstance: 1, MIGUUID: "MIG-ci0", Processes: []Process{
			{PID: 10, UsedBytes: 1 << 30, UsedKnown: true}, {PID: 30, UsedBytes: 1 << 20, UsedKnown: true}}},
		{GPU: 0, UUID: "GPU-0", GPUInstance: 2, MIGUUID: "MIG-other", Processes: []Process{{PID: 11, UsedBytes: 3 << 30, UsedKnown: true}}},
		{GPU: 0, UUID: "GPU-0", GPUInstance: 1, MIGUUID: "MIG-ci1", Processes: []Process{
			{PID: 11, UsedBytes: 2 << 30, UsedKnown: true}, {PID: 30, UsedBytes: 1 << 20, UsedKnown: true}}},
	}}
	a, _, _ := newTestAccountant(t, root, s, ModeContainer, names)
	got, err := a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].GPUInstance != 1 || got[0].MIGUUID != "MIG-ci0" || got[1].GPUInstance != 2 {
		t.Fatalf("devices = %+v, want GPU instances 1 (its first MIG device's UUID) and 2", got)
	}
	want := []Usage{
		{Who: Who{}, Processes: 1, MemoryBytes: 1 << 20, MemoryKnown: true},
		{Who: Who{Namespace: "ml", Pod: "busy", Container: "train"}, Processes: 2, MemoryBytes: 3 << 30, MemoryKnown: true},
	}
	if !equalUsage(got[0].Containers, want) {
		t.Errorf("GPU instance 1 containers = %+v\nwant %+v", got[0].Containers, want)
	}
}

// 64 GPUs x 16 processes: every process is attributed, and the second
// collection answers from the cache.
func TestAccountantScale(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s, pods := scaleNode(t, root, 64, 16)
	a, _, _ := newTestAccountant(t, root, s, ModeContainer, pods)
	for round := range 2 {
		got, err := a.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 64 {
			t.Fatalf("%d devices", len(got))
		}
		for _, d := range got {
			n := 0
			for _, c := range d.Containers {
				if c.Pod == "" {
					t.Fatalf("round %d: unnamed container on %s: %+v", round, d.UUID, c)
				}
				n += c.Processes
			}
			if len(d.Containers) != 4 || n != 16 {
				t.Fatalf("round %d: %s has %d containers, %d processes; want 4 and 16", round, d.UUID, len(d.Containers), n)
			}
		}
	}
	if a.resolver.Cached() != 64*16 {
		t.Errorf("%d PIDs cached, want %d", a.resolver.Cached(), 64*16)
	}
}

// scaleNode writes gpus x perGPU processes, four containers per GPU.
func scaleNode(t testing.TB, root string, gpus, perGPU int) (*fixedSampler, podTable) {
	s := &fixedSampler{}
	pods := podTable{}
	pid := uint32(1000)
	for g := range gpus {
		d := Device{GPU: g, UUID: fmt.Sprintf("GPU-%d", g), GPUInstance: -1, Utilization: true}
		for p := range perGPU {
			uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", g, p%4)
			cid := fmt.Sprintf("%064x", g*4+p%4)
			pods[uid+"/"+cid] = podlabels.ContainerRef{Namespace: "ns", Pod: fmt.Sprintf("pod-%d-%d", g, p%4), Container: "main"}
			if err := WriteProcess(root, pid, "python", 1, cgroupOf(uid, cid)); err != nil {
				t.Fatal(err)
			}
			if err := WriteEnviron(root, pid, []string{"PATH=/usr/bin", "CUDA_DEVICE_SM_LIMIT=25"}); err != nil {
				t.Fatal(err)
			}
			d.Processes = append(d.Processes, Process{PID: pid, Type: Compute, UsedBytes: 1 << 30, UsedKnown: true, SM: 5, Sampled: true})
			pid++
		}
		s.devs = append(s.devs, d)
	}
	return s, pods
}

func BenchmarkAccountantCollect64x16(b *testing.B) {
	root := b.TempDir()
	s, pods := scaleNode(b, root, 64, 16)
	a, err := NewAccountant(Config{Procfs: root, Mode: ModeContainer, Pods: pods}, s, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Collect(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

func equalUsage(got, want []Usage) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Who != w.Who || g.PID != w.PID || g.Processes != w.Processes || g.MemoryBytes != w.MemoryBytes ||
			g.MemoryKnown != w.MemoryKnown || math.Abs(g.SM-w.SM) > 1e-9 {
			return false
		}
	}
	return true
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	v, ok := gaugeSeries(t, reg, name)
	if !ok {
		t.Fatalf("%s not exported", name)
	}
	return v
}

// gaugeSeries returns the value of the gauge without labels name, and
// whether it has a series.
func gaugeSeries(t *testing.T, reg *prometheus.Registry, name string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Mode{"off": ModeOff, "container": ModeContainer, "process": ModeProcess} {
		if got, err := ParseMode(in); err != nil || got != want || got.String() != in {
			t.Errorf("ParseMode(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseMode("pid"); err == nil || !strings.Contains(err.Error(), "--collect.processes") {
		t.Errorf("ParseMode(pid) error = %v", err)
	}
}

// NVML's PIDs are the host's: a procfs of another PID namespace (a pod
// without hostPID reading its own /proc) is warned about once at start.
func TestAccountantWarnsWithoutHostPIDNamespace(t *testing.T) {
	t.Parallel()
	kthreadd := "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0 18446744073709551615\n"
	containerPID2 := "2 (sh) S 1 2 2 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 500 1000000 100 18446744073709551615\n"
	// A pod without hostPID: the exporter is PID 1 and its first thread
	// TID 2, whose stat shows PID 1's parent, 0 (read in such a namespace).
	exporterThread := "2 (gpu-exporter) S 0 0 0 0 -1 4194368 209 0 0 0 0 0 0 0 20 0 4 0 3379233 1256628224 546 18446744073709551615\n"
	// kubectl exec: a process entered with setns has no parent in the namespace.
	execd := "2 (sh) S 0 2 2 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 500 1000000 100 18446744073709551615\n"
	// A process named kthreadd, not a kernel thread.
	fakeKthreadd := "2 (kthreadd) S 0 2 2 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 500 1000000 100 18446744073709551615\n"
	cases := []struct {
		name     string
		pid2     string // /proc/2/stat; "" for none
		hostPIDs bool
		warn     bool
	}{
		{"host namespace", kthreadd, true, false},
		{"container namespace", containerPID2, true, true},
		{"container namespace, PID 1's thread", exporterThread, true, true},
		{"container namespace, kubectl exec", execd, true, true},
		{"container namespace, a kthreadd not a kernel thread", fakeKthreadd, true, true},
		{"truncated stat", "2 (kthreadd) S 0\n", true, true},
		{"no pid 2", "", true, true},
		{"sampler with its own procfs", "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if tc.pid2 != "" {
				if err := os.MkdirAll(filepath.Join(root, "2"), 0o750); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, "2", "stat"), []byte(tc.pid2), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			a, err := NewAccountant(Config{Procfs: root, Mode: ModeContainer, Pods: names, HostPIDs: tc.hostPIDs},
				&fixedSampler{}, slog.New(slog.NewTextHandler(&logs, nil)), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if got := strings.Contains(logs.String(), "host's PID namespace"); got != tc.warn {
				t.Errorf("warned = %v, want %v; logs:\n%s", got, tc.warn, logs.String())
			}
		})
	}
}

// scriptedSampler answers each Sample with the next of its results.
type scriptedSampler struct {
	results []sampleResult
	next    int
}

type sampleResult struct {
	devs []Device
	err  error
}

func (s *scriptedSampler) Sample(context.Context) ([]Device, error) {
	r := s.results[s.next]
	s.next++
	return r.devs, r.err
}

func (*scriptedSampler) Close() error { return nil }

// absent stands for a gauge without a series in test tables.
const absent = -1

// A Sample that got no answer from the library (its call timed out, the
// collection ended) says nothing of availability: the gauge keeps what
// the last answer said, and no change is logged.
func TestAccountantAvailabilityWithoutAnswer(t *testing.T) {
	t.Parallel()
	timeout := &cgocall.CallError{Library: "nvml processes", Op: "process sampling", Timeout: time.Second}
	unavailable := fmt.Errorf("%w: nvml init: %w", ErrUnavailable, errors.New("Driver Not Loaded"))
	for _, tc := range []struct {
		name    string
		results []sampleResult
		want    []float64 // the gauge after each Collect; absent: no series
	}{
		{"timeout first", []sampleResult{{nil, timeout}, {[]Device{}, nil}}, []float64{absent, 1}},
		{"timeout after a good one", []sampleResult{{[]Device{}, nil}, {nil, timeout}, {nil, context.DeadlineExceeded}}, []float64{1, 1, 1}},
		{"timeout while unavailable", []sampleResult{{nil, unavailable}, {nil, timeout}, {nil, unavailable}}, []float64{0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, reg, logs := newTestAccountant(t, t.TempDir(), &scriptedSampler{results: tc.results}, ModeContainer, names)
			if v, ok := gaugeSeries(t, reg, "gpu_exporter_process_accounting_available"); ok {
				t.Errorf("gpu_exporter_process_accounting_available = %v before any Collect; want no series (nothing was tried)", v)
			}
			for i, want := range tc.want {
				_, _ = a.Collect(context.Background())
				v, ok := gaugeSeries(t, reg, "gpu_exporter_process_accounting_available")
				if !ok {
					v = absent
				}
				if v != want {
					t.Errorf("after Collect %d: gpu_exporter_process_accounting_available = %v, want %v (%v: no series)", i+1, v, want, absent)
				}
			}
			if strings.Contains(logs.String(), "available again") {
				t.Errorf("recovery logged without an answer:\n%s", logs)
			}
		})
	}
}

// While process accounting is unavailable no process is listed: the PID
// cache is emptied and gpu_exporter_process_accounting_cached_pids says 0,
// not the count of the last good collection; it counts again once NVML is
// back.
func TestAccountantCachedPIDsWhileUnavailable(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeProc(t, root, 10, 1, cgroupOf(busyUID, busyCID))
	writeProc(t, root, 11, 1, cgroupOf(busyUID, busyCID))
	unavailable := fmt.Errorf("%w: nvml init: %w", ErrUnavailable, errors.New("Driver Not Loaded"))
	good := sampleResult{devs: []Device{{UUID: "GPU-0", GPUInstance: -1, Processes: []Process{{PID: 10}, {PID: 11}}}}}
	s := &scriptedSampler{results: []sampleResult{good, {nil, unavailable}, {nil, unavailable}, good}}
	a, reg, _ := newTestAccountant(t, root, s, ModeContainer, names)
	for i, want := range []float64{2, 0, 0, 2} {
		_, _ = a.Collect(context.Background())
		if v := gauge(t, reg, "gpu_exporter_process_accounting_cached_pids"); v != want {
			t.Errorf("after Collect %d: gpu_exporter_process_accounting_cached_pids = %v, want %v", i+1, v, want)
		}
		if got := a.resolver.Cached(); float64(got) != want {
			t.Errorf("after Collect %d: %d PIDs cached, want %v", i+1, got, want)
		}
	}
}
