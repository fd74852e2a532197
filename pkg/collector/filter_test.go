package collector

import (
	"slices"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// --collect.gpus keeps the selected GPUs' links with their states, and
// every NVSwitch and switch port.
func TestFilterKeepsLinksAndSwitches(t *testing.T) {
	t.Parallel()
	inv := &source.Inventory{Entities: []source.Entity{
		{Kind: source.GPU, GPU: 0},
		{Kind: source.GPU, GPU: 1},
		{Kind: source.NVLink, GPU: 0, Link: 0},
		{Kind: source.NVLink, GPU: 1, Link: 0},
		{Kind: source.NVSwitch, GPU: -1, ID: 3},
		{Kind: source.NVLink, Parent: source.NVSwitch, GPU: -1, ID: 3, Link: 4},
	}}
	s := source.NewSample(time.Unix(0, 0), inv, nil)
	s.LinkStates = []source.LinkState{0, 0, source.LinkDown, source.LinkUp, 0, source.LinkUp}
	f := newGPUFilter([]int{1})
	out := f.apply(s)
	var keys []string
	for i := range out.Inventory.Entities {
		keys = append(keys, out.Inventory.Entities[i].Key())
	}
	if want := []string{"gpu:1", "link:1:0", "switch:3", "swlink:3:4"}; !slices.Equal(keys, want) {
		t.Errorf("kept %v, want %v", keys, want)
	}
	if want := []source.LinkState{0, source.LinkUp, 0, source.LinkUp}; !slices.Equal(out.LinkStates, want) {
		t.Errorf("link states %v, want %v", out.LinkStates, want)
	}
}
