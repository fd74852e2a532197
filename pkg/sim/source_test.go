package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// player is a Source on a clock the test moves.
type player struct {
	t     *testing.T
	cat   *fields.Catalog
	src   *Source
	start time.Time
	now   time.Time
	set   []fields.Field
}

func newSim(t *testing.T, scn *Scenario, set []fields.Field) *player {
	t.Helper()
	s := &player{t: t, cat: fields.MustNew(), start: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), set: set}
	s.now = s.start
	s.src = New(scn, WithStart(s.start), WithClock(func() time.Time { return s.now }))
	if err := s.src.Watch(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	return s
}

func builtin(t *testing.T, name string) *Scenario {
	t.Helper()
	scn, err := LoadBuiltin(name)
	if err != nil {
		t.Fatal(err)
	}
	return scn
}

func parse(t *testing.T, in string) *Scenario {
	t.Helper()
	scn, err := Parse("test.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	return scn
}

// readAt reads at elapsed time at and fails the test on error.
func (s *player) readAt(at time.Duration) *source.Sample {
	s.t.Helper()
	smp, err := s.tryAt(at)
	if err != nil {
		s.t.Fatalf("read at %s: %v", at, err)
	}
	return smp
}

func (s *player) tryAt(at time.Duration) (*source.Sample, error) {
	s.now = s.start.Add(at)
	return s.src.Read(context.Background())
}

// value returns the value of the named field for the entity with key.
func (s *player) value(smp *source.Sample, key, field string) source.Value {
	s.t.Helper()
	want, _ := s.cat.Lookup(field)
	col := -1
	for c, f := range smp.Fields {
		if f.ID == want.ID {
			col = c
		}
	}
	for e := range smp.Inventory.Entities {
		if smp.Inventory.Entities[e].Key() == key && col >= 0 {
			return smp.At(e, col)
		}
	}
	s.t.Fatalf("no entity %s or field %s in the sample", key, field)
	return source.Value{}
}

func (s *player) number(smp *source.Sample, key, field string) float64 {
	s.t.Helper()
	v, ok := s.value(smp, key, field).Number()
	if !ok {
		s.t.Fatalf("%s %s is not a number: %+v", key, field, s.value(smp, key, field))
	}
	return v
}

func TestSourceBasics(t *testing.T) {
	t.Parallel()
	src := New(builtin(t, "demo"))
	if src.Name() != "sim" {
		t.Errorf("name %q", src.Name())
	}
	ctx := context.Background()
	if err := src.Watch(ctx, nil); err == nil {
		t.Error("watching no fields succeeded")
	}
	if _, err := src.Read(ctx); err == nil {
		t.Error("read before watch succeeded")
	}
	if e := src.Elapsed(); e < 0 || e > time.Minute {
		t.Errorf("elapsed %s right after New", e)
	}
	none := []fields.Field{{ID: 9999, Levels: fields.LevelGPU}}
	if err := src.Watch(ctx, none); err == nil {
		t.Error("watching only fields the scenario lacks succeeded")
	}
	if err := src.Watch(ctx, fields.MustNew().Defaults()); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Read(ctx); err == nil {
		t.Error("read after close succeeded")
	}
}

func TestReadHonoursContext(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "demo"), fields.MustNew().Defaults())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.src.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("read: %v, want context.Canceled", err)
	}
	if _, err := s.src.Inventory(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("inventory: %v, want context.Canceled", err)
	}
	if err := s.src.Watch(ctx, s.set); !errors.Is(err, context.Canceled) {
		t.Errorf("watch: %v, want context.Canceled", err)
	}
}

func TestSampleLayout(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	var set []fields.Field
	for _, name := range []string{"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_SM_CLOCK"} {
		f, _ := cat.Lookup(name)
		set = append(set, f)
	}
	s := newSim(t, builtin(t, "demo"), set)
	smp := s.readAt(time.Minute)
	if !smp.Time.Equal(s.start.Add(time.Minute)) {
		t.Errorf("sample time %s", smp.Time)
	}
	if len(smp.Fields) != 3 || smp.Fields[1].ID != 250 || len(smp.Values) != 8*3 {
		t.Fatalf("columns %v, %d values", smp.Fields, len(smp.Values))
	}
	inv, err := s.src.Inventory(context.Background())
	if err != nil || inv != smp.Inventory {
		t.Errorf("inventory %p (%v), sample's %p", inv, err, smp.Inventory)
	}
	for e := range 8 {
		if v := smp.At(e, 1); v != source.IntValue(81559) {
			t.Errorf("GPU %d FB total %+v", e, v)
		}
	}
	if again := s.readAt(time.Minute); again.Values[0] != smp.Values[0] || again.Values[2] != smp.Values[2] {
		t.Error("same time, different values")
	}
}

func TestDemoHasEveryDefaultField(t *testing.T) {
	t.Parallel()
	set := fields.MustNew().Defaults()
	s := newSim(t, builtin(t, "demo"), set)
	for _, at := range []time.Duration{0, 37 * time.Second, 90 * time.Second, 10 * time.Minute, 26 * time.Hour} {
		smp := s.readAt(at)
		if n := smp.Inventory.GPUs(); n != 8 {
			t.Fatalf("%d GPUs, want 8", n)
		}
		for e, ent := range smp.Inventory.Entities {
			for c, f := range set {
				if f.Fabric {
					continue // the demo node has no NVLink fabric; hgx has every fabric field
				}
				v := smp.At(e, c)
				if _, ok := v.Number(); !ok {
					t.Errorf("at %s: GPU %d has no value for %s", at, ent.GPU, f.DCGMName)
				}
				if f.Kind == fields.Bitmask && v.Kind != source.Int {
					t.Errorf("at %s: GPU %d %s is %v, want an integer bitmask", at, ent.GPU, f.DCGMName, v)
				}
			}
		}
	}
}

func TestDemoStory(t *testing.T) {
	t.Parallel()
	scn := builtin(t, "demo")
	s := newSim(t, scn, fields.MustNew().All())
	const reasons = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
	var hot, hotMax float64
	var sawSW, sawHW bool
	for at := time.Duration(0); at < 4*time.Minute; at += 5 * time.Second {
		smp := s.readAt(at)
		temp := s.number(smp, "gpu:4", "DCGM_FI_DEV_GPU_TEMP")
		hot += temp / 48
		hotMax = max(hotMax, temp)
		r := int64(s.number(smp, "gpu:4", reasons))
		sawSW = sawSW || r&0x20 != 0
		sawHW = sawHW || r&0x40 != 0
		if r&0x40 != 0 && temp < 88 {
			t.Errorf("at %s: hw_thermal at %g °C", at, temp)
		}
		for _, gpu := range []string{"gpu:0", "gpu:3"} {
			if u := s.number(smp, gpu, "DCGM_FI_DEV_GPU_UTIL"); u < 80 {
				t.Errorf("at %s: training %s utilization %g", at, gpu, u)
			}
		}
		for _, gpu := range []string{"gpu:5", "gpu:6"} {
			if u := s.number(smp, gpu, "DCGM_FI_DEV_GPU_UTIL"); u != 0 {
				t.Errorf("at %s: idle %s utilization %g", at, gpu, u)
			}
		}
	}
	if hot < 86.5 || hot > 88.5 || hotMax < 89 || !sawSW || !sawHW {
		t.Errorf("GPU 4: mean %.1f °C, max %g, sw_thermal %v, hw_thermal %v; want a hot GPU near 88 °C with both events", hot, hotMax, sawSW, sawHW)
	}

	before, after := s.readAt(59*time.Second), s.readAt(61*time.Second)
	if x := s.number(before, "gpu:7", "DCGM_FI_DEV_XID_ERRORS"); x != 0 {
		t.Errorf("XID before 1m: %g", x)
	}
	if x := s.number(after, "gpu:7", "DCGM_FI_DEV_XID_ERRORS"); x != 48 {
		t.Errorf("XID after 1m: %g, want 48 (a double-bit error; GPU 7 keeps answering)", x)
	}
	if e1, e2 := s.number(before, "gpu:7", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"), s.number(s.readAt(10*time.Minute), "gpu:7", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"); e1 < 1 || e2 <= e1 {
		t.Errorf("GPU 7 single-bit errors %g then %g: want counting up", e1, e2)
	}

	held := map[string]string{}
	for _, p := range scn.PodsAt(time.Minute) {
		for _, c := range p.Containers {
			for _, d := range c.Devices {
				for _, id := range d.IDs {
					held[id] = p.Namespace + "/" + p.Name
				}
			}
		}
	}
	ents := scn.segmentAt(0).inv.Entities
	for gpu, want := range []string{"ml/trainer-0", "ml/trainer-0", "ml/trainer-0", "ml/trainer-0", "ml/finetune-0", "research/notebook-0", "", "inference/server-0"} {
		if got := held[ents[gpu].UUID]; got != want {
			t.Errorf("GPU %d held by %q, want %q", gpu, got, want)
		}
	}
}

func TestFreeMemoryIsDerived(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "demo"), fields.MustNew().All())
	for _, at := range []time.Duration{0, 20 * time.Second, 5 * time.Minute} {
		smp := s.readAt(at)
		for _, gpu := range []string{"gpu:0", "gpu:5", "gpu:7"} {
			total := s.number(smp, gpu, "DCGM_FI_DEV_FB_TOTAL")
			used := s.number(smp, gpu, "DCGM_FI_DEV_FB_USED")
			free := s.number(smp, gpu, "DCGM_FI_DEV_FB_FREE")
			reserved := s.number(smp, gpu, "DCGM_FI_DEV_FB_RESERVED")
			if used+free+reserved != total || s.value(smp, gpu, "DCGM_FI_DEV_FB_FREE").Kind != source.Int {
				t.Errorf("at %s %s: used %g + free %g + reserved %g != total %g", at, gpu, used, free, reserved, total)
			}
		}
	}
}

func TestRepeatedGPUsDiffer(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "scale-64"), fields.MustNew().All())
	smp := s.readAt(time.Minute)
	a, b := s.number(smp, "gpu:0", "DCGM_FI_DEV_POWER_USAGE"), s.number(smp, "gpu:1", "DCGM_FI_DEV_POWER_USAGE")
	if a == b {
		t.Errorf("GPUs 0 and 1 draw exactly %g W: noise is not keyed per GPU", a)
	}
}

func TestScale64(t *testing.T) {
	t.Parallel()
	scn := builtin(t, "scale-64")
	all := fields.MustNew().All()
	s := newSim(t, scn, all)
	smp := s.readAt(2 * time.Minute)
	if n := smp.Inventory.GPUs(); n != 64 {
		t.Fatalf("%d GPUs, want 64", n)
	}
	for e := range smp.Inventory.Entities {
		for c, f := range all {
			if f.Fabric {
				continue // scale-64 has no NVLink fabric; hgx has every fabric field
			}
			if _, ok := smp.At(e, c).Number(); !ok {
				t.Errorf("GPU %d has no value for %s", e, f.DCGMName)
			}
		}
	}
	pods := scn.PodsAt(0)
	seen := map[string]bool{}
	for _, p := range pods {
		id := p.Containers[0].Devices[0].IDs[0]
		if seen[id] {
			t.Errorf("GPU %s held twice", id)
		}
		seen[id] = true
	}
	if len(pods) != 64 || len(seen) != 64 {
		t.Errorf("%d pods on %d GPUs, want 64 on 64", len(pods), len(seen))
	}
}

func TestMIG(t *testing.T) {
	t.Parallel()
	scn := builtin(t, "mig")
	s := newSim(t, scn, fields.MustNew().All())
	smp := s.readAt(time.Minute)
	ents := smp.Inventory.Entities
	wantKeys := []string{"gpu:0", "gpu:1", "gpu:2",
		"gi:0:7", "gi:0:8", "gi:0:9", "gi:0:10", "gi:0:11", "gi:0:12", "gi:0:13",
		"gi:1:2", "gi:1:3", "gi:1:9", "gi:1:10"}
	if len(ents) != len(wantKeys) {
		t.Fatalf("%d entities, want %d", len(ents), len(wantKeys))
	}
	for i, want := range wantKeys {
		if got := ents[i].Key(); got != want {
			t.Errorf("entity %d is %s, want %s", i, got, want)
		}
	}
	gi := ents[3]
	if gi.Kind != source.GPUInstance || gi.UUID != ents[0].UUID || gi.ComputeInstance != -1 ||
		gi.MIGProfile != "1g.10gb" || !strings.HasPrefix(gi.MIGUUID, "MIG-") || gi.MemoryBytes != 9984<<20 || gi.Device != "nvidia0" {
		t.Errorf("instance entity %+v", gi)
	}
	if big := ents[10]; big.MIGProfile != "3g.40gb" || big.MemoryBytes != 40448<<20 || big.GPU != 1 {
		t.Errorf("3g instance %+v", big)
	}

	for _, gpu := range []string{"gpu:0", "gpu:1"} {
		if v := s.value(smp, gpu, "DCGM_FI_DEV_GPU_UTIL"); v.Kind != source.Blank {
			t.Errorf("%s in MIG mode has utilization %+v, want Blank", gpu, v)
		}
		if v := s.value(smp, gpu, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"); v.Kind != source.Blank {
			t.Errorf("%s in MIG mode has GPU-level engine activity %+v", gpu, v)
		}
	}
	if u := s.number(smp, "gpu:2", "DCGM_FI_DEV_GPU_UTIL"); u < 50 {
		t.Errorf("non-MIG GPU 2 utilization %g", u)
	}
	if a := s.number(smp, "gi:0:7", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"); a <= 0 || a > 1 {
		t.Errorf("busy instance activity %g", a)
	}
	if a := s.number(smp, "gi:0:11", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"); a != 0 {
		t.Errorf("free instance activity %g", a)
	}
	if tot := s.number(smp, "gi:1:3", "DCGM_FI_DEV_FB_TOTAL"); tot != 20096 {
		t.Errorf("2g instance FB total %g", tot)
	}
	// Fields the catalog has at GPU level only are Blank for instances.
	if v := s.value(smp, "gi:0:7", "DCGM_FI_DEV_SM_CLOCK"); v.Kind != source.Blank {
		t.Errorf("instance SM clock %+v, want Blank", v)
	}

	ids := map[string]Device{}
	for _, p := range scn.PodsAt(0) {
		ids[p.Namespace+"/"+p.Name] = p.Containers[0].Devices[0]
	}
	if d := ids["inference/small-model-0"]; d.Resource != "nvidia.com/mig-1g.10gb" || len(d.IDs) != 1 || d.IDs[0] != gi.MIGUUID {
		t.Errorf("small-model-0 holds %+v, want the MIG UUID of GPU 0 instance 7 (%s)", d, gi.MIGUUID)
	}
	if d := ids["ml/trainer-mig-0"]; d.IDs[0] != ents[10].MIGUUID || d.Resource != "nvidia.com/mig-3g.40gb" {
		t.Errorf("trainer-mig-0 holds %+v", d)
	}
	if d := ids["ml/trainer-1"]; d.IDs[0] != ents[2].UUID {
		t.Errorf("trainer-1 holds %+v, want GPU 2", d)
	}
}

func TestTimeSlicingIDs(t *testing.T) {
	t.Parallel()
	scn := builtin(t, "timeslicing")
	ents := scn.segmentAt(0).inv.Entities
	holders := map[string][]string{}
	var double []string
	for _, p := range scn.PodsAt(0) {
		d := p.Containers[0].Devices[0]
		for _, id := range d.IDs {
			holders[id] = append(holders[id], p.Name)
		}
		if p.Name == "double-0" {
			double = d.IDs
		}
		if p.Name == "embed-0" && d.Resource != "nvidia.com/gpu.shared" {
			t.Errorf("embed-0 resource %q", d.Resource)
		}
	}
	for r, pod := range []string{"shared-a", "shared-b", "shared-c"} {
		id := ents[0].UUID + "::" + string(rune('0'+r))
		if got := holders[id]; len(got) != 1 || got[0] != pod {
			t.Errorf("%s held by %v, want %s", id, got, pod)
		}
	}
	if want := []string{ents[3].UUID + "::0", ents[3].UUID + "::1"}; len(double) != 2 || double[0] != want[0] || double[1] != want[1] {
		t.Errorf("double-0 holds %v, want %v", double, want)
	}
	if got := holders[ents[1].UUID+"::3"]; len(got) != 1 || got[0] != "embed-1" {
		t.Errorf("GPU 1 replica 3 held by %v", got)
	}
}

func TestDeviceIDForms(t *testing.T) {
	t.Parallel()
	scn := parse(t, `
name: forms
gpus:
  - {model: a, memory_mib: 100}
  - {model: a, memory_mib: 100, mig: [{profile: 1g.5gb, gpu_instance: 3, memory_mib: 50}]}
pods:
  - namespace: ns
    name: p
    uid: fixed-uid
    containers:
      - name: c
        devices:
          - resource: r
            ids: [nvidia0, "0"]
            gpus: [0]
            mig: [{gpu: 1, gpu_instance: 3}]
            replicas: [{gpu: 0, replica: 2}, {gpu: 1, gpu_instance: 3, replica: 1}]
`)
	ents := scn.entities
	pods := scn.PodsAt(0)
	want := []string{"nvidia0", "0", ents[0].UUID, ents[2].MIGUUID, ents[0].UUID + "::2", ents[2].MIGUUID + "::1"}
	got := pods[0].Containers[0].Devices[0].IDs
	if strings.Join(got, " ") != strings.Join(want, " ") || pods[0].UID != "fixed-uid" {
		t.Errorf("ids %v (uid %s), want %v in the written order", got, pods[0].UID, want)
	}
	got[0] = "changed"
	if scn.PodsAt(0)[0].Containers[0].Devices[0].IDs[0] != "nvidia0" {
		t.Error("PodsAt returns the scenario's own storage")
	}
}

func TestPodsAt(t *testing.T) {
	t.Parallel()
	churn := builtin(t, "churn")
	windows := parse(t, `
gpus: [{model: a, memory_mib: 100}]
pods:
  - {namespace: n, name: always, containers: [{name: c}]}
  - {namespace: n, name: later, from: 1m, containers: [{name: c}]}
  - {namespace: n, name: early, until: 1m, containers: [{name: c}]}
  - {namespace: n, name: window, from: 30s, until: 90s, containers: [{name: c}]}
  - {namespace: n, name: cycle, from: 10s, until: 20s, repeat: 1m, containers: [{name: c}]}
`)
	cases := []struct {
		scn  *Scenario
		at   time.Duration
		want string
	}{
		{windows, 0, "always early"},
		{windows, 15 * time.Second, "always early cycle"},
		{windows, 30 * time.Second, "always early window"},
		{windows, time.Minute, "always later window"},
		{windows, 75 * time.Second, "always later window cycle"},
		{windows, 90 * time.Second, "always later"},
		{windows, -time.Second, "always early"},
		{churn, 0, "job-a steady"},
		{churn, 5 * time.Second, "job-a job-i steady"},
		{churn, 26 * time.Second, "job-e job-i steady"},
		{churn, 30 * time.Second, "job-b job-e steady"},
		{churn, 2*time.Minute + 30*time.Second, "job-b job-e steady"},
		{churn, 100 * time.Second, "job-d job-h steady"},
		{churn, 24*time.Hour + 100*time.Second, "job-d job-h steady"},
	}
	for _, tc := range cases {
		var names []string
		for _, p := range tc.scn.PodsAt(tc.at) {
			names = append(names, p.Name)
		}
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("%s at %s: pods %q, want %q", tc.scn.Name(), tc.at, got, tc.want)
		}
	}
}

func TestPodsFollowTheClock(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "churn"), fields.MustNew().Defaults())
	s.now = s.start.Add(31 * time.Second)
	if got := s.src.Elapsed(); got != 31*time.Second {
		t.Errorf("elapsed %s", got)
	}
	if pods := s.src.Pods(); len(pods) != 3 || pods[0].Name != "job-b" {
		t.Errorf("pods at 31s: %v", pods)
	}
	s.now = s.start.Add(-time.Hour)
	if got := s.src.Elapsed(); got != 0 {
		t.Errorf("elapsed before the start %s, want 0", got)
	}
}

func TestXIDReportedOnce(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "faults"), fields.MustNew().Defaults())
	if smp := s.readAt(59 * time.Second); len(smp.XIDs) != 0 || s.number(smp, "gpu:1", "DCGM_FI_DEV_XID_ERRORS") != 0 {
		t.Errorf("before 1m: events %v", smp.XIDs)
	}
	smp := s.readAt(61 * time.Second)
	want := source.XIDEvent{Entity: 1, XID: 48, Time: s.start.Add(time.Minute)}
	if len(smp.XIDs) != 1 || smp.XIDs[0] != want {
		t.Errorf("at 61s: events %v, want [%v]", smp.XIDs, want)
	}
	if x := s.number(smp, "gpu:1", "DCGM_FI_DEV_XID_ERRORS"); x != 48 {
		t.Errorf("XID field %g, want 48", x)
	}
	if again := s.readAt(62 * time.Second); len(again.XIDs) != 0 || s.number(again, "gpu:1", "DCGM_FI_DEV_XID_ERRORS") != 48 {
		t.Errorf("at 62s: events %v: an event must be reported once, the field keeps its value", again.XIDs)
	}
	if back := s.readAt(30 * time.Second); len(back.XIDs) != 0 {
		t.Errorf("clock moved back: events %v", back.XIDs)
	}
	if late := s.readAt(70 * time.Second); len(late.XIDs) != 0 {
		t.Errorf("after the clock moved back and forth: events %v", late.XIDs)
	}
	// Two XIDs on one GPU: the field shows the last one, each is an event.
	smp = s.readAt(5 * time.Minute)
	if x := s.number(smp, "gpu:3", "DCGM_FI_DEV_XID_ERRORS"); x != 13 {
		t.Errorf("GPU 3 XID %g, want 13 (the last)", x)
	}
	var got []int64
	for _, e := range smp.XIDs {
		got = append(got, e.XID)
	}
	// XID 79 at 3m hit GPU 2, which was lost at 3m5s: not reportable now.
	if len(got) != 2 || got[0] != 94 || got[1] != 13 || smp.XIDs[0].Entity != 2 {
		t.Errorf("events since 70s: %v", smp.XIDs)
	}
}

func TestFirstReadReportsEarlierXIDs(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "demo"), fields.MustNew().Defaults())
	smp := s.readAt(10 * time.Minute)
	if len(smp.XIDs) != 1 || smp.XIDs[0].XID != 48 || smp.XIDs[0].Entity != 7 {
		t.Errorf("first read at 10m: events %v, want XID 48 on GPU 7", smp.XIDs)
	}
}

func TestOutage(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "faults"), fields.MustNew().Defaults())
	before := s.readAt(119 * time.Second)
	for _, at := range []time.Duration{2 * time.Minute, 2*time.Minute + 29*time.Second} {
		if _, err := s.tryAt(at); !errors.Is(err, source.ErrUnavailable) {
			t.Errorf("read at %s: %v, want source.ErrUnavailable", at, err)
		}
		if _, err := s.src.Inventory(context.Background()); !errors.Is(err, source.ErrUnavailable) {
			t.Errorf("inventory at %s: %v, want source.ErrUnavailable", at, err)
		}
	}
	after, err := s.tryAt(150 * time.Second)
	if err != nil {
		t.Fatalf("read after the outage: %v", err)
	}
	if after.Inventory != before.Inventory {
		t.Error("an outage changed the inventory pointer")
	}
}

func TestLostGPU(t *testing.T) {
	t.Parallel()
	s := newSim(t, builtin(t, "faults"), fields.MustNew().Defaults())
	a, b := s.readAt(170*time.Second), s.readAt(184*time.Second)
	if a.Inventory != b.Inventory {
		t.Error("inventory pointer changed with no change")
	}
	if len(b.XIDs) != 1 || b.XIDs[0].XID != 79 || b.XIDs[0].Entity != 2 {
		t.Errorf("events before the loss: %v", b.XIDs)
	}
	c := s.readAt(186 * time.Second)
	if c.Inventory == b.Inventory {
		t.Fatal("losing a GPU kept the inventory pointer")
	}
	if c.Inventory.GPUs() != 3 || len(c.Values) != 3*len(s.set) {
		t.Fatalf("%d GPUs, %d values after the loss", c.Inventory.GPUs(), len(c.Values))
	}
	for _, e := range c.Inventory.Entities {
		if e.GPU == 2 {
			t.Errorf("lost GPU 2 still in the inventory: %+v", e)
		}
	}
	if c.Inventory.Entities[2].GPU != 3 || s.number(c, "gpu:3", "DCGM_FI_DEV_FB_TOTAL") != 81559 {
		t.Errorf("rows after the loss: %+v", c.Inventory.Entities)
	}
	if d := s.readAt(time.Hour); d.Inventory != c.Inventory {
		t.Error("inventory pointer changed again without a change")
	}
	if c.Inventory.DriverVersion != "550.54.15" {
		t.Errorf("driver version %q", c.Inventory.DriverVersion)
	}
}

func TestLostGPUComesBack(t *testing.T) {
	t.Parallel()
	scn := parse(t, `
gpus: [{model: a, memory_mib: 100, count: 2}]
faults:
  - {at: 1m, gpu: 1, lost: true, duration: 1m}
  - {at: 3m, gpu: 0, lost: true, duration: 1m}
  - {at: 3m, gpu: 1, lost: true, duration: 1m}
`)
	var invs []*source.Inventory
	for _, at := range []time.Duration{0, time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute} {
		invs = append(invs, scn.segmentAt(at).inv)
	}
	if invs[0] == invs[1] || invs[1] == invs[2] || invs[2] == invs[3] || invs[3] == invs[4] {
		t.Error("inventory pointer kept across a change")
	}
	if invs[0] != invs[2] || invs[0] != invs[4] {
		t.Error("the same set of GPUs should give back the same inventory")
	}
	if n := len(invs[1].Entities); n != 1 {
		t.Errorf("%d entities while GPU 1 is lost", n)
	}
	if n := len(invs[3].Entities); n != 0 {
		t.Errorf("%d entities while both are lost", n)
	}
}

func TestLevels(t *testing.T) {
	t.Parallel()
	scn := parse(t, `
gpus:
  - model: a
    memory_mib: 100
    fields: {DCGM_FI_DEV_FB_USED: 10}
    mig: [{profile: 1g.5gb, gpu_instance: 1, memory_mib: 50, fields: {DCGM_FI_DEV_FB_USED: 5}}]
`)
	used, _ := fields.MustNew().Lookup("DCGM_FI_DEV_FB_USED")
	gpuOnly := used
	gpuOnly.Levels = fields.LevelGPU
	s := newSim(t, scn, []fields.Field{used, gpuOnly})
	smp := s.readAt(0)
	if smp.At(0, 0) != source.FloatValue(10) || smp.At(1, 0) != source.FloatValue(5) {
		t.Errorf("used: GPU %+v, instance %+v", smp.At(0, 0), smp.At(1, 0))
	}
	if smp.At(0, 1) != source.FloatValue(10) || smp.At(1, 1).Kind != source.Blank {
		t.Errorf("GPU-level column: GPU %+v, instance %+v (want Blank)", smp.At(0, 1), smp.At(1, 1))
	}
}

func TestUnsetFieldsAreBlank(t *testing.T) {
	t.Parallel()
	scn := parse(t, `
defaults:
  fields: {DCGM_FI_DEV_GPU_TEMP: 40, DCGM_FI_DEV_FB_TOTAL: 7}
gpus:
  - {model: a, memory_mib: 100}
  - {model: a, memory_mib: 100, fields: {DCGM_FI_DEV_GPU_TEMP: {blank: true}, DCGM_FI_DEV_FB_TOTAL: {blank: true}}}
`)
	cat := fields.MustNew()
	var set []fields.Field
	for _, n := range []string{"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_FB_FREE"} {
		f, _ := cat.Lookup(n)
		set = append(set, f)
	}
	smp := newSim(t, scn, set).readAt(0)
	want := []source.Value{
		source.FloatValue(40), {}, source.FloatValue(7), {},
		{}, {}, {}, {},
	}
	for k, w := range want {
		if smp.Values[k] != w {
			t.Errorf("value %d (GPU %d, %s): %+v, want %+v", k, k/4, set[k%4].DCGMName, smp.Values[k], w)
		}
	}
}

func BenchmarkRead(b *testing.B) {
	scn, err := LoadBuiltin("scale-64")
	if err != nil {
		b.Fatal(err)
	}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	src := New(scn, WithStart(start), WithClock(func() time.Time { return now }))
	ctx := context.Background()
	if err := src.Watch(ctx, fields.MustNew().All()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		if _, err := src.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLostGPUsListed(t *testing.T) {
	t.Parallel()
	scn := parse(t, `
gpus: [{model: a, memory_mib: 100, count: 3}]
faults:
  - {at: 1m, gpu: 2, lost: true}
  - {at: 2m, gpu: 0, lost: true, duration: 1m}
  - {at: 150s, gpu: 0, lost: true, duration: 1m}
  - {at: 5m, gpu: 1, lost: true, duration: 1m}
  - {at: 4m, gpu: 1, lost: true, duration: 1m}
`)
	s := newSim(t, scn, fields.MustNew().Defaults())
	lost := func(at time.Duration) string {
		s.now = s.start.Add(at)
		var out []string
		for _, g := range s.src.LostGPUs() {
			if g.UUID != scn.entities[g.GPU].UUID {
				t.Errorf("at %s: GPU %d has UUID %s, want %s", at, g.GPU, g.UUID, scn.entities[g.GPU].UUID)
			}
			out = append(out, fmt.Sprintf("%d@%s", g.GPU, g.Since.Sub(s.start)))
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		at   time.Duration
		want string
	}{
		{0, ""},
		{59 * time.Second, ""},
		{time.Minute, "2@1m0s"},
		{2 * time.Minute, "0@2m0s 2@1m0s"},
		{170 * time.Second, "0@2m0s 2@1m0s"}, // overlapping faults: left at the first
		{3 * time.Minute, "0@2m0s 2@1m0s"},   // the first ended, the second goes on
		{210 * time.Second, "2@1m0s"},        // GPU 0 came back
		{4 * time.Minute, "1@4m0s 2@1m0s"},   // adjacent faults: one absence
		{5*time.Minute + 30*time.Second, "1@4m0s 2@1m0s"},
		{6 * time.Minute, "2@1m0s"},
		{time.Hour, "2@1m0s"},
	} {
		if got := lost(c.at); got != c.want {
			t.Errorf("lost GPUs at %s: %q, want %q", c.at, got, c.want)
		}
	}
}

func TestHealthIncidents(t *testing.T) {
	t.Parallel()
	scn := parse(t, `
gpus: [{model: a, memory_mib: 100, count: 2}]
faults:
  - {at: 10s, gpu: 1, health: pcie, status: warn, duration: 1m}
  - {at: 30s, gpu: 1, health: memory, status: fail}
  - {at: 20s, gpu: 0, health: thermal, status: fail}
  - {at: 40s, gpu: 0, lost: true, duration: 10s}
  - {at: 2m, duration: 10s, outage: true}
`)
	s := newSim(t, scn, fields.MustNew().Defaults())
	for _, c := range []struct {
		at   time.Duration
		want string
	}{
		{0, ""},
		{10 * time.Second, "1/pcie/1"},
		{30 * time.Second, "1/pcie/1 1/memory/2 0/thermal/2"},
		{45 * time.Second, "1/pcie/1 1/memory/2"}, // GPU 0 is lost: no incident
		{70 * time.Second, "1/memory/2 0/thermal/2"},
	} {
		s.now = s.start.Add(c.at)
		inc, err := s.src.HealthIncidents(context.Background())
		if err != nil {
			t.Fatalf("at %s: %v", c.at, err)
		}
		if inc == nil {
			// nil is "no answer" to the naming, which leaves the health
			// families out; a healthy node answers with an empty list.
			t.Fatalf("at %s: nil incidents, want an empty list when every check passes", c.at)
		}
		var got []string
		for _, in := range inc {
			if in.UUID != scn.entities[in.GPU].UUID {
				t.Errorf("at %s: GPU %d has UUID %s", c.at, in.GPU, in.UUID)
			}
			got = append(got, fmt.Sprintf("%d/%s/%d", in.GPU, in.Subsystem, in.Status))
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("incidents at %s: %q, want %q", c.at, g, c.want)
		}
	}
	s.now = s.start.Add(2 * time.Minute)
	if _, err := s.src.HealthIncidents(context.Background()); !errors.Is(err, source.ErrUnavailable) {
		t.Errorf("during an outage: %v, want source.ErrUnavailable", err)
	}
}

// TestCloseDuringHealthCheck: the exporter may close the source while a
// health check or read it gave up on still runs; under -race this used to
// report a data race on the closed flag.
func TestCloseDuringHealthCheck(t *testing.T) {
	t.Parallel()
	src := New(builtin(t, "faults"))
	ctx := context.Background()
	if err := src.Watch(ctx, fields.MustNew().Defaults()); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			_, _ = src.HealthIncidents(ctx)
			_, _ = src.Read(ctx)
		}
	}()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	if _, err := src.Read(ctx); err == nil {
		t.Error("read after close succeeded")
	}
}
