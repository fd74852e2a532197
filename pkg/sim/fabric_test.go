package sim

import (
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// The hgx scenario is an HGX H100 baseboard: 8 GPUs with 18 links each, 4
// NVSwitches with 36 ports each, every default field on every entity that
// carries it, each GPU link's peer its switch.
func TestHGXInventory(t *testing.T) {
	t.Parallel()
	set := fields.MustNew().Defaults()
	s := newSim(t, builtin(t, "hgx"), set)
	for _, at := range []time.Duration{0, 30 * time.Second, 90 * time.Second, 26 * time.Hour} {
		smp := s.readAt(at)
		count := map[string]int{}
		for e, ent := range smp.Inventory.Entities {
			kind := ent.Kind.String()
			if ent.Kind == source.NVLink && ent.Parent == source.NVSwitch {
				kind = "port"
			}
			count[kind]++
			for c, f := range set {
				if !f.Levels.Has(ent.Kind.Level()) || ent.Kind == source.NVLink && !carries(ent, f) {
					continue
				}
				if _, ok := smp.At(e, c).Number(); !ok {
					t.Errorf("at %s: %s has no value for %s", at, ent.Key(), f.DCGMName)
				}
			}
			if ent.Kind == source.NVLink && ent.Parent == source.GPU {
				if want := []string{source.PeerNVSwitch, itoa(ent.Link % 4)}; ent.PeerType != want[0] || ent.Peer != want[1] {
					t.Errorf("%s peer %s %s, want %v", ent.Key(), ent.PeerType, ent.Peer, want)
				}
			}
		}
		want := map[string]int{"gpu": 8, "nvlink": 8 * 18, "nvswitch": 4, "port": 8 * 18}
		for k, n := range want {
			if count[k] != n {
				t.Errorf("at %s: %d %s entities, want %d", at, count[k], k, n)
			}
		}
	}
}

// carries reports whether a link entity of the scenario is meant to carry f:
// GPU links the GPU NVLink counters, switch ports the NVSwitch port fields.
func carries(e source.Entity, f fields.Field) bool {
	switchPort := f.Name[:len("nvswitch_")] == "nvswitch_"
	return switchPort == (e.Parent == source.NVSwitch)
}

func itoa(i int) string { return string(rune('0' + i)) }

// GPU 3's link 7 degrades: no errors before 15s, CRC errors whose rate
// grows, then down at 60s (the other links stay up) with its traffic
// stopped and the NVLink health watch failing.
func TestHGXDegradingLink(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	var set []fields.Field
	for _, id := range []uint16{409, 843} {
		f, _ := cat.ByID(id)
		set = append(set, f)
	}
	s := newSim(t, builtin(t, "hgx"), set)
	const bad = "link:3:7"
	crc := func(at time.Duration) float64 {
		return s.number(s.readAt(at), bad, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL")
	}
	if n := crc(10 * time.Second); n != 0 {
		t.Errorf("CRC errors at 10s: %g, want 0", n)
	}
	early := crc(30*time.Second) - crc(20*time.Second)
	late := crc(50*time.Second) - crc(40*time.Second)
	if early <= 0 || late <= early {
		t.Errorf("CRC errors per 10s: %g at 20-30s, %g at 40-50s; want a rising rate", early, late)
	}
	state := func(at time.Duration, key string) source.LinkState {
		smp := s.readAt(at)
		for e := range smp.Inventory.Entities {
			if smp.Inventory.Entities[e].Key() == key {
				return smp.LinkState(e)
			}
		}
		t.Fatalf("no entity %s", key)
		return 0
	}
	cases := []struct {
		at   time.Duration
		key  string
		want source.LinkState
	}{
		{59 * time.Second, bad, source.LinkUp},
		{60 * time.Second, bad, source.LinkDown},
		{10 * time.Minute, bad, source.LinkDown},
		{10 * time.Minute, "link:3:6", source.LinkUp},
		{10 * time.Minute, "link:2:7", source.LinkUp},
	}
	for _, tc := range cases {
		if got := state(tc.at, tc.key); got != tc.want {
			t.Errorf("%s at %s: state %d, want %d", tc.key, tc.at, got, tc.want)
		}
	}
	tx := func(at time.Duration) float64 {
		return s.number(s.readAt(at), bad, "DCGM_FI_DEV_NVLINK_TX_THROUGHPUT_TOTAL")
	}
	if before, after := tx(61*time.Second), tx(5*time.Minute); after != before {
		t.Errorf("traffic on the down link: %g KiB at 61s, %g at 5m; want none", before, after)
	}
	if h, err := s.src.HealthIncidents(t.Context()); err != nil || len(h) != 1 || h[0].GPU != 3 || h[0].Subsystem != "nvlink" {
		t.Errorf("health at 5m: %+v, %v; want GPU 3 nvlink", h, err)
	}
}

// Losing a GPU takes its links out of the inventory, never the switches or
// their ports.
func TestLostGPUKeepsSwitches(t *testing.T) {
	t.Parallel()
	scn := parse(t, oneGPU+`  - model: "NVIDIA H100 80GB HBM3"
    memory_mib: 81559
fabric:
  nvswitches: 2
  links_per_gpu: 2
  switch_fields: {DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS: 40}
faults:
  - {at: 1m, gpu: 0, lost: true}
`)
	cat := fields.MustNew()
	f, _ := cat.ByID(858)
	s := newSim(t, scn, []fields.Field{f})
	keys := func(at time.Duration) map[string]bool {
		out := map[string]bool{}
		for _, e := range s.readAt(at).Inventory.Entities {
			out[e.Key()] = true
		}
		return out
	}
	before, after := keys(0), keys(2*time.Minute)
	for _, k := range []string{"link:0:0", "link:0:1", "link:1:1", "switch:0", "switch:1", "swlink:0:0", "swlink:1:1"} {
		if !before[k] {
			t.Errorf("%s missing before the loss", k)
		}
	}
	for k, want := range map[string]bool{"gpu:0": false, "link:0:0": false, "link:1:0": true, "switch:0": true, "swlink:0:0": true} {
		if after[k] != want {
			t.Errorf("after GPU 0 is lost: %s present %v, want %v", k, after[k], want)
		}
	}
}

// With a fabric interval the links' and switches' values, the fabric
// fields of GPUs and the link states change only at its multiples; the
// other GPU fields change on every read.
func TestFabricInterval(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	var set []fields.Field
	for _, id := range []uint16{155, 843, 409} { // power, NVLink bytes sent, CRC flit errors
		f, _ := cat.ByID(id)
		set = append(set, f)
	}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var now time.Time
	src := New(builtin(t, "hgx"), WithStart(start), WithClock(func() time.Time { return now }), WithFabricInterval(30*time.Second))
	if err := src.Watch(t.Context(), set); err != nil {
		t.Fatal(err)
	}
	read := func(at time.Duration) *source.Sample {
		t.Helper()
		now = start.Add(at)
		s, err := src.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	row := func(s *source.Sample, key string) int {
		for i := range s.Inventory.Entities {
			if s.Inventory.Entities[i].Key() == key {
				return i
			}
		}
		t.Fatalf("no %s", key)
		return -1
	}
	a, b, c := read(31*time.Second), read(59*time.Second), read(61*time.Second)
	link := row(a, "link:3:7")
	cases := []struct {
		what       string
		e, col     int
		same, next bool // equal from 31s to 59s; equal from 59s to 61s
	}{
		{"GPU power", row(a, "gpu:0"), 0, false, false},
		{"GPU NVLink bytes (a fabric field)", row(a, "gpu:3"), 1, true, false},
		{"link CRC errors", link, 2, true, false},
	}
	for _, tc := range cases {
		if got := a.At(tc.e, tc.col) == b.At(tc.e, tc.col); got != tc.same {
			t.Errorf("%s: 31s %+v, 59s %+v; want equal %v", tc.what, a.At(tc.e, tc.col), b.At(tc.e, tc.col), tc.same)
		}
		if got := b.At(tc.e, tc.col) == c.At(tc.e, tc.col); got != tc.next {
			t.Errorf("%s: 59s %+v, 61s %+v; want equal %v", tc.what, b.At(tc.e, tc.col), c.At(tc.e, tc.col), tc.next)
		}
	}
	if b.LinkState(link) != source.LinkUp || c.LinkState(link) != source.LinkDown {
		t.Errorf("link 3:7 state %d at 59s, %d at 61s; want up, then down at the 60s update", b.LinkState(link), c.LinkState(link))
	}
}
