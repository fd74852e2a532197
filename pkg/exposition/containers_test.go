package exposition

import (
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// A time-sliced GPU with a busy pod, an idle pod and a host process: one
// series per container with its own share, and per-process series only
// when handed over.
func TestRenderContainers(t *testing.T) {
	t.Parallel()
	in := familiesInput(t, []fields.Field{fields.MustNew().All()[0]})
	in.Containers = []ContainerUsage{
		{Entity: 0, Processes: 1, Utilization: 0.02, UtilizationKnown: true, MemoryBytes: 100, MemoryKnown: true},
		{Entity: 0, Namespace: "ml", Pod: "busy", Container: "train", Processes: 2, Utilization: 0.85, UtilizationKnown: true, MemoryBytes: 6 << 30, MemoryKnown: true},
		{Entity: 0, Namespace: "ml", Pod: "idle", Container: "notebook", Processes: 1, UtilizationKnown: true, MemoryBytes: 1 << 30, MemoryKnown: true},
		{Entity: 2, PodUID: "uid-x", ContainerID: "abc", Processes: 1}, // MIG: no utilization, memory unknown
	}
	in.Processes = nil
	for _, naming := range []Naming{NamingPrometheus, NamingDCGM} {
		r := NewRenderer(Options{Naming: naming})
		page := r.Render(in)
		fams := parseText(t, page.Text)
		if naming == NamingDCGM {
			for name := range fams {
				if strings.Contains(name, "container") || strings.Contains(name, "process") {
					t.Errorf("dcgm naming renders %s; dcgm-exporter has no such family", name)
				}
			}
			continue
		}
		util := fams["gpu_container_utilization_ratio"]
		if util == nil || len(util.Metric) != 3 {
			t.Fatalf("gpu_container_utilization_ratio = %v", util)
		}
		got := map[string]float64{}
		for _, m := range util.Metric {
			l := labelMap(m)
			if l["uuid"] != "GPU-a" || l["gpu"] != "0" {
				t.Errorf("series without the GPU's labels: %v", l)
			}
			got[l["namespace"]+"/"+l["pod"]+"/"+l["container"]] = m.GetGauge().GetValue()
		}
		want := map[string]float64{"//": 0.02, "ml/busy/train": 0.85, "ml/idle/notebook": 0}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("utilization of %q = %v, want %v", k, got[k], v)
			}
		}
		mig := fams["gpu_container_processes"].Metric[3]
		if l := labelMap(mig); l["pod_uid"] != "uid-x" || l["container_id"] != "abc" || l["gpu_instance"] != "1" || l["pod"] != "" {
			t.Errorf("MIG row without API names = %v", l)
		}
		if len(fams["gpu_container_memory_used_bytes"].Metric) != 3 {
			t.Error("a row with unknown memory has a memory series")
		}
		if _, ok := fams["gpu_process_utilization_ratio"]; ok {
			t.Error("per-process series without per-process rows")
		}
	}
}

// Energy and orphans: counters per container and idle per GPU, orphan
// counts per reason (zeros included, so that alerts see the family), and
// nothing for a device whose accounting cannot tell.
func TestRenderAccounting(t *testing.T) {
	t.Parallel()
	in := familiesInput(t, []fields.Field{fields.MustNew().All()[0]})
	in.Containers = []ContainerUsage{
		{Entity: 0, Namespace: "ml", Pod: "busy", Container: "train", Processes: 1, EnergyJoules: 300, EnergyKnown: true},
		{Entity: 0, PodUID: "uid-gone", ContainerID: "abc", Processes: 1, EnergyJoules: 0, EnergyKnown: true},
		{Entity: 2, Namespace: "ml", Pod: "mig", Container: "main", Processes: 1},
	}
	in.Processes = nil
	in.Accounting = []DeviceAccounting{
		{Entity: 0, Orphans: [NumOrphanReasons]float64{1, 0}, OrphanMemoryBytes: [NumOrphanReasons]float64{3 << 30, 0}, OrphansKnown: true, IdleEnergyJoules: 100, EnergyKnown: true},
		{Entity: 2},
	}
	fams := parseText(t, NewRenderer(Options{Naming: NamingPrometheus}).Render(in).Text)
	energy := fams["gpu_container_energy_joules_total"]
	if energy == nil || len(energy.Metric) != 2 || energy.Metric[0].GetCounter().GetValue() != 300 {
		t.Fatalf("gpu_container_energy_joules_total = %v", energy)
	}
	idle := fams["gpu_idle_energy_joules_total"]
	if idle == nil || len(idle.Metric) != 1 || idle.Metric[0].GetCounter().GetValue() != 100 || labelMap(idle.Metric[0])["uuid"] != "GPU-a" {
		t.Fatalf("gpu_idle_energy_joules_total = %v", idle)
	}
	orphans := fams["gpu_orphan_processes"]
	if orphans == nil || len(orphans.Metric) != 2 {
		t.Fatalf("gpu_orphan_processes = %v", orphans)
	}
	got := map[string]float64{}
	for _, m := range fams["gpu_orphan_memory_used_bytes"].Metric {
		got[labelMap(m)["reason"]] = m.GetGauge().GetValue()
	}
	if got["pod_gone"] != 3<<30 || got["host"] != 0 || len(got) != 2 {
		t.Errorf("gpu_orphan_memory_used_bytes by reason = %v", got)
	}
	for _, m := range orphans.Metric {
		if l := labelMap(m); l["pod"] != "" || l["gpu"] != "0" {
			t.Errorf("orphan series with holder labels or on the wrong GPU: %v", l)
		}
	}
	dcgm := parseText(t, NewRenderer(Options{Naming: NamingDCGM}).Render(in).Text)
	for name := range dcgm {
		if strings.Contains(name, "energy_joules_total") && name != "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" || strings.Contains(name, "orphan") {
			t.Errorf("dcgm naming renders %s", name)
		}
	}
}

// A container with a HAMi limit, one with MPS's thread share only, one
// with no mechanism: the limit families carry the mechanism label and
// only the limits that are set.
func TestRenderContainerLimits(t *testing.T) {
	t.Parallel()
	in := familiesInput(t, []fields.Field{fields.MustNew().All()[0]})
	in.Containers = []ContainerUsage{
		{Entity: 0, Namespace: "ml", Pod: "a", Container: "c", Processes: 1, Mechanism: "hami", MemoryLimitBytes: 3000 << 20, SMLimit: 0.5},
		{Entity: 0, Namespace: "ml", Pod: "b", Container: "c", Processes: 1, Mechanism: "mps", SMLimit: 0.25},
		{Entity: 0, Namespace: "ml", Pod: "c", Container: "c", Processes: 1},
	}
	in.Processes = nil
	fams := parseText(t, NewRenderer(Options{Naming: NamingPrometheus}).Render(in).Text)
	got := map[string]float64{}
	for _, name := range []string{"gpu_container_memory_limit_bytes", "gpu_container_sm_limit_ratio"} {
		for _, m := range fams[name].GetMetric() {
			l := labelMap(m)
			got[name+" "+l["pod"]+" "+l["mechanism"]] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		"gpu_container_memory_limit_bytes a hami": 3000 << 20,
		"gpu_container_sm_limit_ratio a hami":     0.5,
		"gpu_container_sm_limit_ratio b mps":      0.25,
	}
	if len(got) != len(want) {
		t.Errorf("limit series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
