package rightsize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// fakeProm answers Prometheus' /api/v1/rules with recording rules named
// records and /api/v1/query from answers keyed by a prefix of the query
// (the longest matching prefix wins); any other query gets an empty
// vector. It keeps the queries it was asked.
type fakeProm struct {
	records []string
	answers map[string][]Sample
	status  int // non-zero: every query answers with this HTTP status

	mu      sync.Mutex
	queries []string
}

func (f *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/api/v1/rules":
		var rules []map[string]any
		for _, name := range f.records {
			rules = append(rules, map[string]any{"type": "recording", "name": name, "query": "vector(1)", "health": "ok"})
		}
		writeJSON(w, map[string]any{"status": "success", "data": map[string]any{"groups": []any{
			map[string]any{"name": "gpu-exporter.rightsize.rules", "file": "recording.yaml", "interval": 60, "rules": rules},
		}}})
	case "/api/v1/query":
		q := r.FormValue("query")
		f.mu.Lock()
		f.queries = append(f.queries, q)
		f.mu.Unlock()
		if f.status != 0 {
			w.WriteHeader(f.status)
			writeJSON(w, map[string]any{"status": "error", "errorType": "bad_data", "error": "parse error at char 3"})
			return
		}
		best := ""
		for prefix := range f.answers {
			if strings.HasPrefix(q, prefix) && len(prefix) > len(best) {
				best = prefix
			}
		}
		result := []any{}
		for _, s := range f.answers[best] {
			result = append(result, map[string]any{"metric": s.Labels, "value": []any{1.7e9, fmt.Sprint(s.Value)}})
		}
		writeJSON(w, map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": result}})
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	_ = json.NewEncoder(w).Encode(v)
}

func wl(ns, name, kind string, extra ...string) map[string]string {
	l := map[string]string{"namespace": ns, "workload": name, "workload_type": kind}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

const h100 = "NVIDIA H100 80GB HBM3"

// week is a 7d window of four workloads whose right answers are known:
// a saturated 8-GPU trainer (keep), an idle notebook on a whole GPU, an
// inference server peaking at 8 GiB at 10% activity on a whole H100
// (1g.10gb), and a MIG fine-tuning job at 90% of its 3g.40gb (keep).
func week() *fakeProm {
	trainer := wl("ml", "trainer", "Deployment")
	notebook := wl("research", "notebook", "StatefulSet")
	infer := wl("serving", "infer", "Deployment")
	finetune := wl("ml", "finetune", "Job")
	s := func(l map[string]string, v float64) Sample { return Sample{Labels: l, Value: v} }
	with := func(l map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range l {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	return &fakeProm{
		records: []string{"namespace_workload:gpu_allocated_hours:sum_7d", "namespace_workload:gpu_allocated_hours:sum_1h"},
		answers: map[string][]Sample{
			"namespace_workload:gpu_allocated_hours:sum_7d":                 {s(trainer, 1344), s(notebook, 168), s(infer, 168), s(finetune, 42)},
			"namespace_workload:gpu_idle_hours:sum_7d":                      {s(notebook, 168)},
			"namespace_workload:gpu_device_memory_used_bytes:max_7d":        {s(trainer, 70e9), s(notebook, 2e9), s(infer, 8*(1<<30)), s(finetune, 30e9)},
			"namespace_workload:gpu_device_memory_used_bytes:p95_7d":        {s(trainer, 68e9), s(notebook, 2e9), s(infer, 5e9), s(finetune, 29e9)},
			"namespace_workload:gpu_device_utilization_ratio:p95_7d":        {s(trainer, 0.97), s(notebook, 0.01), s(infer, 0.1), s(finetune, 0.9)},
			"count_over_time(namespace_workload:gpu_allocated_hours:sum_1h": {s(trainer, 168), s(notebook, 168), s(infer, 168), s(finetune, 60)},
			"max by (cluster, namespace, workload, model, mig_profile)": {
				s(with(trainer, "model", h100), 8), s(with(notebook, "model", h100), 1),
				s(with(infer, "model", h100), 1), s(with(finetune, "model", h100, "mig_profile", "3g.40gb"), 1),
			},
		},
	}
}

func serve(t *testing.T, f http.Handler) *Prometheus {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	p, err := NewPrometheus(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustWindow(t *testing.T, name string) Window {
	t.Helper()
	w, err := WindowByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestReportWeek(t *testing.T) {
	t.Parallel()
	p := serve(t, week())
	rows, err := Report(context.Background(), p, Options{Window: mustWindow(t, "7d"), Headroom: 0.1, MinCoverage: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		ns, workload, current, rec, confidence, pattern string
		freedPerWeek                                    float64
	}
	wants := []want{
		{"ml", "finetune", "3g.40gb", "keep", "low", "steady", 0},
		{"ml", "trainer", "8 GPU", "keep", "high", "steady", 0},
		{"research", "notebook", "1 GPU", "1g.10gb", "high", "steady", 168 * (1 - 10.0/80)},
		{"serving", "infer", "1 GPU", "1g.10gb", "medium", "bursty", 168 * (1 - 10.0/80)},
	}
	if len(rows) != len(wants) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(wants), rows)
	}
	for i, w := range wants {
		r := rows[i]
		got := want{r.Namespace, r.Workload, r.Current, r.Recommendation, r.Confidence, r.Pattern, r.FreedGPUHoursPerWeek}
		if got != w {
			t.Errorf("row %d = %+v, want %+v", i, got, w)
		}
	}
	if rows[0].Coverage != 60.0/168 {
		t.Errorf("finetune coverage %v, want %v", rows[0].Coverage, 60.0/168)
	}
}

func TestReportNamespaceSelector(t *testing.T) {
	t.Parallel()
	f := week()
	// Series as prometheus-operator's namespace enforcement leaves them.
	for k, ss := range f.answers {
		for i := range ss {
			l := map[string]string{}
			for lk, lv := range ss[i].Labels {
				if lk == "namespace" {
					lk = "exported_namespace"
				}
				l[lk] = lv
			}
			f.answers[k][i].Labels = l
		}
	}
	f.answers["max by (cluster, exported_namespace, workload, model, mig_profile)"] = f.answers["max by (cluster, namespace, workload, model, mig_profile)"]
	p := serve(t, f)
	rows, err := Report(context.Background(), p, Options{Window: mustWindow(t, "7d"), Namespace: "research", NamespaceLabel: "exported_namespace", Headroom: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range f.queries {
		if !strings.Contains(q, `{exported_namespace="research"}`) {
			t.Errorf("query without the namespace selector: %s", q)
		}
	}
	// The fake ignores selectors; the rows come back keyed by the label.
	if len(rows) == 0 || rows[0].Namespace == "" {
		t.Errorf("rows lost the namespace from exported_namespace: %+v", rows)
	}
}

func TestReportErrors(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	downProm, err := NewPrometheus(down.URL)
	if err != nil {
		t.Fatal(err)
	}
	noData := week()
	noData.answers = nil
	failing := week()
	failing.status = http.StatusBadRequest
	tests := []struct {
		name   string
		p      *Prometheus
		opts   Options
		is     error
		substr string
	}{
		{"rules not loaded", serve(t, &fakeProm{}), Options{Window: mustWindow(t, "7d")}, ErrNoRules, "no rule records namespace_workload:gpu_allocated_hours:sum_7d"},
		{"window not recorded yet", serve(t, noData), Options{Window: mustWindow(t, "7d")}, ErrNoData, "try a shorter --window"},
		{"query error", serve(t, failing), Options{Window: mustWindow(t, "7d")}, nil, "parse error at char 3"},
		{"unreachable", downProm, Options{Window: mustWindow(t, "7d")}, nil, "unreachable"},
		{"bad namespace label", serve(t, week()), Options{Window: mustWindow(t, "7d"), NamespaceLabel: "a-b"}, nil, `--namespace-label="a-b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Report(context.Background(), tt.p, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.substr) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Errorf("error %v; want one containing %q (is %v)", err, tt.substr, tt.is)
			}
		})
	}
	if _, err := WindowByName("2d"); err == nil || !strings.Contains(err.Error(), `--window="2d"`) {
		t.Errorf("WindowByName(2d) = %v", err)
	}
}

func TestWriteFormats(t *testing.T) {
	t.Parallel()
	p := serve(t, week())
	w := mustWindow(t, "7d")
	rows, err := Report(context.Background(), p, Options{Window: w, Headroom: 0.1, MinCoverage: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range Formats {
		var b strings.Builder
		if err := Write(&b, rows, format, w); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		out := b.String()
		for _, want := range []string{"notebook", "1g.10gb", "147"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s output lacks %q:\n%s", format, want, out)
			}
		}
		if lines := strings.Count(out, "\n"); format != "json" && lines != len(rows)+1 {
			t.Errorf("%s: %d lines, want a header and %d rows:\n%s", format, lines, len(rows), out)
		}
	}
	var back []Row
	var b strings.Builder
	if err := Write(&b, rows, "json", w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil || !reflect.DeepEqual(back, rows) {
		t.Errorf("json does not round-trip: %v", err)
	}
	if err := Write(&b, rows, "yaml", w); err == nil {
		t.Error("Write accepted format yaml")
	}
}

// TestLargestCurrentSize: a workload whose pods hold different sizes is
// sized by its largest, and the others are named.
func TestLargestCurrentSize(t *testing.T) {
	t.Parallel()
	s := func(profile string, n float64) Sample {
		return Sample{Labels: map[string]string{"model": h100, "mig_profile": profile}, Value: n}
	}
	tests := []struct {
		name   string
		sizes  []Sample
		want   string
		others []string
	}{
		{"one size", []Sample{s("", 1)}, "1 GPU", nil},
		{"whole GPUs win over MIG", []Sample{s("3g.40gb", 1), s("", 2)}, "2 GPU", []string{"3g.40gb"}},
		{"larger MIG profile wins", []Sample{s("1g.10gb", 1), s("3g.40gb", 1)}, "3g.40gb", []string{"1g.10gb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, size, others, ok := largest(tt.sizes)
			if !ok || size.String() != tt.want || !reflect.DeepEqual(others, tt.others) {
				t.Errorf("largest = %v %v %v, want %s %v", size, others, ok, tt.want, tt.others)
			}
		})
	}
	if _, _, _, ok := largest(nil); ok {
		t.Error("largest(nil) ok")
	}
}
