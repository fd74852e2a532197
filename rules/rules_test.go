package rules_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/rules"
	"github.com/gpu-exporter/gpu-exporter/tests/testbin"
)

const (
	runbooksPath = "../docs/runbooks.md"
	runbookBase  = "https://github.com/gpu-exporter/gpu-exporter/blob/main/docs/runbooks.md"
	// chartDir is the Helm chart that embeds the rules.
	chartDir = "../deployment/helm/gpu-exporter"
	// chartValues holds the defaults of the tunable rule values.
	chartValues = chartDir + "/values.yaml"
	// tunedValues is the tuned set that rules/tests/tuned/ tests.
	tunedValues = "tests/tuned/values.yaml"
	// namespaceValues sets monitoring.namespaceLabel: exported_namespace,
	// which rules/tests/exported_namespace/ tests.
	namespaceValues = "tests/exported_namespace/values.yaml"
)

// promtool finds the promtool binary: on PATH (make test puts tests/tools/bin
// there) or in tests/tools/bin. Without it the test fails under CI and is
// skipped elsewhere.
func promtool(t *testing.T) string {
	t.Helper()
	return testbin.Tool(t, "promtool")
}

func load(t *testing.T, name string) *rules.File {
	t.Helper()
	f, err := rules.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPromtoolCheckRules(t *testing.T) {
	t.Parallel()
	bin := promtool(t)
	out, err := exec.Command(bin, "check", "rules", rules.AlertsFile, rules.RecordingFile, rules.OpenCostFile).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// TestPromtoolUnitTests runs rules/tests/*.yaml against the shipped
// recording rules and the shipped alerts (the defaults rendering) without
// their annotations: the unit tests assert when alerts fire and with which
// labels, not wording.
func TestPromtoolUnitTests(t *testing.T) {
	t.Parallel()
	promtoolTestRules(t, load(t, rules.AlertsFile), load(t, rules.RecordingFile), unitTestFiles(t, "tests"))
}

// TestPromtoolUnitTestsTuned runs rules/tests/tuned/*.yaml against the
// source rendered with the chart's defaults overlaid by
// rules/tests/tuned/values.yaml.
func TestPromtoolUnitTestsTuned(t *testing.T) {
	t.Parallel()
	p, err := rules.ParamsFromValues(readFile(t, chartValues), readFile(t, tunedValues))
	if err != nil {
		t.Fatal(err)
	}
	f, err := rules.Render(readFile(t, rules.SourceFile), p)
	if err != nil {
		t.Fatal(err)
	}
	promtoolTestRules(t, f, load(t, rules.RecordingFile), unitTestFiles(t, filepath.Join("tests", "tuned")))
}

// TestPromtoolUnitTestsNamespaceLabel runs rules/tests/exported_namespace/
// against both sources rendered with monitoring.namespaceLabel:
// exported_namespace, on series as prometheus-operator's namespace
// enforcement leaves them.
func TestPromtoolUnitTestsNamespaceLabel(t *testing.T) {
	t.Parallel()
	alerts, recording := renderSources(t, readFile(t, chartValues), readFile(t, namespaceValues))
	promtoolTestRules(t, alerts, recording, unitTestFiles(t, filepath.Join("tests", "exported_namespace")))
}

// renderSources renders the alerting and recording sources with values.
func renderSources(t *testing.T, values ...[]byte) (alerts, recording *rules.File) {
	t.Helper()
	p, err := rules.ParamsFromValues(values...)
	if err != nil {
		t.Fatal(err)
	}
	alerts, err = rules.RenderFile(rules.SourceFile, readFile(t, rules.SourceFile), p)
	if err != nil {
		t.Fatal(err)
	}
	recording, err = rules.RenderFile(rules.RecordingSourceFile, readFile(t, rules.RecordingSourceFile), p)
	if err != nil {
		t.Fatal(err)
	}
	return alerts, recording
}

// attributionNamespace finds `namespace` used as a label name or label
// reference: not a recording rule's namespace: level, not part of
// exported_namespace or namespace_pod.
var attributionNamespace = regexp.MustCompile(`(^|[^a-zA-Z0-9_:])namespace([^a-zA-Z0-9_:]|$)`)

// TestNamespaceLabelRenders: with monitoring.namespaceLabel:
// exported_namespace no rule reads `namespace` off GPU series (only
// kube-state-metrics series keep it), the rules pass promtool check
// rules, and by default no rule names exported_namespace.
func TestNamespaceLabelRenders(t *testing.T) {
	t.Parallel()
	const label = "exported_namespace"
	alerts, recording := renderSources(t, readFile(t, chartValues), readFile(t, namespaceValues))
	uses := 0
	for _, r := range append(alerts.Rules(), recording.Rules()...) {
		name := r.Alert + r.Record
		uses += strings.Count(r.Expr, label)
		if strings.Contains(r.Expr, "kube_") {
			continue // kube-state-metrics' namespace
		}
		if attributionNamespace.MatchString(r.Expr) {
			t.Errorf("%s reads namespace off GPU series: %s", name, r.Expr)
		}
		for k, v := range r.Annotations {
			if strings.Contains(v, "$labels.namespace ") {
				t.Errorf("%s: annotation %s names $labels.namespace: %s", name, k, v)
			}
		}
	}
	if uses < 20 {
		t.Errorf("only %d uses of %s in the rendered rules", uses, label)
	}
	bin := promtool(t)
	dir := t.TempDir()
	for name, f := range map[string]*rules.File{rules.AlertsFile: alerts, rules.RecordingFile: recording} {
		data, err := f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), data)
	}
	out, err := exec.Command(bin, "check", "rules", filepath.Join(dir, rules.AlertsFile), filepath.Join(dir, rules.RecordingFile)).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check rules: %v\n%s", err, out)
	}
	for _, name := range []string{rules.AlertsFile, rules.RecordingFile} {
		if strings.Contains(string(readFile(t, name)), label) {
			t.Errorf("rules/%s names %s with the default values", name, label)
		}
	}
}

func promtoolTestRules(t *testing.T, alerts, recording *rules.File, tests []string) {
	t.Helper()
	bin := promtool(t)
	dir := t.TempDir()
	rec, err := recording.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, rules.RecordingFile), rec)
	stripped, err := alerts.Map(func(r rules.Rule) rules.Rule {
		r.Annotations = nil
		return r
	}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, rules.AlertsFile), stripped)
	writeFile(t, filepath.Join(dir, rules.OpenCostFile), readFile(t, rules.OpenCostFile))
	args := []string{"test", "rules"}
	if err := os.Mkdir(filepath.Join(dir, "tests"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, src := range tests {
		dst := filepath.Join(dir, "tests", filepath.Base(src))
		writeFile(t, dst, readFile(t, src))
		args = append(args, dst)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// TestRuleFilesAreGenerated fails while rules/alerts.yaml or
// rules/recording.yaml differs from its source rendered with the chart's
// defaults: run `make rules`.
func TestRuleFilesAreGenerated(t *testing.T) {
	t.Parallel()
	for _, s := range rules.Sources {
		want, err := rules.GenerateFile(s.Source, readFile(t, s.Source), readFile(t, chartValues))
		if err != nil {
			t.Fatal(err)
		}
		got, err := rules.Raw(s.Out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("rules/%s is not what rules/%s renders with the chart's defaults: run `make rules`", s.Out, s.Source)
		}
	}
	if got := readFile(t, filepath.Join(chartDir, rules.ChartHelperFile)); !bytes.Equal(got, rules.ChartHelper()) {
		t.Errorf("the chart's %s is not what rules.ChartHelper writes: run `make rules`", rules.ChartHelperFile)
	}
}

// TestThresholdsAreUsed: every threshold value of the chart fills a
// placeholder of the source (a value that changes nothing misleads), and
// the defaults fill every placeholder.
func TestThresholdsAreUsed(t *testing.T) {
	t.Parallel()
	p, err := rules.ParamsFromValues(readFile(t, chartValues))
	if err != nil {
		t.Fatal(err)
	}
	src := string(readFile(t, rules.SourceFile))
	if len(p.Thresholds) == 0 {
		t.Fatal("the chart's values hold no prometheusRule.thresholds")
	}
	for name := range p.Thresholds {
		if !strings.Contains(src, "${"+name+"}") {
			t.Errorf("prometheusRule.thresholds.%s fills no placeholder of rules/%s", name, rules.SourceFile)
		}
	}
	if _, err := rules.Render([]byte(src), p); err != nil {
		t.Error(err)
	}
}

func TestRenderRefusesUnknownPlaceholder(t *testing.T) {
	t.Parallel()
	src := []byte("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up > ${missing}\n")
	_, err := rules.Render(src, rules.Params{})
	if err == nil || !strings.Contains(err.Error(), ":5: no threshold \"missing\"") {
		t.Errorf("Render with an unknown placeholder: err = %v, want one naming line 5 and the threshold", err)
	}
}

// allAlerts renders the source with the chart's thresholds and nothing
// disabled: every alert the project ships, on or off by default.
func allAlerts(t *testing.T) *rules.File {
	t.Helper()
	p, err := rules.ParamsFromValues(readFile(t, chartValues))
	if err != nil {
		t.Fatal(err)
	}
	p.Disabled = nil
	f, err := rules.Render(readFile(t, rules.SourceFile), p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestAlertConventions(t *testing.T) {
	t.Parallel()
	anchors := runbookAnchors(t)
	seen := map[string]bool{}
	for _, r := range allAlerts(t).Rules() {
		t.Run(r.Alert, func(t *testing.T) {
			if r.Alert == "" {
				t.Fatalf("alerts.yaml holds a non-alerting rule %q", r.Record)
			}
			if seen[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			seen[r.Alert] = true
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
				t.Errorf("severity label %q, want critical, warning or info", r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("annotation %s missing", a)
				}
			}
			anchor := strings.ToLower(r.Alert)
			if want := runbookBase + "#" + anchor; r.Annotations["runbook_url"] != want {
				t.Errorf("runbook_url %q, want %q", r.Annotations["runbook_url"], want)
			}
			if !anchors[anchor] {
				t.Errorf("docs/runbooks.md has no heading with anchor #%s", anchor)
			}
		})
	}
}

// alertHeading is a runbook section named like an alert.
var alertHeading = regexp.MustCompile(`^## (GPU[A-Za-z]+)$`)

// TestRunbookSectionsMatchAlerts: every alert-named section of
// docs/runbooks.md belongs to an alert the project ships (on or off by
// default), so no runbook outlives its alert.
func TestRunbookSectionsMatchAlerts(t *testing.T) {
	t.Parallel()
	alerts := map[string]bool{}
	for _, r := range allAlerts(t).Rules() {
		alerts[r.Alert] = true
	}
	n := 0
	for i, line := range strings.Split(string(readFile(t, runbooksPath)), "\n") {
		m := alertHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n++
		if !alerts[m[1]] {
			t.Errorf("docs/runbooks.md:%d: section %s names no alert of rules/%s", i+1, m[1], rules.SourceFile)
		}
	}
	if n == 0 {
		t.Error("docs/runbooks.md has no alert sections")
	}
}

var recordName = regexp.MustCompile(`^[a-z][a-z_]*:[a-z][a-z0-9_]*:[a-z][a-z0-9_]*$`)

func TestRecordingRuleConventions(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(runbooksPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range load(t, rules.RecordingFile).Rules() {
		if r.Record == "" {
			t.Errorf("recording.yaml holds a non-recording rule %q", r.Alert)
			continue
		}
		if !recordName.MatchString(r.Record) {
			t.Errorf("%s: name is not level:metric:operations", r.Record)
		}
		if !bytes.Contains(doc, []byte("`"+r.Record+"`")) {
			t.Errorf("%s: not described in docs/runbooks.md", r.Record)
		}
	}
}

// unitFile is the part of a promtool unit-test file this test reads.
type unitFile struct {
	Tests []struct {
		AlertRuleTests []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		PromQLExprTests []struct {
			Expr string `yaml:"expr"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

// TestEveryRuleHasUnitTests: every alert has a unit test where it fires and
// one where it does not; every recording rule is queried by a unit test.
func TestEveryRuleHasUnitTests(t *testing.T) {
	t.Parallel()
	fires, silent := map[string]bool{}, map[string]bool{}
	var exprs []string
	for _, path := range append(unitTestFiles(t, "tests"), unitTestFiles(t, filepath.Join("tests", "tuned"))...) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var f unitFile
		if err := yaml.Unmarshal(data, &f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, tc := range f.Tests {
			for _, a := range tc.AlertRuleTests {
				if len(a.ExpAlerts) > 0 {
					fires[a.Alertname] = true
				} else {
					silent[a.Alertname] = true
				}
			}
			for _, e := range tc.PromQLExprTests {
				exprs = append(exprs, e.Expr)
			}
		}
	}
	for _, r := range allAlerts(t).Rules() {
		if !fires[r.Alert] {
			t.Errorf("alert %s: no unit test where it fires", r.Alert)
		}
		if !silent[r.Alert] {
			t.Errorf("alert %s: no unit test where it stays silent", r.Alert)
		}
	}
	for _, r := range append(load(t, rules.RecordingFile).Rules(), load(t, rules.OpenCostFile).Rules()...) {
		if !slices.ContainsFunc(exprs, func(e string) bool { return mentions(e, r.Record) }) {
			t.Errorf("recording rule %s: no promql_expr_test queries it", r.Record)
		}
	}
}

// mentions reports whether expr uses the metric name as a whole word.
func mentions(expr, name string) bool {
	for i := 0; ; {
		j := strings.Index(expr[i:], name)
		if j < 0 {
			return false
		}
		end := i + j + len(name)
		if end == len(expr) || !isNameRune(rune(expr[end])) {
			if i+j == 0 || !isNameRune(rune(expr[i+j-1])) {
				return true
			}
		}
		i = end
	}
}

func isNameRune(r rune) bool {
	return r == '_' || r == ':' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// unitTestFiles returns the promtool unit-test files (*_test.yaml) of dir.
func unitTestFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no unit-test files in rules/%s", dir)
	}
	return files
}

// runbookAnchors returns the GitHub anchors of the headings of docs/runbooks.md.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(runbooksPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	anchors := map[string]bool{}
	sc := bufio.NewScanner(f)
	inCode := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		anchors[githubAnchor(heading)] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return anchors
}

// githubAnchor mimics GitHub's heading ids: lower case, punctuation
// dropped, spaces turned into hyphens.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
