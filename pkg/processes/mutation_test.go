package processes

import (
	"context"
	"testing"
)

// Tests that kill mutants the rest of the suite let live (issue 34): each
// names the one-line change it catches.

// A process resolved while listed, then sampled only (Unlisted) after its
// PID was taken by a process of another pod (a new start time): the new
// process must not inherit the exited one's GPU time through the cache.
// Kills a cache check that stops comparing start times (ResolveAll's
// `case ok && c.start == start` read as `case ok`).
func TestMutationCachedPIDReusedBeforeItsLastSamples(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeProc(t, root, 10, 1, cgroupOf(busyUID, busyCID))
	writeProc(t, root, 50, 7, cgroupOf(busyUID, busyCID))
	s := &fixedSampler{devs: []Device{{GPU: 0, UUID: "GPU-0", GPUInstance: -1, Utilization: true, Processes: []Process{
		{PID: 10, Type: Compute, UsedBytes: 1 << 30, UsedKnown: true, SM: 20, Sampled: true},
		{PID: 50, Type: Compute, UsedBytes: 1 << 30, UsedKnown: true, SM: 70, Sampled: true},
	}}}}
	a, _, _ := newTestAccountant(t, root, s, ModeContainer, names)
	if _, err := a.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	// PID 50 exits after its last samples; the kernel hands the PID to a
	// process of the idle pod (a later start time).
	if err := RemoveProcess(root, 50); err != nil {
		t.Fatal(err)
	}
	writeProc(t, root, 50, 900, cgroupOf(idleUID, idleCID))
	s.devs[0].Processes[1] = Process{PID: 50, SM: 70, Sampled: true, Unlisted: true}
	got, err := a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Usage{{Who: Who{Namespace: "ml", Pod: "busy", Container: "train"}, Processes: 1, MemoryBytes: 1 << 30, MemoryKnown: true, SM: 0.2}}
	if !equalUsage(got[0].Containers, want) {
		t.Errorf("containers = %+v\nwant %+v (the exited process's samples left out, not given to the PID's new owner nor kept by the old one)", got[0].Containers, want)
	}

	// Listed again under its new owner: resolved anew, not from the cache.
	s.devs[0].Processes[1] = Process{PID: 50, Type: Compute, UsedBytes: 2 << 30, UsedKnown: true, SM: 5, Sampled: true}
	got, err = a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want = []Usage{
		{Who: Who{Namespace: "ml", Pod: "busy", Container: "train"}, Processes: 1, MemoryBytes: 1 << 30, MemoryKnown: true, SM: 0.2},
		{Who: Who{Namespace: "ml", Pod: "idle", Container: "notebook"}, Processes: 1, MemoryBytes: 2 << 30, MemoryKnown: true, SM: 0.05},
	}
	if !equalUsage(got[0].Containers, want) {
		t.Errorf("containers = %+v\nwant %+v (the reused PID under its new pod)", got[0].Containers, want)
	}
}

// A container running a process of known memory and one whose memory the
// driver cannot tell (NVML_VALUE_NOT_AVAILABLE, which go-nvml hands over as
// ^uint64(0) in UsedGpuMemory) sums the known one only: the unknown one's
// bytes must not wrap the sum into a value exported as known. Kills the
// accountant adding UsedBytes without checking UsedKnown, in either order
// of the processes.
func TestMutationContainerMixesKnownAndUnknownMemory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		procs []Process
	}{
		{"known first", []Process{
			{PID: 10, Type: Compute, UsedBytes: 4 << 30, UsedKnown: true, SM: 10, Sampled: true},
			{PID: 11, Type: Compute, UsedBytes: ^uint64(0), UsedKnown: false, SM: 5, Sampled: true},
		}},
		{"unknown first", []Process{
			{PID: 11, Type: Compute, UsedBytes: ^uint64(0), UsedKnown: false, SM: 5, Sampled: true},
			{PID: 10, Type: Compute, UsedBytes: 4 << 30, UsedKnown: true, SM: 10, Sampled: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeProc(t, root, 10, 1, cgroupOf(busyUID, busyCID))
			writeProc(t, root, 11, 1, cgroupOf(busyUID, busyCID))
			s := &fixedSampler{devs: []Device{{GPU: 0, UUID: "GPU-0", GPUInstance: -1, Utilization: true, Processes: tc.procs}}}
			a, _, _ := newTestAccountant(t, root, s, ModeProcess, names)
			got, err := a.Collect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			who := Who{Namespace: "ml", Pod: "busy", Container: "train"}
			want := []Usage{{Who: who, Processes: 2, MemoryBytes: 4 << 30, MemoryKnown: true, SM: 0.15}}
			if !equalUsage(got[0].Containers, want) {
				t.Errorf("containers = %+v\nwant %+v", got[0].Containers, want)
			}
			wantProcs := []Usage{
				{Who: who, PID: 10, Processes: 1, MemoryBytes: 4 << 30, MemoryKnown: true, SM: 0.10},
				{Who: who, PID: 11, Processes: 1, MemoryBytes: 0, MemoryKnown: false, SM: 0.05},
			}
			if !equalUsage(got[0].Processes, wantProcs) {
				t.Errorf("processes = %+v\nwant %+v", got[0].Processes, wantProcs)
			}
		})
	}
}

// A container whose every process has unknown memory exports no memory
// value: MemoryKnown stays false whatever the bytes say.
func TestMutationContainerAllMemoryUnknown(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeProc(t, root, 10, 1, cgroupOf(busyUID, busyCID))
	writeProc(t, root, 11, 1, cgroupOf(busyUID, busyCID))
	s := &fixedSampler{devs: []Device{{GPU: 0, UUID: "GPU-0", GPUInstance: -1, Processes: []Process{
		{PID: 10, Type: Compute, UsedBytes: ^uint64(0)},
		{PID: 11, Type: Compute, UsedBytes: ^uint64(0)},
	}}}}
	a, _, _ := newTestAccountant(t, root, s, ModeContainer, names)
	got, err := a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Usage{{Who: Who{Namespace: "ml", Pod: "busy", Container: "train"}, Processes: 2}}
	if !equalUsage(got[0].Containers, want) {
		t.Errorf("containers = %+v\nwant %+v", got[0].Containers, want)
	}
}
