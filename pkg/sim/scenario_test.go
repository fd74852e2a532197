package sim

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// oneGPU is a valid prefix that error cases extend (lines 1-4).
const oneGPU = `name: t
gpus:
  - model: "NVIDIA H100 80GB HBM3"
    memory_mib: 81559
`

func TestParseErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   string
		want string // a prefix of the error after "scenario bad.yaml:"
	}{
		{"empty", ``, `1: empty scenario`},
		{"comment only", "# nothing\n", `1: empty scenario`},
		{"not a mapping", `[1, 2]`, `1: want a mapping, got a list`},
		{"yaml syntax", "gpus: []\nname: @\n", `2: found character that cannot start any token`},
		{"two documents", oneGPU + "---\nname: u\n", `5: more than one YAML document`},
		{"unknown top key", "gpu: []\n", `1: unknown key "gpu" (want one of name, driver_version, defaults, gpus, fabric, pods, jobs, faults, host_processes, objects)`},
		{"missing gpus", "name: x\n", `1: missing key "gpus"`},
		{"duplicate key", "gpus: []\ngpus: []\n", `2: duplicate key "gpus"`},
		{"gpus not a list", "gpus: {}\n", `1: gpus: want a list, got a mapping`},
		{"missing model", "gpus:\n  - memory_mib: 1\n", `2: gpus[0]: missing key "model"`},
		{"unknown gpu key", oneGPU + "    modle: x\n", `5: gpus[0]: unknown key "modle"`}, //nolint:misspell // the misspelt key is the input under test
		{"memory not a number", oneGPU[:len(oneGPU)-6] + "lots\n", `4: gpus[0].memory_mib: want an integer, got "lots"`},
		{"negative count", oneGPU + "    count: -1\n", `5: gpus[0].count: -1 is out of range [1, 1024]`},
		{"zero count", oneGPU + "    count: 0\n", `5: gpus[0].count: 0 is out of range`},
		{"too many GPUs", oneGPU + "    count: 1000\n  - {model: x, memory_mib: 1, count: 30}\n", `6: gpus[1]: more than 1024 GPUs`},
		{"uuid with count", oneGPU + "    count: 2\n    uuid: GPU-1\n", `6: gpus[0].uuid: cannot be combined with count 2`},
		{"sharing without replicas", oneGPU + "    sharing: {resource: nvidia.com/gpu}\n", `5: gpus[0].sharing: missing key "replicas"`},
		{"zero replicas", oneGPU + "    sharing: {replicas: 0}\n", `5: gpus[0].sharing.replicas: 0 is out of range [1, 1024]`},
		{"unknown sharing key", oneGPU + "    sharing: {replicas: 2, mode: mps}\n", `5: gpus[0].sharing: unknown key "mode"`},
		{"sharing a MIG GPU", oneGPU + "    sharing: {replicas: 2}\n    mig: [{profile: 7g.80gb, gpu_instance: 0, memory_mib: 1}]\n", `5: gpus[0].sharing: sharing of a GPU in MIG mode is not simulated`},
		{"bad uuid", oneGPU + "    uuid: 1234\n", `5: gpus[0].uuid: GPU UUID "1234" does not start with GPU-`},
		{"duplicate uuid", oneGPU + "    uuid: GPU-1\n  - {model: x, memory_mib: 1, uuid: GPU-1}\n", `6: gpus[1]: UUID GPU-1 is also used by gpus[0]`},
		{"unknown field", oneGPU + "    fields:\n      DCGM_FI_FOO: 1\n", `6: gpus[0].fields: unknown field "DCGM_FI_FOO"`},
		{"field twice by alias", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: 1\n      gpu_utilization_ratio: 2\n", `7: gpus[0].fields: field DCGM_FI_DEV_GPU_UTIL given twice (also at line 6)`},
		{"spec not a number", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: high\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL: want a number or a mapping`},
		{"no generator", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {min: 0}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL: missing a generator`},
		{"two generators", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {constant: 1, counter: {rate: 1}}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL: choose one generator, got constant and counter`},
		{"unknown generator key", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {sine: {mean: 1, amplitude: 1, period: 1m, freq: 2}}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL.sine: unknown key "freq"`},
		{"bare number duration", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {sine: {mean: 1, amplitude: 1, period: 5}}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL.sine.period: invalid duration "5"`},
		{"zero period", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL:\n        sine: {mean: 1, amplitude: 1, period: 0s}\n", `7: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL.sine.period: must be positive`},
		{"negative period", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {sine: {mean: 1, amplitude: 1, period: -1m}}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL.sine.period: duration -1m is negative`},
		{"sine needs mean", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {sine: {amplitude: 1, period: 1m}}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL.sine: missing key "mean"`},
		{"zero ramp", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {ramp: {from: 1, to: 2, over: 0s}}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL.ramp.over: must be positive`},
		{"zero bucket", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {noise: {stddev: 1, bucket: 0s}}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL.noise.bucket: must be positive`},
		{"negative stddev", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {noise: {stddev: -1}}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL.noise.stddev: must not be negative`},
		{"steps out of order", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL:\n        step:\n          - {at: 1m, value: 1}\n          - {at: 30s, value: 2}\n", `9: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL.step[1]: step at 30s is not after the previous one (1m0s)`},
		{"empty steps", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {step: []}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL.step: needs at least one step`},
		{"step beyond repeat", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {step: {repeat: 1m, steps: [{at: 1m, value: 1}]}}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL.step.steps[0]: step at 1m0s is not within repeat 1m0s`},
		{"min above max", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {constant: 1, min: 5, max: 1}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL: min 5 is above max 1`},
		{"infinite number", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {constant: .inf}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL.constant: want a finite number`},
		{"blank with more", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {blank: true, min: 1}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL: blank: true cannot be combined`},
		{"falling counter", oneGPU + "    fields:\n      DCGM_FI_DEV_ECC_SBE_VOL_TOTAL: {sine: {mean: 5, amplitude: 1, period: 1m}}\n", `6: gpus[0].fields.DCGM_FI_DEV_ECC_SBE_VOL_TOTAL: DCGM_FI_DEV_ECC_SBE_VOL_TOTAL is a counter`},
		{"negative rate", oneGPU + "    fields:\n      DCGM_FI_DEV_ECC_SBE_VOL_TOTAL: {counter: {rate: -1}}\n", `6: gpus[0].fields.DCGM_FI_DEV_ECC_SBE_VOL_TOTAL.counter.rate: a counter's rate must not be negative`},
		{"integer not bool", oneGPU + "    fields:\n      DCGM_FI_DEV_GPU_UTIL: {constant: 1, integer: yes please}\n", `6: gpus[0].fields.DCGM_FI_DEV_GPU_UTIL.integer: want true or false`},
		{"GPU field on MIG instance", oneGPU + "    mig:\n      - {profile: 1g.10gb, gpu_instance: 7, memory_mib: 9856, fields: {DCGM_FI_DEV_SM_CLOCK: 1}}\n", `6: gpus[0].mig[0].fields: field DCGM_FI_DEV_SM_CLOCK is not reported per MIG instance`},
		{"GPU field in mig defaults", "defaults:\n  mig_fields:\n    DCGM_FI_DEV_POWER_USAGE: 1\ngpus: []\n", `3: defaults.mig_fields: field DCGM_FI_DEV_POWER_USAGE is not reported per MIG instance`},
		{"duplicate MIG instance", oneGPU + "    mig:\n      - {profile: 1g.10gb, gpu_instance: 7, memory_mib: 9856}\n      - {profile: 1g.10gb, gpu_instance: 7, memory_mib: 9856}\n", `7: gpus[0].mig[1].gpu_instance: GPU instance 7 is also gpus[0].mig[0]`},
		{"MIG over memory", oneGPU + "    mig:\n      - {profile: 7g.80gb, gpu_instance: 0, memory_mib: 80000}\n      - {profile: 1g.10gb, gpu_instance: 7, memory_mib: 9856}\n", `6: gpus[0].mig: instances hold 89856 MiB, more than the GPU's 81559 MiB`},
		{"empty MIG", oneGPU + "    mig: []\n", `5: gpus[0].mig: a GPU in MIG mode needs at least one instance`},
		{"GPU util under MIG", oneGPU + "    fields: {DCGM_FI_DEV_GPU_UTIL: 50}\n    mig: [{profile: 1g.10gb, gpu_instance: 7, memory_mib: 9856}]\n", `5: gpus[0].fields: DCGM_FI_DEV_GPU_UTIL is blank for a GPU in MIG mode`},
		{"pod on missing GPU", oneGPU + "pods:\n  - namespace: a\n    name: b\n    containers:\n      - name: c\n        devices:\n          - {resource: nvidia.com/gpu, gpus: [1]}\n", `11: pods[0].containers[0].devices[0].gpus[0]: GPU 1 does not exist (the scenario has 1)`},
		{"pod on missing instance", oneGPU + "    mig: [{profile: 1g.10gb, gpu_instance: 7, memory_mib: 9856}]\npods:\n  - namespace: a\n    name: b\n    containers:\n      - name: c\n        devices: [{resource: r, mig: [{gpu: 0, gpu_instance: 8}]}]\n", `11: pods[0].containers[0].devices[0].mig[0].gpu_instance: GPU 0 has no MIG instance 8`},
		{"whole MIG GPU", oneGPU + "    mig: [{profile: 1g.10gb, gpu_instance: 7, memory_mib: 9856}]\npods:\n  - namespace: a\n    name: b\n    containers:\n      - name: c\n        devices: [{resource: r, gpus: [0]}]\n", `11: pods[0].containers[0].devices[0].gpus[0]: GPU 0 is in MIG mode`},
		{"device without ids", oneGPU + "pods:\n  - namespace: a\n    name: b\n    containers:\n      - name: c\n        devices: [{resource: r}]\n", `10: pods[0].containers[0].devices[0]: no device ids`},
		{"negative replica", oneGPU + "pods:\n  - namespace: a\n    name: b\n    containers:\n      - name: c\n        devices: [{resource: r, replicas: [{gpu: 0, replica: -1}]}]\n", `10: pods[0].containers[0].devices[0].replicas[0].replica: -1 is out of range`},
		{"pod without name", oneGPU + "pods:\n  - namespace: a\n    containers: []\n", `6: pods[0]: missing key "name"`},
		{"pod without containers", oneGPU + "pods:\n  - {namespace: a, name: b, containers: []}\n", `6: pods[0].containers: a pod needs at least one container`},
		{"until before from", oneGPU + "pods:\n  - {namespace: a, name: b, from: 1m, until: 30s, containers: [{name: c}]}\n", `6: pods[0].until: until 30s is not after from 1m0s`},
		{"repeat without until", oneGPU + "pods:\n  - {namespace: a, name: b, repeat: 1m, containers: [{name: c}]}\n", `6: pods[0].repeat: repeat needs an until`},
		{"duplicate container", oneGPU + "pods:\n  - namespace: a\n    name: b\n    containers:\n      - name: c\n      - name: c\n", `10: pods[0].containers[1]: container "c" is listed twice`},
		{"same pod twice", oneGPU + "pods:\n  - {namespace: a, name: b, until: 1m, containers: [{name: c}]}\n  - {namespace: a, name: b, from: 30s, containers: [{name: c}]}\n", `7: pods[1]: pod a/b is also pods[0] at the same time`},
		{"fault without kind", oneGPU + "faults:\n  - {at: 1m, gpu: 0}\n", `6: faults[0]: a fault is exactly one of`},
		{"fault of two kinds", oneGPU + "faults:\n  - {at: 1m, gpu: 0, xid: 79, lost: true}\n", `6: faults[0]: a fault is exactly one of`},
		{"xid on missing GPU", oneGPU + "faults:\n  - {at: 1m, gpu: 3, xid: 79}\n", `6: faults[0].gpu: GPU 3 does not exist (the scenario has 1)`},
		{"xid zero", oneGPU + "faults:\n  - {at: 1m, gpu: 0, xid: 0}\n", `6: faults[0].xid: 0 is out of range`},
		{"xid with duration", oneGPU + "faults:\n  - {at: 1m, gpu: 0, xid: 79, duration: 1s}\n", `6: faults[0].duration: an XID has no duration`},
		{"outage without duration", oneGPU + "faults:\n  - {at: 1m, outage: true}\n", `6: faults[0]: an outage needs a duration`},
		{"outage of a GPU", oneGPU + "faults:\n  - {at: 1m, outage: true, duration: 1s, gpu: 0}\n", `6: faults[0].gpu: an outage is of the whole source`},
		{"outage false", oneGPU + "faults:\n  - {at: 1m, outage: false}\n", `6: faults[0].outage: may only be true`},
		{"fault without at", oneGPU + "faults:\n  - {gpu: 0, lost: true}\n", `6: faults[0]: missing key "at"`},
		{"health without status", oneGPU + "faults:\n  - {at: 1m, gpu: 0, health: pcie}\n", `6: faults[0]: missing key "status"`},
		{"health status unknown", oneGPU + "faults:\n  - {at: 1m, gpu: 0, health: pcie, status: bad}\n", `6: faults[0].status: status "bad" is neither warn nor fail`},
		{"health subsystem not a name", oneGPU + "faults:\n  - {at: 1m, gpu: 0, health: PCIe Bus, status: warn}\n", `6: faults[0].health: subsystem "PCIe Bus" is not a lower-case name`},
		{"health and lost", oneGPU + "faults:\n  - {at: 1m, gpu: 0, health: pcie, status: warn, lost: true}\n", `6: faults[0]: a fault is exactly one of`},
		{"status without health", oneGPU + "faults:\n  - {at: 1m, gpu: 0, lost: true, status: warn}\n", `6: faults[0].status: status belongs to a health fault`},
		{"health without gpu", oneGPU + "faults:\n  - {at: 1m, health: pcie, status: warn}\n", `6: faults[0]: missing key "gpu"`},
		{"fabric without links per GPU", oneGPU + "fabric: {nvswitches: 4}\n", `5: fabric: missing key "links_per_gpu"`},
		{"too many links", oneGPU + "fabric: {nvswitches: 4, links_per_gpu: 37}\n", `5: fabric.links_per_gpu: 37 is out of range`},
		{"too many switches", oneGPU + "fabric: {nvswitches: 13, links_per_gpu: 18}\n", `5: fabric.nvswitches: 13 is out of range`},
		{"GPU field on a link", oneGPU + "fabric:\n  nvswitches: 4\n  links_per_gpu: 18\n  link_fields: {DCGM_FI_DEV_GPU_TEMP: 1}\n", `8: fabric.link_fields: field DCGM_FI_DEV_GPU_TEMP is not reported per NVLink`},
		{"link field on a switch", oneGPU + "fabric:\n  nvswitches: 4\n  links_per_gpu: 18\n  switch_fields: {DCGM_FI_DEV_NVSWITCH_LINK_STATUS: 2}\n", `8: fabric.switch_fields: field DCGM_FI_DEV_NVSWITCH_LINK_STATUS is not reported per NVSwitch`},
		{"link beyond links per GPU", oneGPU + "fabric:\n  nvswitches: 4\n  links_per_gpu: 18\n  links: [{gpu: 0, link: 18}]\n", `8: fabric.links[0].link: 18 is out of range`},
		{"link of a missing GPU", oneGPU + "fabric:\n  nvswitches: 4\n  links_per_gpu: 18\n  links: [{gpu: 1, link: 0}]\n", `8: fabric.links[0].gpu: GPU 1 does not exist (the scenario has 1)`},
		{"link twice", oneGPU + "fabric:\n  nvswitches: 4\n  links_per_gpu: 18\n  links: [{gpu: 0, link: 2}, {gpu: 0, link: 2}]\n", `8: fabric.links[1]: GPU 0 link 2 is also fabric.links[0]`},
		{"merge of a scalar", "gpus:\n  - <<: 5\n", `2: gpus[0]: merge key << needs a mapping`},
		{"alias bomb", "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ngpus: []\n", `1: scenario too large`},
		{"self-referencing anchor", "gpus: &g [*g]\n", `1: scenario too large or too deeply nested`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("bad.yaml", []byte(tc.in))
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			if want := "scenario bad.yaml:" + tc.want; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error\n  %s\nwant prefix\n  %s", err, want)
			}
		})
	}
}

func TestParseMergeKeysAndAliases(t *testing.T) {
	t.Parallel()
	scn, err := Parse("merge.yaml", []byte(`
gpus:
  - model: a
    memory_mib: 100
    fields: &base
      DCGM_FI_DEV_GPU_UTIL: 10
      DCGM_FI_DEV_SM_CLOCK: 1000
  - model: b
    memory_mib: 100
    fields:
      <<: *base
      DCGM_FI_DEV_GPU_UTIL: 20
  - model: c
    memory_mib: 100
    fields: *base
`))
	if err != nil {
		t.Fatal(err)
	}
	for gpu, want := range []float64{10, 20, 10} {
		got, _ := scn.specs[gpu][fieldGPUUtil].value(0).Number()
		if got != want {
			t.Errorf("GPU %d utilization %g, want %g", gpu, got, want)
		}
		if clk, _ := scn.specs[gpu][100].value(0).Number(); clk != 1000 {
			t.Errorf("GPU %d SM clock %g, want 1000", gpu, clk)
		}
	}
}

func TestSpecialFieldIDsMatchCatalog(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	for name, id := range map[string]uint16{
		"DCGM_FI_DEV_GPU_UTIL":    fieldGPUUtil,
		"DCGM_FI_DEV_XID_ERRORS":  fieldXID,
		"DCGM_FI_DEV_FB_TOTAL":    fieldFBTotal,
		"DCGM_FI_DEV_FB_FREE":     fieldFBFree,
		"DCGM_FI_DEV_FB_USED":     fieldFBUsed,
		"DCGM_FI_DEV_FB_RESERVED": fieldFBReserved,
	} {
		if f, ok := cat.Lookup(name); !ok || f.ID != id {
			t.Errorf("%s: catalog id %d, simulator uses %d", name, f.ID, id)
		}
	}
}

func TestBuiltinScenariosLoad(t *testing.T) {
	t.Parallel()
	names := Builtins()
	for _, want := range []string{"churn", "demo", "faults", "mig", "scale-64", "timeslicing"} {
		if !slices.Contains(names, want) {
			t.Errorf("built-in scenario %q missing (have %v)", want, names)
		}
	}
	// Every file on disk is embedded and loads from either place.
	files, err := filepath.Glob("../../etc/sim/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario files found: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if !slices.Contains(names, name) {
				t.Errorf("%s is not embedded", file)
			}
			disk, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			emb, err := LoadBuiltin(name)
			if err != nil {
				t.Fatal(err)
			}
			if disk.Name() != name || emb.Name() != name {
				t.Errorf("names %q and %q, want %q (the file name)", disk.Name(), emb.Name(), name)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	if _, err := LoadBuiltin("nope"); err == nil || !strings.Contains(err.Error(), "demo") {
		t.Errorf("unknown built-in: %v; want an error listing the built-ins", err)
	}
	if _, err := LoadBuiltin("../etc"); err == nil {
		t.Error("path outside etc/sim loaded")
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("gpus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), bad+":1: gpus: want a list") {
		t.Errorf("bad file: %v", err)
	}
}

func TestDerivedIDs(t *testing.T) {
	t.Parallel()
	in := []byte(`
name: ids
gpus:
  - {model: a, memory_mib: 100, count: 2, mig: [{profile: 1g.1gb, gpu_instance: 1, memory_mib: 10}]}
  - {model: a, memory_mib: 100, uuid: GPU-explicit, pci_bus_id: "00000000:C1:00.0", mig: [{profile: 1g.1gb, gpu_instance: 1, memory_mib: 10, uuid: MIG-explicit}]}
`)
	a, err := Parse("a.yaml", in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse("b.yaml", in)
	if err != nil {
		t.Fatal(err)
	}
	uuid := regexp.MustCompile(`^(GPU|MIG)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	for i, e := range a.entities {
		if e != b.entities[i] {
			t.Errorf("entity %d differs between loads: %+v vs %+v", i, e, b.entities[i])
		}
	}
	g0, g1, g2 := a.entities[0], a.entities[1], a.entities[2]
	if !uuid.MatchString(g0.UUID) || !uuid.MatchString(g1.UUID) || g0.UUID == g1.UUID {
		t.Errorf("derived GPU UUIDs %q, %q", g0.UUID, g1.UUID)
	}
	if g0.PCIBusID != "00000000:18:00.0" || g1.PCIBusID != "00000000:2A:00.0" {
		t.Errorf("derived PCI bus ids %q, %q", g0.PCIBusID, g1.PCIBusID)
	}
	if g2.UUID != "GPU-explicit" || g2.PCIBusID != "00000000:C1:00.0" {
		t.Errorf("explicit ids ignored: %+v", g2)
	}
	if m := a.entities[3].MIGUUID; !uuid.MatchString(m) {
		t.Errorf("derived MIG UUID %q", m)
	}
	if m := a.entities[5].MIGUUID; m != "MIG-explicit" {
		t.Errorf("explicit MIG UUID ignored: %q", m)
	}
	if pciBusID(9) != "00000001:2A:00.0" {
		t.Errorf("GPU 9 PCI bus id %q", pciBusID(9))
	}
}
