package processes

import (
	"context"
	"testing"
)

const goneUID, goneCID = "aaaaaaaa-0000-4000-8000-0000000000ff", "d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2"

// syncedTable is a podTable that tells whether it has synced.
type syncedTable struct {
	podTable
	synced bool
}

func (s *syncedTable) Synced() bool { return s.synced }

// orphanGPU is sharedGPU plus a process of a deleted pod (40), a CUDA
// program on the host (50), a host process both graphics and compute
// (60), and a host process with unknown memory (70).
func orphanGPU(t *testing.T, root string) *fixedSampler {
	t.Helper()
	s := sharedGPU(t, root)
	writeProc(t, root, 40, 1, cgroupOf(goneUID, goneCID))
	writeProc(t, root, 50, 1, "0::/user.slice/user-1000.slice/session-3.scope\n")
	writeProc(t, root, 60, 1, "0::/system.slice/display-manager.service\n")
	writeProc(t, root, 70, 1, "0::/system.slice/batch.service\n")
	d := &s.devs[0]
	d.Processes = append(d.Processes,
		Process{PID: 40, Type: Compute, UsedBytes: 3 << 30, UsedKnown: true},
		Process{PID: 50, Type: Compute, UsedBytes: 5 << 30, UsedKnown: true, SM: 10, Sampled: true},
		Process{PID: 60, Type: Compute | Graphics, UsedBytes: 1 << 20, UsedKnown: true},
		Process{PID: 70, Type: MPS},
	)
	return s
}

func TestAccountantOrphans(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pods := &syncedTable{podTable: names, synced: true}
	a, _, _ := newTestAccountant(t, root, orphanGPU(t, root), ModeContainer, pods)
	first, err := a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := first[0]
	if !d.OrphansKnown {
		t.Fatal("orphans not known with a synced informer")
	}
	// The host's compute processes (50, and 70 with unknown memory) are
	// orphans; Xorg (30, graphics) and 60 (graphics and compute) are not.
	if got, want := d.Orphans[OrphanHost], (Orphans{Processes: 2, MemoryBytes: 5 << 30}); got != want {
		t.Errorf("host orphans = %+v, want %+v", got, want)
	}
	// The unknown pod gets a collection of grace.
	if got := d.Orphans[OrphanPodGone]; got != (Orphans{}) {
		t.Errorf("first collection: pod_gone orphans = %+v, want none yet", got)
	}
	second, err := a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := second[0].Orphans[OrphanPodGone], (Orphans{Processes: 1, MemoryBytes: 3 << 30}); got != want {
		t.Errorf("second collection: pod_gone orphans = %+v, want %+v", got, want)
	}
	// The process keeps its per-container row, by pod UID.
	found := false
	for _, c := range second[0].Containers {
		found = found || (c.PodUID == goneUID && c.ContainerID == goneCID && c.MemoryBytes == 3<<30)
	}
	if !found {
		t.Errorf("the orphan's container row is missing: %+v", second[0].Containers)
	}
}

// A pod the informer learns of within the grace is never an orphan.
func TestAccountantOrphanGraceForLateInformer(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pods := &syncedTable{podTable: podTable{}, synced: true}
	for k, v := range names {
		pods.podTable[k] = v
	}
	a, _, _ := newTestAccountant(t, root, orphanGPU(t, root), ModeContainer, pods)
	if _, err := a.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	pods.podTable[goneUID+"/"+goneCID] = names[busyUID+"/"+busyCID]
	got, err := a.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Orphans[OrphanPodGone] != (Orphans{}) {
		t.Errorf("pod_gone orphans = %+v, want none: the pod is known now", got[0].Orphans[OrphanPodGone])
	}
	// Unknown again: the grace starts over.
	delete(pods.podTable, goneUID+"/"+goneCID)
	got, _ = a.Collect(context.Background())
	if got[0].Orphans[OrphanPodGone] != (Orphans{}) {
		t.Errorf("pod_gone orphans = %+v right after the pod went, want none yet", got[0].Orphans[OrphanPodGone])
	}
}

// Without a pod informer, or before it has synced, orphans cannot be told.
func TestAccountantOrphansUnknown(t *testing.T) {
	t.Parallel()
	for name, pods := range map[string]PodLookup{
		"no informer":    nil,
		"not synced yet": &syncedTable{podTable: names},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			a, _, _ := newTestAccountant(t, root, orphanGPU(t, root), ModeContainer, pods)
			for range 2 {
				got, err := a.Collect(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if got[0].OrphansKnown || got[0].Orphans != [numOrphanKinds]Orphans{} {
					t.Fatalf("orphans = %v (known %v), want unknown", got[0].Orphans, got[0].OrphansKnown)
				}
			}
		})
	}
}
