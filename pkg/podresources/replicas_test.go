package podresources

import (
	"strconv"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// advertised is what NVIDIA's k8s-device-plugin makes of one device shared
// with n replicas: NewAnnotatedID(id, i) for i in 0..n-1
// (internal/rm/device_map.go, NVIDIA/k8s-device-plugin@1b826acc).
func advertised(id string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = id + "::" + strconv.Itoa(i)
	}
	return out
}

func TestTableReplicas(t *testing.T) {
	t.Parallel()
	inv := testInventory()
	gpu0, gpu1, gi1, gi2 := &inv.Entities[0], &inv.Entities[1], &inv.Entities[2], &inv.Entities[3]
	otherGPU := "GPU-99999999-8888-7777-6666-555544443333"
	tests := []struct {
		name  string
		ids   []string
		ent   *source.Entity
		want  int
		wantM []string // AllocatableMalformed
	}{
		{"time-sliced gpu", advertised(uuid0, 4), gpu0, 4, nil},
		{"other gpu is not shared", advertised(uuid0, 4), gpu1, 0, nil},
		{"whole gpus only", []string{uuid0, uuid1}, gpu0, 0, nil},
		{"uuid case folded", advertised("GPU-5FD4EE69-8D8F-2AD8-63D5-D3C6E7D5D4CC", 3), gpu0, 3, nil},
		{"index strategy", advertised("1", 2), gpu1, 2, nil},
		{"a repeated id counts once", append(advertised(uuid0, 2), uuid0+"::1"), gpu0, 2, nil},
		{"mig device replicas", append(advertised(mig0, 2), advertised(mig1, 5)...), gi1, 2, nil},
		{"mig device replicas, other instance", append(advertised(mig0, 2), advertised(mig1, 5)...), gi2, 5, nil},
		{"gpu replicas do not count for its mig instances", advertised(uuid1, 2), gi1, 0, nil},
		{"a gpu the inventory lacks", advertised(otherGPU, 7), gpu0, 0, nil},
		{"malformed suffix leaves the gpu uncounted", append(advertised(uuid0, 3), uuid0+"::x"), gpu0, 0, []string{uuid0 + "::x"}},
		{"empty suffix leaves the gpu uncounted", append(advertised(uuid0, 3), uuid0+"::"), gpu0, 0, []string{uuid0 + "::"}},
		{"a malformed id of another gpu", append(advertised(uuid0, 3), uuid1+"::-1"), gpu0, 3, []string{uuid1 + "::-1"}},
		{"garbage", append(advertised(uuid0, 3), "::", "GPU-zz::1"), gpu0, 3, []string{"::", "GPU-zz::1"}},
		{"gke vgpus are not counted", []string{"nvidia0/vgpu0", "nvidia0/vgpu1"}, gpu0, 0, nil},
		{"hami slots are not counted", []string{uuid0 + "-0", uuid0 + "-1"}, gpu0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tab := NewTable(nil, []string{"nvidia.com/gpu"}, IDTypeAuto).WithAllocatable(tt.ids, IDTypeAuto)
			if got := tab.Replicas(tt.ent); got != tt.want {
				t.Errorf("Replicas = %d, want %d", got, tt.want)
			}
			if got := tab.AllocatableMalformed(); !equalStrings(got, tt.wantM) {
				t.Errorf("AllocatableMalformed = %q, want %q", got, tt.wantM)
			}
		})
	}
}

func TestTableWithAllocatableKeepsAllocations(t *testing.T) {
	t.Parallel()
	inv := testInventory()
	base := NewTable(listResponse(
		ctr{"ml", "a", "main", map[string][]string{"nvidia.com/gpu": {uuid0 + "::0", uuid0 + "::2"}}, nil},
	), []string{"nvidia.com/gpu"}, IDTypeAuto)
	tab := base.WithAllocatable(advertised(uuid0, 4), IDTypeAuto)
	hs := tab.Holders(&inv.Entities[0])
	if len(hs) != 1 || hs[0].Replicas != 2 {
		t.Fatalf("Holders = %+v, want one holder of 2 replicas", hs)
	}
	if base.Replicas(&inv.Entities[0]) != 0 {
		t.Error("WithAllocatable changed the table it was called on")
	}
	if tab.Equal(base) {
		t.Error("tables with different replica counts are Equal: the join would keep stale counts")
	}
	if !tab.Equal(base.WithAllocatable(advertised(uuid0, 4), IDTypeAuto)) {
		t.Error("tables with the same allocations and counts are not Equal")
	}
	if tab.Equal(base.WithAllocatable(advertised(uuid0, 5), IDTypeAuto)) {
		t.Error("tables with 4 and 5 replicas are Equal")
	}
	if base.WithAllocatable(nil, IDTypeAuto) != base {
		t.Error("WithAllocatable(nil) made a new table")
	}
	var nilTable *Table
	if nilTable.Replicas(&inv.Entities[0]) != 0 || nilTable.AllocatableMalformed() != nil {
		t.Error("a nil table has replicas")
	}
	if got := nilTable.WithAllocatable(advertised(uuid0, 2), IDTypeAuto).Replicas(&inv.Entities[0]); got != 2 {
		t.Errorf("nil table WithAllocatable: Replicas = %d, want 2", got)
	}
}

// FuzzWithAllocatable: any allocatable ids are counted without a panic,
// and a device's count never exceeds its distinct ids.
func FuzzWithAllocatable(f *testing.F) {
	f.Add(uuid0+"::0", uuid0+"::1", uuid0+"::x")
	f.Add("0::0", "0::1", "nvidia0/vgpu1")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		inv := testInventory()
		tab := (*Table)(nil).WithAllocatable([]string{a, b, c}, IDTypeAuto)
		for i := range inv.Entities {
			if n := tab.Replicas(&inv.Entities[i]); n < 0 || n > 3 {
				t.Fatalf("Replicas(%d) = %d from 3 ids", i, n)
			}
		}
	})
}
