package dashboards_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/rules"
	"github.com/gpu-exporter/gpu-exporter/tests/testbin"
)

// Holders of the GPUs of holderNode, with every holder label a real
// cluster can add: pod_uid (--kubernetes.pod-uid) and label_* pod labels
// (--kubernetes.pod-labels). GPU 0 is time-sliced between the first two,
// GPU 1 held by the third, GPU 2 by nobody.
var testHolders = []map[string]string{
	{"namespace": "ml", "pod": "train-a", "container": "main", "pod_uid": "uid-a", "label_team": "vision", "label_app": "train"},
	{"namespace": "ml", "pod": "train-b", "container": "main", "pod_uid": "uid-b", "label_team": "speech", "label_app": "train"},
	{"namespace": "research", "pod": "notebook-0", "container": "nb", "pod_uid": "uid-c", "label_team": "vision", "label_app": "notebook"},
}

// gpuHolders maps a GPU index of holderNode to the testHolders holding it.
var gpuHolders = [][]int{{0, 1}, {2}, nil}

const holderNode = "gpu-node-1"

// perGPUBoards are the dashboards that draw GPUs, not their holders: on
// them a query must return one series per GPU (MIG instance, link) however
// many pods share it and whatever labels those pods carry.
var perGPUBoards = []string{"gpu-cluster-overview.json", "gpu-node-detail.json"}

// grafanaVars gives Grafana's variables the values of a dashboard opened
// on "All", with windows that the test data covers.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "1m",
	"$__range_s", "300",
	"$__range", "5m",
	"$__interval", "15s",
	"$cluster", ".*",
	"$node", ".*",
	"$gpu", ".*",
	"$namespace", ".*",
	"$pod", ".*",
	"$hpc_user", ".*",
	"$price", "0.15", // the Price per kWh variable's default
)

// metricName finds the raw metric names a query reads (recordings have a
// colon and are left to the recording rules).
var metricName = regexp.MustCompile(`\b((?:gpu|nvswitch)_[a-z0-9_]+)\{`)

// TestQueriesOnSharedGPUsWithPodLabels runs every dashboard query in
// promtool, on the shipped recording rules and on series of GPUs shared by
// pods that carry pod_uid and label_* labels. Every query must evaluate
// (no many-to-many matching), and on the per-GPU dashboards no two series
// of a result may differ in holder labels only: a shared GPU draws one
// line, not one per pod.
func TestQueriesOnSharedGPUsWithPodLabels(t *testing.T) {
	t.Parallel()
	bin := testbin.Tool(t, "promtool")
	holderLabels := holderLabelNames()

	type check struct{ name, expr string }
	var checks []check
	names := map[string]bool{}
	for file, d := range loadBoards(t) {
		perGPU := slices.Contains(perGPUBoards, file)
		for _, p := range d.all() {
			// Tables that list holders show one row per holder by design.
			listsHolders := slices.Contains(p.fields(), "pod")
			for _, tg := range p.Targets {
				if tg.Expr == "" {
					continue
				}
				for _, m := range metricName.FindAllStringSubmatch(tg.Expr, -1) {
					names[m[1]] = true
				}
				expr := grafanaVars.Replace(tg.Expr)
				name := fmt.Sprintf("%s / %s / %s", file, p.Title, tg.RefID)
				if perGPU && !listsHolders {
					// Series left once the holder labels are dropped
					// that stand for more than one series.
					checks = append(checks, check{name, `count without (` + strings.Join(holderLabels, ", ") + `) (` + expr + `) > 1`})
				} else {
					// Never true: only an evaluation error fails.
					checks = append(checks, check{name, `count(` + expr + `) < 0`})
				}
			}
		}
	}
	sort.Slice(checks, func(i, j int) bool { return checks[i].name < checks[j].name })
	if len(checks) < 50 {
		t.Fatalf("only %d dashboard queries found", len(checks))
	}

	type exprTest struct {
		Expr       string `yaml:"expr"`
		EvalTime   string `yaml:"eval_time"`
		ExpSamples []any  `yaml:"exp_samples"`
	}
	type series struct {
		Series string `yaml:"series"`
		Values string `yaml:"values"`
	}
	var input []series
	for _, name := range slices.Sorted(maps.Keys(names)) {
		for _, s := range seriesOf(t, name) {
			input = append(input, series{s, "1+1x40"})
		}
	}
	var tests []exprTest
	for _, c := range checks {
		tests = append(tests, exprTest{Expr: "# " + c.name + "\n" + c.expr, EvalTime: "10m", ExpSamples: []any{}})
	}
	doc := map[string]any{
		"rule_files":          []string{rules.RecordingFile},
		"evaluation_interval": "15s",
		"tests": []any{map[string]any{
			"interval":         "15s",
			"input_series":     input,
			"promql_expr_test": tests,
			"name":             "dashboard queries on shared GPUs with pod_uid and label_*",
		}},
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rec, err := rules.Raw(rules.RecordingFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{rules.RecordingFile: rec, "dashboards_test.yaml": data} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(bin, "test", "rules", filepath.Join(dir, "dashboards_test.yaml")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// holderLabelNames are the holder labels testHolders carry.
func holderLabelNames() []string {
	names := map[string]bool{}
	for _, h := range testHolders {
		for k := range h {
			names[k] = true
		}
	}
	for _, k := range exposition.HolderLabelNames() {
		names[k] = true
	}
	return slices.Sorted(maps.Keys(names))
}

// seriesOf returns the series of the metric called name on holderNode
// as the exporter exposes them: GPU families with a copy per holder, the
// others once per GPU; NVLink families also per link. Names that are
// neither a declared family nor a catalog field have none.
func seriesOf(t *testing.T, name string) []string {
	t.Helper()
	held, extra, ok := familyShape(name)
	if !ok {
		return nil
	}
	if strings.HasPrefix(name, "nvswitch_") {
		return []string{selector(name, map[string]string{"nvswitch": "0", "link": "0"}, extra)}
	}
	links := []string{""}
	if strings.Contains(name, "nvlink") {
		links = append(links, "0", "1")
	}
	var out []string
	for gpu, holders := range gpuHolders {
		for _, link := range links {
			base := map[string]string{
				"gpu": fmt.Sprint(gpu), "uuid": fmt.Sprintf("GPU-%d", gpu), "device": fmt.Sprintf("nvidia%d", gpu), "model": "NVIDIA H100",
			}
			if link != "" {
				base["link"] = link
			}
			if !held || len(holders) == 0 {
				out = append(out, selector(name, base, extra))
				continue
			}
			for _, h := range holders {
				l := maps.Clone(base)
				maps.Copy(l, testHolders[h])
				out = append(out, selector(name, l, extra))
			}
		}
	}
	return out
}

// familyShape says whether the family called name carries holder labels
// and which labels of its own it adds.
func familyShape(name string) (held bool, extra []string, ok bool) {
	for _, f := range exposition.Families() {
		if f.Name != name || f.Naming != exposition.NamingPrometheus {
			continue
		}
		for _, l := range f.Labels {
			switch l {
			case exposition.HolderLabels:
				held = true
			case exposition.EntityLabels, "gpu", "uuid", "device", "model", "gpu_instance", "mig_profile", "link", "nvswitch":
			default:
				extra = append(extra, l)
			}
		}
		return held, extra, true
	}
	f, found := fields.MustNew().Lookup(name)
	if !found {
		return false, nil, false
	}
	if f.Kind == fields.Bitmask {
		extra = []string{"reason"}
	}
	return true, extra, true
}

// selector writes a series of name with labels l, the scrape's labels and
// every label of extra set to "1".
func selector(name string, l map[string]string, extra []string) string {
	l = maps.Clone(l)
	l["node"], l["job"], l["instance"] = holderNode, "gpu-exporter", "10.0.0.1:9400"
	for _, e := range extra {
		l[e] = "1"
	}
	if slices.Contains(extra, "reason") {
		l["reason"] = "sw_thermal"
	}
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, fmt.Sprintf("%s=%q", k, l[k]))
	}
	return name + "{" + strings.Join(parts, ", ") + "}"
}
