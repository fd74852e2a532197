package rules_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/gpu-exporter/gpu-exporter/rules"
)

// mutation turns on TestAlertMutantsKilled, which runs promtool once per
// mutant (minutes): `make mutation` sets it.
var mutation = flag.Bool("mutation", false, "run the rule mutation check (promtool once per mutant of every alert's thresholds and `for`)")

// mutationAlerts narrows the mutation check to the alerts whose names
// match it (a regular expression, anchored): `-args -mutation
// -mutation.alerts 'GPUTemperature.*|GPUXidErrorCritical'` checks an
// edited alert in a minute. The survivors are then compared with the known
// ones of those alerts only.
var mutationAlerts = flag.String("mutation.alerts", "", "with -mutation, check only the alerts whose names match this regular expression (anchored)")

// Factors by which a mutant moves a threshold or a `for` duration, up and
// down: small enough that a rule test with no case near the boundary lets
// the mutant live (0.25 -> 0.275 and 0.225; 10m -> 12m30s and 7m30s).
const (
	thresholdUp, thresholdDown = 1.1, 0.9
	forUp, forDown             = 1.25, 0.75
)

// knownSurvivors are the mutants no promtool case can kill, each with the
// reason: equivalent mutants, which no series the exporter writes tells
// from the rule (see docs/testing.md). TestAlertMutantsKilled fails when
// the survivors differ from this list in either direction: a new alert's
// mutants are checked like the others, and a mutant a new case kills must
// leave the list.
var knownSurvivors = map[string]string{
	"GPUFabricManagerNotReady threshold < 3 -> < 2.7":  "equivalent: gpu_fabric_manager_status is an integer dcgmFabricManagerStatus_t (DCGM dcgmlib/dcgm_structs.h: DcgmFMStatusNotSupported 0 to DcgmFMStatusNvmlTooOld 6; the nvml source writes the same numbers, pkg/source/nvml/fabric_cgo.go), and no integer lies in [2.7, 3)",
	"GPUHealthFailure threshold >= 2 -> >= 1.8":        "equivalent: gpu_health_status is the exporter's integer code, 1 warning and 2 failure (pkg/source/health.go HealthStatus, from DCGM's DCGM_HEALTH_RESULT_WARN 10 and _FAIL 20 in dcgm_structs.h), and no integer lies in [1.8, 2)",
	"GPURecoveryActionRequired threshold > 4 -> > 4.4": "equivalent: gpu_recovery_action is an integer nvmlDeviceGpuRecoveryAction_t (nvml.h, NVIDIA/go-nvml gen/nvml/nvml.h: NVML_GPU_RECOVERY_ACTION_NONE 0 to _SYSTEM_REBOOT 7), and no integer lies in (4, 4.4]",
}

// alertMutant is one change of one alert.
type alertMutant struct {
	alert string
	// id names the mutant: "<alert> <what> <from> -> <to>", the values
	// those of the chart's defaults.
	id string
	// apply changes the alert's rule (rendered with threshold markers)
	// in a rendering whose thresholds are values: a threshold mutant
	// scales the rendering's own value of the threshold, a `for` mutant
	// the rule's own `for` (an override's, where one applies), by the same
	// factor as in the id.
	apply func(r *rules.Rule, values map[string]string)
}

// mutationSet is one rendering of the alerting source with threshold
// markers and the promtool cases that run against it, as the unit tests
// run them: rules/tests against the chart's defaults with every alert
// enabled (off-by-default alerts are mutated too), rules/tests/tuned
// against the defaults overlaid by rules/tests/tuned/values.yaml, its
// disabled alerts left out as TestPromtoolUnitTestsTuned leaves them out.
type mutationSet struct {
	dir    string
	marked *rules.File
	values map[string]string
	tests  map[string][]byte
}

// mutationSets returns the renderings the mutation check runs mutants
// against, in the order it tries them.
func mutationSets(t *testing.T) []mutationSet {
	t.Helper()
	var sets []mutationSet
	for _, s := range []struct {
		dir       string
		enableAll bool
		values    [][]byte
	}{
		{"tests", true, [][]byte{readFile(t, chartValues)}},
		{filepath.Join("tests", "tuned"), false, [][]byte{readFile(t, chartValues), readFile(t, tunedValues)}},
	} {
		marked, values := markedAlerts(t, s.enableAll, s.values...)
		tests := map[string][]byte{}
		for _, f := range unitTestFiles(t, s.dir) {
			tests[f] = readFile(t, f)
		}
		sets = append(sets, mutationSet{dir: s.dir, marked: marked, values: values, tests: tests})
	}
	return sets
}

// thresholdMarker stands for threshold name in the marker rendering.
func thresholdMarker(name string) string { return "__threshold_" + name + "__" }

var markerRE = regexp.MustCompile(`__threshold_([A-Za-z0-9]+)__`)

// literalThreshold is a number an ordering comparison compares with,
// written in the rule itself: `> 0.25`, `< 900`. Zero has no smaller or
// larger multiple, and equality compares with codes, not thresholds.
var literalThreshold = regexp.MustCompile(`(>=|<=|>|<)(\s*(?:bool\s+)?)([0-9]+(?:\.[0-9]+)?)\b`)

// formatNumber writes a mutated threshold with six significant digits.
func formatNumber(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// markedAlerts renders the alerting source with the values documents
// (Helm values, later ones overlaid on earlier ones) but every threshold
// as its marker, and with every alert enabled if enableAll; values are
// the thresholds the markers stand for.
func markedAlerts(t *testing.T, enableAll bool, docs ...[]byte) (marked *rules.File, values map[string]string) {
	t.Helper()
	p, err := rules.ParamsFromValues(docs...)
	if err != nil {
		t.Fatal(err)
	}
	values = map[string]string{}
	marks := map[string]any{}
	for name, v := range p.Thresholds {
		values[name] = fmt.Sprint(v)
		marks[name] = thresholdMarker(name)
	}
	p.Thresholds = marks
	if enableAll {
		p.Disabled = nil
	}
	marked, err = rules.Render(readFile(t, rules.SourceFile), p)
	if err != nil {
		t.Fatal(err)
	}
	return marked, values
}

// fillMarkers replaces the threshold markers of s with their values.
func fillMarkers(s string, values map[string]string) string {
	return markerRE.ReplaceAllStringFunc(s, func(m string) string {
		return values[markerRE.FindStringSubmatch(m)[1]]
	})
}

// alertMutants derives the mutants of every alert: each threshold (a
// chart threshold placeholder, or a non-zero number of an ordering
// comparison in the expression) times thresholdUp and thresholdDown at
// every place the alert uses it, and its `for` times forUp and forDown.
func alertMutants(t *testing.T, marked *rules.File, defaults map[string]string) []alertMutant {
	t.Helper()
	var out []alertMutant
	for _, r := range marked.Rules() {
		if r.Alert == "" {
			continue
		}
		alert := r.Alert
		var names []string
		for _, m := range markerRE.FindAllStringSubmatch(r.Expr, -1) {
			if !slices.Contains(names, m[1]) {
				names = append(names, m[1])
			}
		}
		for _, name := range names {
			v, err := strconv.ParseFloat(defaults[name], 64)
			if err != nil {
				t.Fatalf("%s: threshold %s = %q is not a number", alert, name, defaults[name])
			}
			for _, f := range []float64{thresholdUp, thresholdDown} {
				marker := thresholdMarker(name)
				out = append(out, alertMutant{
					alert: alert,
					id:    fmt.Sprintf("%s threshold %s %s -> %s", alert, name, defaults[name], formatNumber(v*f)),
					apply: func(r *rules.Rule, values map[string]string) {
						v, err := strconv.ParseFloat(values[name], 64)
						if err != nil {
							t.Errorf("%s: threshold %s = %q is not a number", alert, name, values[name])
							return
						}
						r.Expr = strings.ReplaceAll(r.Expr, marker, formatNumber(v*f))
					},
				})
			}
		}
		var literals []string
		for _, m := range literalThreshold.FindAllStringSubmatch(r.Expr, -1) {
			if v, _ := strconv.ParseFloat(m[3], 64); v != 0 && !slices.Contains(literals, m[1]+" "+m[3]) {
				literals = append(literals, m[1]+" "+m[3])
			}
		}
		for _, lit := range literals {
			op, num, _ := strings.Cut(lit, " ")
			v, _ := strconv.ParseFloat(num, 64)
			for _, f := range []float64{thresholdUp, thresholdDown} {
				to := formatNumber(v * f)
				out = append(out, alertMutant{
					alert: alert,
					id:    fmt.Sprintf("%s threshold %s -> %s %s", alert, lit, op, to),
					apply: func(r *rules.Rule, _ map[string]string) {
						r.Expr = literalThreshold.ReplaceAllStringFunc(r.Expr, func(m string) string {
							s := literalThreshold.FindStringSubmatch(m)
							if s[1] != op || s[3] != num {
								return m
							}
							return s[1] + s[2] + to
						})
					},
				})
			}
		}
		if r.For != "" {
			d, err := model.ParseDuration(r.For)
			if err != nil {
				t.Fatalf("%s: for %q: %v", alert, r.For, err)
			}
			for _, f := range []float64{forUp, forDown} {
				out = append(out, alertMutant{
					alert: alert,
					id:    fmt.Sprintf("%s for %s -> %s", alert, r.For, scaleFor(d, f)),
					apply: func(r *rules.Rule, _ map[string]string) {
						d, err := model.ParseDuration(r.For)
						if err != nil {
							t.Errorf("%s: for %q: %v", alert, r.For, err)
							return
						}
						r.For = scaleFor(d, f)
					},
				})
			}
		}
	}
	return out
}

// scaleFor multiplies a `for` duration by f, to the second.
func scaleFor(d model.Duration, f float64) string {
	return model.Duration(time.Duration(float64(d) * f).Round(time.Second)).String()
}

// TestAlertMutantsDerived checks the derivation itself, cheaply, on every
// `make test`: every alert with a `for` or a threshold has mutants, and
// the mutants of one known alert are the expected ones.
func TestAlertMutantsDerived(t *testing.T) {
	t.Parallel()
	marked, defaults := markedAlerts(t, true, readFile(t, chartValues))
	ms := alertMutants(t, marked, defaults)
	var ids []string
	for _, m := range ms {
		if m.alert == "GPUHardwareSlowdown" {
			ids = append(ids, m.id)
		}
	}
	want := []string{
		"GPUHardwareSlowdown threshold > 0.25 -> > 0.275",
		"GPUHardwareSlowdown threshold > 0.25 -> > 0.225",
		"GPUHardwareSlowdown for 5m -> 6m15s",
		"GPUHardwareSlowdown for 5m -> 3m45s",
	}
	if !slices.Equal(ids, want) {
		t.Errorf("GPUHardwareSlowdown mutants:\n%s\nwant:\n%s", strings.Join(ids, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range marked.Rules() {
		if r.Alert == "" || (r.For == "" && !markerRE.MatchString(r.Expr) && !hasLiteralThreshold(r.Expr)) {
			continue
		}
		if !slices.ContainsFunc(ms, func(m alertMutant) bool { return m.alert == r.Alert }) {
			t.Errorf("%s has a `for` or a threshold but no mutant", r.Alert)
		}
	}
	for id := range knownSurvivors {
		if !slices.ContainsFunc(ms, func(m alertMutant) bool { return m.id == id }) {
			t.Errorf("known survivor %q is no mutant of the rules any more: remove it", id)
		}
	}
}

// TestAlertMutantsOnTunedRendering: a mutant applied to the tuned
// rendering scales the tuned threshold and the overridden `for`, not the
// defaults its id names, and each rendering enables the alerts its cases
// expect (every alert for rules/tests, the tuned ones for
// rules/tests/tuned).
func TestAlertMutantsOnTunedRendering(t *testing.T) {
	t.Parallel()
	sets := mutationSets(t)
	ms := alertMutants(t, sets[0].marked, sets[0].values)
	apply := func(s mutationSet, id string) rules.Rule {
		t.Helper()
		i := slices.IndexFunc(ms, func(m alertMutant) bool { return m.id == id })
		if i < 0 {
			t.Fatalf("no mutant %q", id)
		}
		for _, r := range s.marked.Rules() {
			if r.Alert == ms[i].alert {
				ms[i].apply(&r, s.values)
				r.Expr = fillMarkers(r.Expr, s.values)
				return r
			}
		}
		t.Fatalf("rules/%s: no alert %s", s.dir, ms[i].alert)
		return rules.Rule{}
	}
	for _, c := range []struct {
		set        int
		id         string
		expr, from string
	}{
		{0, "GPUTemperatureHigh threshold temperatureSlowdownMarginCelsius 5 -> 5.5", "- 5.5)", ""},
		{1, "GPUTemperatureHigh threshold temperatureSlowdownMarginCelsius 5 -> 5.5", "- 11)", ""},
		{0, "GPUTemperatureHigh for 10m -> 7m30s", "", "7m30s"},
		{1, "GPUTemperatureHigh for 10m -> 7m30s", "", "3m45s"},
		{1, "GPUMemoryNearlyFull threshold memoryNearlyFullRatio 0.95 -> 0.855", "> 0.873)", ""},
	} {
		r := apply(sets[c.set], c.id)
		if c.expr != "" && !strings.Contains(r.Expr, c.expr) {
			t.Errorf("%s on rules/%s: expr does not contain %q:\n%s", c.id, sets[c.set].dir, c.expr, r.Expr)
		}
		if c.from != "" && r.For != c.from {
			t.Errorf("%s on rules/%s: for %s, want %s", c.id, sets[c.set].dir, r.For, c.from)
		}
	}
	has := func(s mutationSet, alert string) bool {
		return slices.ContainsFunc(s.marked.Rules(), func(r rules.Rule) bool { return r.Alert == alert })
	}
	if !has(sets[0], "GPUMemoryNearlyFull") || !has(sets[1], "GPUMemoryNearlyFull") {
		t.Error("GPUMemoryNearlyFull (off by default, on in the tuned values) is not in both renderings")
	}
	if has(sets[1], "GPUPowerCapped") {
		t.Error("GPUPowerCapped, disabled in the tuned values, is in the tuned rendering")
	}
}

func hasLiteralThreshold(expr string) bool {
	for _, m := range literalThreshold.FindAllStringSubmatch(expr, -1) {
		if v, _ := strconv.ParseFloat(m[3], 64); v != 0 {
			return true
		}
	}
	return false
}

// TestAlertMutantsKilled renders, for every mutant of every alert, the
// rules with that one change and runs the promtool unit tests that name
// the alert, as the unit tests run them (mutationSets): rules/tests against
// the defaults, then rules/tests/tuned against the tuned rendering; some
// case of either must fail. Each rendering unmutated first passes its
// cases, so a failure is the mutant's. Run by `make mutation` (go test
// ./rules -run TestAlertMutantsKilled -args -mutation); promtool runs in
// parallel, one per CPU.
func TestAlertMutantsKilled(t *testing.T) {
	if !*mutation {
		t.Skip("rule mutation check: run with -args -mutation (make mutation)")
	}
	bin := promtool(t)
	recording, err := load(t, rules.RecordingFile).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	sets := mutationSets(t)
	for _, s := range sets {
		if runMutant(t, bin, s, nil, recording, sortedKeys(s.tests)) {
			t.Fatalf("rules/%s fails on the unmutated rules: fix it before checking mutants", s.dir)
		}
	}
	mutants := alertMutants(t, sets[0].marked, sets[0].values)
	only := func(string) bool { return true }
	if *mutationAlerts != "" {
		re := regexp.MustCompile(`^(?:` + *mutationAlerts + `)$`)
		only = re.MatchString
		mutants = slices.DeleteFunc(mutants, func(m alertMutant) bool { return !only(m.alert) })
	}
	var (
		mu        sync.Mutex
		survivors = map[string]string{}
		wg        sync.WaitGroup
		sem       = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	)
	for _, m := range mutants {
		names := regexp.MustCompile(`alertname:\s*` + m.alert + `\b`)
		files := make([][]string, len(sets))
		var ran []string
		for i, s := range sets {
			for f, data := range s.tests {
				if names.Match(data) {
					files[i] = append(files[i], f)
				}
			}
			slices.Sort(files[i])
			ran = append(ran, files[i]...)
		}
		if len(ran) == 0 {
			survivors[m.id] = "no promtool case names the alert"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			for i, s := range sets {
				if len(files[i]) > 0 && runMutant(t, bin, s, &m, recording, files[i]) {
					return
				}
			}
			mu.Lock()
			survivors[m.id] = "promtool passed: " + strings.Join(ran, ", ")
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("%d mutants of %d alerts, %d survived", len(mutants), countAlerts(sets[0].marked), len(survivors))
	for _, id := range sortedKeys(survivors) {
		if _, ok := knownSurvivors[id]; !ok {
			t.Errorf("mutant lived: %s (%s)", id, survivors[id])
		}
	}
	for _, id := range sortedKeys(knownSurvivors) {
		if !only(strings.Fields(id)[0]) {
			continue
		}
		if _, ok := survivors[id]; !ok {
			t.Errorf("known survivor %q is killed now: remove it from knownSurvivors", id)
		}
	}
}

// runMutant writes the rules of set s with mutant m applied (none if m is
// nil), without annotations, and runs promtool test rules on files;
// failed reports whether a case failed. A promtool that cannot run at all
// fails the test.
func runMutant(t *testing.T, bin string, s mutationSet, m *alertMutant, recording []byte, files []string) (failed bool) {
	name := "unmutated " + s.dir
	if m != nil {
		name = m.id + " on " + s.dir
	}
	dir := t.TempDir()
	alerts := s.marked.Map(func(r rules.Rule) rules.Rule {
		r.Annotations = nil
		if m != nil && r.Alert == m.alert {
			m.apply(&r, s.values)
		}
		r.Expr = fillMarkers(r.Expr, s.values)
		return r
	})
	data, err := alerts.Marshal()
	if err != nil {
		t.Error(err)
		return true
	}
	if err := os.Mkdir(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Error(err)
		return true
	}
	args := []string{"test", "rules"}
	for name, b := range map[string][]byte{rules.AlertsFile: data, rules.RecordingFile: recording} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Error(err)
			return true
		}
	}
	for _, f := range files {
		dst := filepath.Join(dir, "tests", filepath.Base(f))
		if err := os.WriteFile(dst, s.tests[f], 0o644); err != nil {
			t.Error(err)
			return true
		}
		args = append(args, dst)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err == nil {
		return false
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(string(out), "FAILED") {
		t.Errorf("%s: promtool did not run the tests: %v\n%s", name, err, out)
	}
	if m == nil {
		t.Logf("%s: %s", name, out)
	}
	return true
}

func countAlerts(f *rules.File) int {
	n := 0
	for _, r := range f.Rules() {
		if r.Alert != "" {
			n++
		}
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
