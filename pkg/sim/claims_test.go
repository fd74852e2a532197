package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// A MIG instance's placement_start becomes the entity's placement; one
// without it has none.
func TestScenarioMIGPlacement(t *testing.T) {
	t.Parallel()
	inventory := func(name string) *source.Inventory {
		src := New(builtin(t, name))
		defer src.Close()
		inv, err := src.Inventory(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	got := map[int]string{}
	for _, e := range inventory("dra").Entities {
		if e.Kind == source.GPUInstance {
			s := "unknown"
			if e.MIGPlacementKnown {
				s = string(rune('0' + e.MIGPlacementStart))
			}
			got[e.GPUInstance] = s
		}
	}
	if got[9] != "0" || got[2] != "4" || got[13] != "1" {
		t.Errorf("placements by GPU instance %v, want 9:0 2:4 13:1", got)
	}
	for _, e := range inventory("mig").Entities {
		if e.Kind == source.GPUInstance && e.MIGPlacementKnown {
			t.Errorf("mig scenario instance %d has a placement it does not declare", e.GPUInstance)
		}
	}
}

// Claims are checked where they are read.
func TestScenarioClaimErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ claims, want string }{
		{`[{name: c}]`, "devices"},
		{`[{name: c, devices: []}]`, "at least one device"},
		{`[{name: c, devices: [{device: gpu-0}]}]`, "pool"},
		{`[{name: c, devices: [{pool: p, device: gpu-0, bogus: 1}]}]`, "bogus"},
	} {
		_, err := Parse("test.yaml", []byte(`name: x
gpus: [{model: m, memory_mib: 1024}]
pods:
  - namespace: ns
    name: p
    containers:
      - name: main
        claims: `+tc.claims+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("claims %s: error %v, want one naming %q", tc.claims, err, tc.want)
		}
	}
}
