package podresources

import (
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// A MIG UUID is matched whatever the case of its hex digits, as a GPU UUID
// is: the kubelet reports what the device plugin wrote, and NVML spells
// the UUID in lower case. Kills either side of the MIG lookup skipping
// uuidKey (issue 34).
func TestMutationMIGUUIDCaseFolded(t *testing.T) {
	t.Parallel()
	upper := "MIG-" + strings.ToUpper(mig0[4:])
	for _, tc := range []struct {
		name            string
		kubelet, source string
	}{
		{"kubelet upper, NVML lower", upper, mig0},
		{"kubelet lower, NVML upper", mig0, upper},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			table := NewTable(listResponse(ctr{ns: "ml", pod: "p", name: "c", devices: map[string][]string{"nvidia.com/mig-3g.40gb": {tc.kubelet}}}),
				DefaultResourceNames(), IDTypeAuto)
			e := source.Entity{Kind: source.GPUInstance, GPU: 1, UUID: uuid1, Device: "nvidia1", GPUInstance: 1, ComputeInstance: -1, MIGUUID: tc.source}
			got := table.Holders(&e)
			if len(got) != 1 || got[0].Pod != "p" {
				t.Errorf("Holders = %+v, want the pod holding %s", got, tc.kubelet)
			}
			inv := &source.Inventory{Entities: []source.Entity{e}}
			if u := table.Unmatched(inv); len(u) != 0 {
				t.Errorf("Unmatched = %v, want none", u)
			}
		})
	}
}

// One time-sliced replica is shared even while its container is the GPU's
// only holder: the other replicas may be free now and taken later, and
// the GPU is configured for sharing (gpu_pod_allocation_info's
// shared="true"). Kills Shared decided from the replica suffix alone
// being dropped (issue 34).
func TestMutationSingleReplicaIsShared(t *testing.T) {
	t.Parallel()
	inv := testInventory()
	for _, id := range []string{uuid0 + "::3", uuid0} {
		table := NewTable(listResponse(ctr{ns: "ml", pod: "p", name: "c", devices: map[string][]string{"nvidia.com/gpu": {id}}}),
			DefaultResourceNames(), IDTypeAuto)
		got := table.Holders(&inv.Entities[0])
		want := strings.Contains(id, "::")
		if len(got) != 1 || got[0].Shared != want {
			t.Errorf("%s: Holders = %+v, want one holder with Shared %v", id, got, want)
		}
	}
}
