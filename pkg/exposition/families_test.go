package exposition

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// familiesInput is a node that makes every family appear: two GPUs, a MIG
// instance, a held GPU, XID events, a lost GPU and a failing health watch.
func familiesInput(t *testing.T, set []fields.Field) Input {
	t.Helper()
	inv := &source.Inventory{DriverVersion: "550.54.15"}
	for i := range 2 {
		inv.Entities = append(inv.Entities, source.Entity{
			Kind: source.GPU, GPU: i, UUID: "GPU-" + string(rune('a'+i)), Device: "nvidia" + string(rune('0'+i)),
			Model: "NVIDIA A100", PCIBusID: "00000000:3B:00.0", GPUInstance: -1, ComputeInstance: -1,
		})
	}
	inv.Entities = append(inv.Entities, source.Entity{Kind: source.GPUInstance, GPU: 0, UUID: "GPU-a", Device: "nvidia0",
		Model: "NVIDIA A100", GPUInstance: 1, ComputeInstance: -1, MIGProfile: "3g.40gb", MIGUUID: "MIG-x"})
	inv.MIGDevices = []source.MIGDevice{{GPU: 0, GPUInstance: 1, ComputeInstance: 0, Profile: "3g.40gb", UUID: "MIG-x"}}
	inv.Entities = append(inv.Entities,
		source.Entity{Kind: source.NVLink, GPU: 1, UUID: "GPU-b", Device: "nvidia1", Model: "NVIDIA A100", Link: 3, PeerType: source.PeerNVSwitch, Peer: "0"},
		source.Entity{Kind: source.NVSwitch, GPU: -1, ID: 0, UUID: "SWX-0", PCIBusID: "00000000:05:00.0"},
		source.Entity{Kind: source.NVLink, Parent: source.NVSwitch, GPU: -1, ID: 0, Link: 9, PeerType: source.PeerGPU, Peer: "1"})
	s := source.NewSample(testTime, inv, set)
	s.LinkStates = make([]source.LinkState, len(inv.Entities))
	s.LinkStates[3] = source.LinkUp
	for e := range inv.Entities {
		for c := range set {
			s.Set(e, c, source.IntValue(int64(0x44+c)))
		}
	}
	s.XIDs = []source.XIDEvent{{Entity: 1, XID: 79}}
	holder := &Holder{Namespace: "ml", Pod: "train", Container: "main", PodUID: "uid-1", Labels: []Label{{Name: "label_team", Value: "a"}},
		Workload: Workload{Kind: "Job", Name: "train", Queue: "team-a", ClusterQueue: "gpu-pool"}}
	return Input{
		Sample: s,
		Holdings: []Holding{{Entity: 0}, {Entity: 1, Holder: holder, Shared: true, Replicas: 2, DeviceReplicas: 4}, {Entity: 2, Holder: &Holder{HPCJob: "4242", HPCUser: "alice", HPCPartition: "gpu"}},
			{Entity: 2, Holder: &Holder{Namespace: "ml", Pod: "infer", Container: "main", DRA: DRAClaim{Namespace: "ml", Name: "mig",
				Driver: "gpu.nvidia.com", Pool: "node-a", Device: "gpu-0-mig-3g40gb-9-4", ShareID: "s1", MIGProfile: "3g.40gb", MIGUUID: "MIG-x"}}},
			{Entity: 3, Holder: holder}, {Entity: 4}, {Entity: 5}},
		Lost:   []source.LostGPU{{GPU: 2, UUID: "GPU-c", Since: testTime.Add(-time.Minute)}},
		Health: []source.HealthIncident{{GPU: 1, UUID: "GPU-b", Subsystem: "pcie", Status: source.HealthWarn}},
		P2P:    []source.P2PLink{{GPU: 0, Peer: 1, Status: 0}, {GPU: 1, Peer: 0, Status: 0}},
		Containers: []ContainerUsage{
			{Entity: 0, Namespace: "ml", Pod: "train", Container: "main", Processes: 2, Utilization: 0.5, UtilizationKnown: true, MemoryBytes: 1 << 30, MemoryKnown: true, EnergyJoules: 12.5, EnergyKnown: true,
				Mechanism: "hami", MemoryLimitBytes: 2 << 30, SMLimit: 0.5},
			{Entity: 2, PodUID: "uid-2", ContainerID: "c0ffee", Processes: 1, MemoryBytes: 1 << 20, MemoryKnown: true},
		},
		Accounting: []DeviceAccounting{{Entity: 0, Orphans: [NumOrphanReasons]float64{1, 0}, OrphanMemoryBytes: [NumOrphanReasons]float64{1 << 30, 0},
			OrphansKnown: true, IdleEnergyJoules: 40, EnergyKnown: true}},
		Processes: []ContainerUsage{
			{Entity: 0, Namespace: "ml", Pod: "train", Container: "main", PID: 42, Processes: 1, Utilization: 0.5, UtilizationKnown: true, MemoryBytes: 1 << 30, MemoryKnown: true},
		},
	}
}

// Every family a page holds is either a catalog field or declared in
// Families, with the declared type and labels, and every declared family
// of the naming shows up on a page that has all kinds of events.
func TestRenderedFamiliesAreDeclared(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	window := func(name string) *WindowCounter {
		return &WindowCounter{Name: name, Help: "h", Type: fields.Gauge, Window: time.Minute}
	}
	k := Counters{XIDErrorsCount: window(fields.XIDErrorsCountName), ClockEventsCount: window(fields.ClockEventsCountName),
		GPUHealthStatus: &ExporterFamily{Name: fields.GPUHealthStatusName, Help: "h", Type: fields.Gauge},
		P2PStatus:       &ExporterFamily{Name: fields.P2PStatusName, Help: "p", Type: fields.Gauge}}
	for _, naming := range []Naming{NamingPrometheus, NamingDCGM} {
		t.Run(naming.String(), func(t *testing.T) {
			t.Parallel()
			r := NewRenderer(Options{Naming: naming, DCGM: DCGMOptions{Hostname: "node-1"}})
			k := k
			k.Fields = cat.All()
			set, extra := r.WatchSet(k)
			in := familiesInput(t, set)
			in.Extra = extra
			r.Derive(&in, k)
			page := r.Render(in)
			catalog := map[string]bool{}
			for _, f := range set {
				catalog[f.Name], catalog[f.DCGMName] = true, true
			}
			declared := map[string]Family{}
			for _, f := range Families() {
				if f.Naming == naming {
					declared[f.Name] = f
				}
			}
			fams := parseText(t, page.Text)
			for name, mf := range fams {
				d, ok := declared[name]
				if !ok {
					if !catalog[name] {
						t.Errorf("family %s is rendered but neither declared nor a catalog field", name)
					}
					continue
				}
				if !d.FromCounters && !strings.EqualFold(mf.GetType().String(), d.Type.String()) {
					t.Errorf("%s rendered as %s, declared %s", name, mf.GetType(), d.Type)
				}
				for _, m := range mf.Metric {
					checkDeclaredLabels(t, d, naming, labelMap(m))
				}
			}
			for name := range declared {
				if _, ok := fams[name]; !ok {
					t.Errorf("declared family %s is not rendered", name)
				}
			}
		})
	}
	var doc bytes.Buffer
	if err := WriteMetricsDoc(&doc, cat); err != nil {
		t.Fatal(err)
	}
	for _, f := range Families() {
		if !strings.Contains(doc.String(), "`"+f.Name+"`") {
			t.Errorf("metrics doc lacks %s", f.Name)
		}
	}
}

// checkDeclaredLabels checks one series' labels against its declaration:
// every named label is there (unless optional); without groups, nothing else; with groups,
// in Prometheus naming, only entity and holder labels besides.
func checkDeclaredLabels(t *testing.T, d Family, naming Naming, got map[string]string) {
	t.Helper()
	groups := false
	for _, l := range d.Labels {
		switch l {
		case EntityLabels, HolderLabels:
			groups = true
			continue
		}
		if _, ok := got[l]; !ok && !slices.Contains(d.Optional, l) {
			t.Errorf("%s%v lacks declared label %s", d.Name, got, l)
		}
	}
	entity := EntityLabelNames()
	holder := HolderLabelNames()
	for l := range got {
		if slices.Contains(d.Labels, l) {
			continue
		}
		switch {
		case !groups:
			t.Errorf("%s carries undeclared label %s", d.Name, l)
		case naming != NamingPrometheus:
		case slices.Contains(d.Labels, EntityLabels) && slices.Contains(entity, l):
		case slices.Contains(d.Labels, HolderLabels) && (slices.Contains(holder, l) || strings.HasPrefix(l, HolderLabelPrefix)):
		default:
			t.Errorf("%s carries undeclared label %s", d.Name, l)
		}
	}
}
