package podlabels

import "testing"

func TestStoreSynced(t *testing.T) {
	t.Parallel()
	a := newAPIServer(t, newPod("ml", "train", thisNode, nil))
	s, err := New(fakePods(a.client), Config{Node: thisNode, Containers: true}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Synced() {
		t.Fatal("Synced before Run")
	}
	s, _ = startStore(t, a, Config{Node: thisNode, Containers: true})
	if !s.Synced() {
		t.Error("not Synced after Run returned with the pods listed")
	}
}
