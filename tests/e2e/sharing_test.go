package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/rules"
)

// TestSharedGPURules is issue 36's acceptance check: on the simulator's
// time-slicing node (GPU 0 time-sliced by three pods, shared-b under
// HAMi-core limits using no SM time; GPU 1 shared by two MPS clients with
// MPS limits; GPU 3 keeping an orphan process of a deleted pod and two
// replicas held by one container; each shared GPU advertised as 4
// replicas), with
// process accounting on (the default, --collect.processes=container) and
// the shipped recording rules in a real Prometheus, the per-workload and
// per-namespace energy rules, the share-given-versus-used rules and the
// orphan series return data with sane values, and energy is conserved:
// over a window the holders' energy plus the idle energy equals the
// increase of each GPU's own energy counter.
func TestSharedGPURules(t *testing.T) {
	recording, err := rules.Raw(rules.RecordingFile)
	if err != nil {
		t.Fatal(err)
	}
	s := startSimPrometheus(t, []simTarget{{scenario: "timeslicing", args: []string{"--collect.processes=container"}}},
		map[string][]byte{rules.RecordingFile: recording})

	zero := func(v float64) bool { return v == 0 }
	watts := wattsUpTo(400) // the scenario's power limit
	checks := map[string]check{
		// Per workload: the MPS clients (Deployment embed) and shared-a
		// (StatefulSet shared) draw power; shared-b (no SM time) none.
		"energy per workload": {`workload:gpu_container_energy_joules:rate5m`, byLabel("workload_name", map[string]func(float64) bool{
			"embed": watts, "shared": watts, "shared-b": zero, "trainer-0": watts,
		})},
		"energy per namespace": {`namespace:gpu_container_energy_joules:rate5m`, byLabel("namespace", map[string]func(float64) bool{
			"ml": watts, "inference": watts, "research": watts,
		})},
		"idle energy per node": {`node:gpu_idle_energy_joules:rate5m`, between(1, 4*400)},
		// Shares given versus used: HAMi's shared-b uses none of its SM
		// share; the MPS clients use some of theirs, at most 1/0.5.
		"SM share used": {`gpu_container:gpu_sm_share_used:ratio`, byLabel("pod", map[string]func(float64) bool{
			"shared-b": zero, "embed-0": func(v float64) bool { return v > 0 && v <= 2 }, "embed-1": func(v float64) bool { return v > 0 && v <= 2 },
		})},
		// 24000 of 40000 MiB for shared-b, 12000 MiB of 16 GiB for the MPS clients.
		"memory share used": {`gpu_container:gpu_memory_share_used:ratio`, byLabel("pod", map[string]func(float64) bool{
			"shared-b": func(v float64) bool { return math.Abs(v-24000.0/40000) < 1e-9 },
			"embed-0":  func(v float64) bool { return math.Abs(v-12000.0/16384) < 1e-9 },
			"embed-1":  func(v float64) bool { return math.Abs(v-12000.0/16384) < 1e-9 },
		})},
		// ml: shared-a's use of its quarter (at most 80 % of the GPU) and
		// shared-b's none of its half; research: shared-c's and double-0's.
		"SM share used per namespace": {`namespace:gpu_sm_share_used:ratio`, byLabel("namespace", map[string]func(float64) bool{
			"ml": func(v float64) bool { return v > 0 && v <= 0.8/0.75 }, "inference": func(v float64) bool { return v > 0 && v <= 2 },
			"research": func(v float64) bool { return v > 0 && v <= (0.19+1)/0.75 },
		})},
		// Shares given by the device plugin's replicas (4 per shared GPU,
		// gpu_shared_replicas from the simulated kubelet's allocatable
		// devices): a quarter for each single replica, half for double-0's
		// two; trainer-0 holds a whole GPU and has none.
		"share given by replicas": {`gpu_container:gpu_share_given:ratio`, exactly("pod", map[string]func(float64) bool{
			"shared-a": equal(0.25), "shared-b": equal(0.25), "shared-c": equal(0.25),
			"embed-0": equal(0.25), "embed-1": equal(0.25), "double-0": equal(0.5),
		})},
		// What they used of it where no MPS or HAMi limit decides: shared-a
		// (up to 80 % of the GPU) and shared-c (up to 19 %) of a quarter,
		// double-0 (its two processes, up to 100 %) of a half.
		"SM share used of replicas": {`gpu_container:gpu_sm_share_used:ratio{mechanism="replicas"}`, exactly("pod", map[string]func(float64) bool{
			"shared-a": func(v float64) bool { return v > 0 && v <= 0.8/0.25 },
			"shared-c": func(v float64) bool { return v > 0 && v <= 0.19/0.25 },
			"double-0": func(v float64) bool { return v > 0 && v <= 1/0.5 },
		})},
		// The orphan on GPU 3 holds 6 GiB; no other GPU has one.
		"orphan processes": {`gpu_orphan_processes > 0`, byLabel("gpu", map[string]func(float64) bool{"3": func(v float64) bool { return v == 1 }})},
		"orphan memory":    {`gpu_orphan_memory_used_bytes > 0`, byLabel("gpu", map[string]func(float64) bool{"3": func(v float64) bool { return v == 6<<30 }})},
	}
	pollChecks(t, s, checks)

	t.Run("energy conservation", func(t *testing.T) { testEnergyConservation(t, s, 4) })
}

// TestMIGEnergyRules is the same check on the simulator's MIG node (GPU 0:
// four busy 1g instances and three free ones; GPU 1: a busy 3g trainer, an
// idle 2g instance held by dev-0, a 1g notebook that steps; GPU 2 whole,
// one trainer): each MIG GPU's energy is split between its instances'
// containers by their graphics-engine activity times their compute slices
// (docs/shared-gpus.md), so the per-workload energy rule returns data for
// the pods on MIG instances, dev-0's idle instance at 0 W, and energy is
// conserved per physical GPU: the containers' energy over all its
// instances plus the GPU's one idle counter equals its counter's increase.
func TestMIGEnergyRules(t *testing.T) {
	recording, err := rules.Raw(rules.RecordingFile)
	if err != nil {
		t.Fatal(err)
	}
	s := startSimPrometheus(t, []simTarget{{scenario: "mig", args: []string{"--collect.processes=container"}}},
		map[string][]byte{rules.RecordingFile: recording})
	watts := wattsUpTo(700) // the scenario's power limit
	zero := func(v float64) bool { return v == 0 }
	pollChecks(t, s, map[string]check{
		"energy per workload": {`workload:gpu_container_energy_joules:rate5m`, byLabel("workload_name", map[string]func(float64) bool{
			"small-model": watts, "trainer-mig": watts, "notebook-1": watts, "dev-0": zero, "trainer-1": watts,
		})},
		"energy per namespace": {`namespace:gpu_container_energy_joules:rate5m`, byLabel("namespace", map[string]func(float64) bool{
			"ml": watts, "inference": watts, "research": watts,
		})},
		// The MIG instances' containers: one series per container and
		// instance, labelled with the instance.
		"energy per instance": {`rate(gpu_container_energy_joules_total{gpu_instance!=""}[5m])`, byLabel("gpu_instance", map[string]func(float64) bool{
			"7": watts, "10": watts, "2": watts, "3": zero, "9": watts,
		})},
		// One idle counter per physical GPU, none per instance.
		"idle energy per GPU": {`count by (uuid) (gpu_idle_energy_joules_total{gpu_instance=""})`, func(r []sample) []string {
			if len(r) != 3 {
				return []string{fmt.Sprintf("%d GPUs with an idle counter, want 3: %v", len(r), r)}
			}
			return nil
		}},
		"no idle energy per instance": {`count(gpu_idle_energy_joules_total{gpu_instance!=""}) or vector(0)`, between(0, 0)},
	})
	t.Run("energy conservation", func(t *testing.T) { testEnergyConservation(t, s, 3) })
}

// check is a query and what its result must be; want nil means "some
// data".
type check struct {
	query string
	want  func([]sample) []string
}

// between checks that every value is within [lo, hi].
func between(lo, hi float64) func([]sample) []string {
	return func(r []sample) []string {
		var bad []string
		for _, x := range r {
			if !(x.value >= lo && x.value <= hi) {
				bad = append(bad, fmt.Sprintf("%v not in [%g, %g]", x, lo, hi))
			}
		}
		return bad
	}
}

// byLabel checks that there is a series for every value of label in want,
// whose value passes want's test.
func byLabel(label string, want map[string]func(float64) bool) func([]sample) []string {
	return func(r []sample) []string {
		seen := map[string]bool{}
		var bad []string
		for _, x := range r {
			v := x.labels[label]
			seen[v] = true
			if ok, known := want[v]; known && !ok(x.value) {
				bad = append(bad, fmt.Sprintf("%s=%s: unexpected value %g", label, v, x.value))
			}
		}
		for v := range want {
			if !seen[v] {
				bad = append(bad, fmt.Sprintf("no series with %s=%s", label, v))
			}
		}
		return bad
	}
}

// exactly is byLabel that also refuses series of other values.
func exactly(label string, want map[string]func(float64) bool) func([]sample) []string {
	return func(r []sample) []string {
		bad := byLabel(label, want)(r)
		for _, x := range r {
			if _, ok := want[x.labels[label]]; !ok {
				bad = append(bad, fmt.Sprintf("unexpected series %v", x))
			}
		}
		return bad
	}
}

// equal is a value within 1e-9 of w.
func equal(w float64) func(float64) bool { return func(v float64) bool { return math.Abs(v-w) < 1e-9 } }

// wattsUpTo is a power between 1 W and limit: a busy holder's share of a
// GPU's draw is well above a watt, and no GPU draws above its limit.
func wattsUpTo(limit float64) func(float64) bool {
	return func(v float64) bool { return v > 1 && v <= limit }
}

// pollChecks polls Prometheus until every check passes: rate(...[5m])
// needs two samples of each counter, a few seconds.
func pollChecks(t *testing.T, s *stack, checks map[string]check) {
	t.Helper()
	names := make([]string, 0, len(checks))
	for name := range checks {
		names = append(names, name)
	}
	sort.Strings(names)
	poll.Problems(t, 60*time.Second, time.Second, func() []string {
		var problems []string
		for _, name := range names {
			c := checks[name]
			r, err := s.query(c.query)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s: %v", name, err))
			case len(r) == 0:
				problems = append(problems, fmt.Sprintf("%s: no data: %s", name, c.query))
			case c.want != nil:
				for _, p := range c.want(r) {
					problems = append(problems, fmt.Sprintf("%s (%s): %s", name, c.query, p))
				}
			}
		}
		return problems
	})
}

// TestKAIShareRules: on the simulator's KAI Scheduler node, the
// fractional pods' processes carry GPU_PORTION (0.5 and 0.25 of GPU 0's
// 81920 MiB), which the exporter exports as
// gpu_container_memory_limit_bytes{mechanism="kai"}, so the shipped
// memory-share rule says what each uses of the share KAI scheduled for it
// (KAI does not enforce it): 36000 of 40960 MiB and 9000 of 20480 MiB.
func TestKAIShareRules(t *testing.T) {
	recording, err := rules.Raw(rules.RecordingFile)
	if err != nil {
		t.Fatal(err)
	}
	s := startSimPrometheus(t, []simTarget{{scenario: "kai", args: []string{"--collect.processes=container"}}},
		map[string][]byte{rules.RecordingFile: recording})
	want := map[string]float64{"frac-train": 36000.0 / 40960, "frac-notebook": 9000.0 / 20480}
	const query = `gpu_container:gpu_memory_share_used:ratio`
	poll.Problems(t, 60*time.Second, time.Second, func() []string {
		r, err := s.query(query)
		if err != nil {
			return []string{err.Error()}
		}
		got := map[string]float64{}
		for _, x := range r {
			got[x.labels["pod"]] = x.value
		}
		var problems []string
		for pod, v := range want {
			if g, ok := got[pod]; !ok || math.Abs(g-v) > 1e-9 {
				problems = append(problems, fmt.Sprintf("%s: %s = %v (present %v), want %v", query, pod, g, ok, v))
			}
		}
		if len(got) != len(want) {
			problems = append(problems, fmt.Sprintf("%s: series for %v, want only the fractional pods", query, got))
		}
		return problems
	})
}

// testEnergyConservation: over a window, per GPU, the increase of its
// holders' gpu_container_energy_joules_total (orphans and host processes
// included) plus that of gpu_idle_energy_joules_total equals the increase
// of gpu_energy_joules_total (one copy per holder: max by uuid), on each
// of gpus GPUs; a MIG GPU's containers are summed over its instances (their
// uuid is the GPU's) and its idle counter is the GPU's alone. All three
// come from the same scrapes, so increase()'s extrapolation scales them
// alike; what is left is the GPU counter's millijoule rounding and
// floating-point error. The holders' side is the query docs/shared-gpus.md
// gives users, over 20s instead of 1h.
func testEnergyConservation(t *testing.T, s *stack, gpus int) {
	const window = "20s"
	parts := strings.ReplaceAll(documentedConservationQuery(t), "[1h]", "["+window+"]")
	whole := fmt.Sprintf(`max by (uuid) (increase(gpu_energy_joules_total[%s]))`, window)
	var worst float64 // the largest relative difference of the last round
	poll.Problems(t, 40*time.Second, 2*time.Second, func() []string {
		p, err := s.query(parts)
		if err != nil {
			return []string{err.Error()}
		}
		w, err := s.query(whole)
		if err != nil {
			return []string{err.Error()}
		}
		if len(p) != gpus || len(w) != gpus {
			return []string{fmt.Sprintf("want %d GPUs on both sides, got holders+idle %v, counter %v", gpus, p, w)}
		}
		counter := map[string]float64{}
		for _, x := range w {
			counter[x.labels["uuid"]] = x.value
		}
		var problems []string
		worst = 0
		for _, x := range p {
			c, ok := counter[x.labels["uuid"]]
			if ok && c > 0 {
				worst = math.Max(worst, math.Abs(x.value-c)/c)
			}
			// A window of 20s at some 100 W or more: thousands of joules;
			// a millijoule per sample of rounding at most.
			if !ok || c < 1000 || math.Abs(x.value-c) > 1e-6*c+0.05 {
				problems = append(problems, fmt.Sprintf("GPU %s: holders + idle %g J, counter %g J over %s", x.labels["uuid"], x.value, c, window))
			}
		}
		return problems
	})
	t.Logf("holders + idle vs counter over %s: largest relative difference %.2g", window, worst)
}

// documentedConservationQuery is the holders-plus-idle query of
// docs/shared-gpus.md's "Conservation" paragraph, the one users copy.
func documentedConservationQuery(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "shared-gpus.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`(sum by \\(uuid\\) \\(increase\\(gpu_container_energy_joules_total\\[1h\\]\\)\\)[^`]*)`").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/shared-gpus.md gives no holders-plus-idle query")
	}
	return string(m[1])
}
