//go:build cgo && linux

package processes

import (
	"context"
	"math"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
)

// period is one sample of the driver's utilization ring, as the kernel
// module keeps it (NVIDIA/open-gpu-kernel-modules, ctrl2080perf.h,
// NV2080_CTRL_PERF_GPUMON_ENGINE_UTIL_SAMPLE): the graphics/compute
// engine's busy percent during the sample ("util", kept in pct*100 there),
// and the one process "that was active on the engine when the sample was
// taken" (pid 0 here: none). One engine, one process per period: a
// time-sliced GPU's periods go to one sharer each.
type period struct {
	at  uint64 // CPU timestamp, microseconds
	pid uint32
	sm  uint32 // percent
}

// nvmlAnswer is what nvmlDeviceGetProcessUtilization answers from the ring
// for lastSeen, as nvml.h (go-nvml v0.13 pkg/nvml/nvml.h) documents it:
//   - "One utilization sample structure is returned per process running,
//     that had some non-zero utilization": one per process, none for a
//     process idle over the whole window (processSamplesCount "returns
//     number of processes running"); field reports agree (Syllo/nvtop
//     issue 110: the count "exactly equals the number of processes");
//   - its timeStamp is "the CPU timestamp at which the samples were
//     recorded", in microseconds: here the process's newest busy period,
//     so processes carry different timestamps (go-nvml issue 51 shows
//     them seconds apart in one answer);
//   - with lastSeenTimeStamp "a timeStamp retrieved from a previous query",
//     it reads "utilization since the previous query"; nvidia-smi pmon,
//     which prints these values, calls them the "average utilization
//     values for SM, Memory, Encoder and Decoder since the last monitoring
//     cycle" (nvidia-smi(1), pmon). The average is over the window's
//     periods, the process's idle ones included: that is this mock's
//     reading of "since the previous query", which nvml.h does not spell
//     out further. smUtil is an integer percent.
func nvmlAnswer(ring []period, lastSeen uint64) []nvml.ProcessUtilizationSample {
	type acc struct {
		sum  uint32
		last uint64
	}
	periods := 0
	var order []uint32
	busy := map[uint32]*acc{}
	for _, p := range ring {
		if p.at <= lastSeen {
			continue
		}
		periods++
		if p.pid == 0 || p.sm == 0 {
			continue
		}
		a := busy[p.pid]
		if a == nil {
			a = &acc{}
			busy[p.pid] = a
			order = append(order, p.pid)
		}
		a.sum += p.sm
		a.last = max(a.last, p.at)
	}
	out := make([]nvml.ProcessUtilizationSample, 0, len(order))
	for _, pid := range order {
		a := busy[pid]
		out = append(out, nvml.ProcessUtilizationSample{Pid: pid, TimeStamp: a.last, SmUtil: a.sum / uint32(periods)})
	}
	return out
}

// periods returns n periods after at, 100ms apart (the driver's ring holds
// NV2080_CTRL_PERF_GPUMON_SAMPLE_COUNT_PERFMON_UTIL, 100, samples and
// "wraps around after 10 seconds of sampling", ctrl2080perf.h), each given
// by busy(i): the process active and its percent.
func periods(at uint64, n int, busy func(i int) (pid, sm uint32)) []period {
	out := make([]period, n)
	for i := range out {
		pid, sm := busy(i)
		out[i] = period{at: at + uint64(i+1)*100_000, pid: pid, sm: sm}
	}
	return out
}

// gpuWindow is the GPU's utilization over the ring's periods newer than
// lastSeen, as a ratio: the engine's busy time, whoever was on it.
func gpuWindow(ring []period, lastSeen uint64) float64 {
	n, sum := 0, 0.0
	for _, p := range ring {
		if p.at > lastSeen {
			n++
			sum += float64(p.sm)
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n) / 100
}

// Per-process utilization is NVML's own average since the previous read,
// one sample per busy process (nvmlAnswer): the sampler passes each
// process's value through, a process without a sample was idle, and the
// accountant sums processes per container. The containers' sum is then
// the GPU's utilization over the same window: an intermittent process
// counts at its average, not at its busy level, and a process's share is
// not divided by the other processes' samples or timestamps. A process
// that exited in the window keeps its share while /proc still shows it;
// once reaped it is left out (counted as exited), the limit of
// docs/shared-gpus.md. Memory is the listing's value at the read
// (nvmlProcessInfo_t.usedGpuMemory: "Amount of used GPU memory"), not an
// average.
func TestAccountantNVMLUtilizationWindow(t *testing.T) {
	t.Parallel()
	const (
		trainer = 10 // train container
		helper  = 12 // train container, exits in some windows
		server  = 11 // serve container
	)
	train := Who{Namespace: "ml", Pod: "trainer", Container: "train"}
	serve := Who{Namespace: "ml", Pod: "server", Container: "serve"}
	pods := podTable{
		busyUID + "/" + busyCID: podlabels.ContainerRef{Namespace: "ml", Pod: "trainer", Container: "train"},
		idleUID + "/" + idleCID: podlabels.ContainerRef{Namespace: "ml", Pod: "server", Container: "serve"},
	}
	const t0 = 1_700_000_000_000_000 // where the ring stands at the first read
	cases := []struct {
		name string
		// listed are the processes at the read; those at the first read
		// are these and, for an exit, the exited one.
		listed []nvml.ProcessInfo
		exits  uint32 // a process listed at the first read only
		reaped bool   // its /proc entry is gone at the read
		window []period
		// wantPIDs are the per-process ratios; wantContainers the rows.
		wantPIDs       map[uint32]float64
		wantContainers []Usage
		// wantShort is how much the containers' sum falls short of the
		// GPU's utilization over the window: the share of a reaped process.
		wantShort float64
	}{
		{
			name:   "intermittent process, busy one period in six",
			listed: []nvml.ProcessInfo{pinfo(trainer, 3<<30), pinfo(server, 1<<30)},
			window: periods(t0, 6, func(i int) (uint32, uint32) {
				if i == 2 {
					return trainer, 60
				}
				return 0, 0
			}),
			wantPIDs: map[uint32]float64{trainer: 0.10, server: 0},
			wantContainers: []Usage{
				{Who: serve, Processes: 1, MemoryBytes: 1 << 30, MemoryKnown: true},
				{Who: train, Processes: 1, MemoryBytes: 3 << 30, MemoryKnown: true, SM: 0.10},
			},
		},
		{
			name:   "two processes alternating",
			listed: []nvml.ProcessInfo{pinfo(trainer, 3<<30), pinfo(server, 1<<30)},
			window: periods(t0, 6, func(i int) (uint32, uint32) {
				if i%2 == 0 {
					return trainer, 100
				}
				return server, 100
			}),
			wantPIDs: map[uint32]float64{trainer: 0.5, server: 0.5},
			wantContainers: []Usage{
				{Who: serve, Processes: 1, MemoryBytes: 1 << 30, MemoryKnown: true, SM: 0.5},
				{Who: train, Processes: 1, MemoryBytes: 3 << 30, MemoryKnown: true, SM: 0.5},
			},
		},
		{
			name:   "process exited mid-window, still in /proc",
			listed: []nvml.ProcessInfo{pinfo(trainer, 3<<30), pinfo(server, 1<<30)},
			exits:  helper,
			window: periods(t0, 6, func(i int) (uint32, uint32) {
				if i < 2 {
					return helper, 90
				}
				return trainer, 90
			}),
			wantPIDs: map[uint32]float64{trainer: 0.60, helper: 0.30, server: 0},
			wantContainers: []Usage{
				{Who: serve, Processes: 1, MemoryBytes: 1 << 30, MemoryKnown: true},
				{Who: train, Processes: 2, MemoryBytes: 3 << 30, MemoryKnown: true, SM: 0.90},
			},
		},
		{
			name:   "process exited mid-window and reaped",
			listed: []nvml.ProcessInfo{pinfo(trainer, 3<<30), pinfo(server, 1<<30)},
			exits:  helper,
			reaped: true,
			window: periods(t0, 6, func(i int) (uint32, uint32) {
				if i < 2 {
					return helper, 90
				}
				return trainer, 90
			}),
			wantPIDs: map[uint32]float64{trainer: 0.60, server: 0},
			wantContainers: []Usage{
				{Who: serve, Processes: 1, MemoryBytes: 1 << 30, MemoryKnown: true},
				{Who: train, Processes: 1, MemoryBytes: 3 << 30, MemoryKnown: true, SM: 0.60},
			},
			wantShort: 0.30,
		},
		{
			name:     "every process idle",
			listed:   []nvml.ProcessInfo{pinfo(trainer, 3<<30), pinfo(server, 1<<30)},
			window:   periods(t0, 6, func(int) (uint32, uint32) { return 0, 0 }),
			wantPIDs: map[uint32]float64{trainer: 0, server: 0},
			wantContainers: []Usage{
				{Who: serve, Processes: 1, MemoryBytes: 1 << 30, MemoryKnown: true},
				{Who: train, Processes: 1, MemoryBytes: 3 << 30, MemoryKnown: true},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeProc(t, root, trainer, 1, cgroupOf(busyUID, busyCID))
			writeProc(t, root, helper, 1, cgroupOf(busyUID, busyCID))
			writeProc(t, root, server, 1, cgroupOf(idleUID, idleCID))
			// Before the first read the driver holds older periods (a
			// busy trainer), which that read only steps over.
			first := append([]nvml.ProcessInfo(nil), tc.listed...)
			if tc.exits != 0 {
				first = append(first, pinfo(tc.exits, 1<<30))
			}
			for i := range first {
				first[i].UsedGpuMemory /= 2 // memory grows until the read
			}
			g := &mockGPU{uuid: "GPU-0", compute: first,
				ring: periods(t0-1_000_000, 10, func(int) (uint32, uint32) { return trainer, 100 })}
			m := newMockNVML(g)
			a, _, _ := newTestAccountant(t, root, newTestSampler(t, m), ModeProcess, pods)
			if _, err := a.Collect(context.Background()); err != nil {
				t.Fatal(err)
			}

			m.mu.Lock()
			lastSeen := g.ring[len(g.ring)-1].at
			g.ring = append(g.ring, tc.window...)
			g.compute = tc.listed
			m.mu.Unlock()
			if tc.reaped {
				if err := RemoveProcess(root, tc.exits); err != nil {
					t.Fatal(err)
				}
			}
			got, err := a.Collect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !got[0].Utilization {
				t.Fatalf("usage = %+v; want GPU-0 with per-process utilization", got)
			}
			u := got[0]
			if len(u.Processes) != len(tc.wantPIDs) {
				t.Errorf("per-process rows = %+v; want PIDs %v", u.Processes, tc.wantPIDs)
			}
			for _, p := range u.Processes {
				if want, ok := tc.wantPIDs[p.PID]; !ok || math.Abs(p.SM-want) > 1e-9 {
					t.Errorf("process %d SM = %v, want %v", p.PID, p.SM, want)
				}
			}
			if !equalUsage(u.Containers, tc.wantContainers) {
				t.Errorf("containers = %+v\nwant %+v", u.Containers, tc.wantContainers)
			}
			sum := 0.0
			for _, c := range u.Containers {
				sum += c.SM
			}
			if gpu := gpuWindow(g.ring, lastSeen); math.Abs(gpu-tc.wantShort-sum) > 1e-9 {
				t.Errorf("containers' sum %v; GPU over the window %v, want it less %v", sum, gpu, tc.wantShort)
			}
		})
	}
}
