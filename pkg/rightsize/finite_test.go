package rightsize

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestReportNonFinite: a recording that answers NaN (a 0/0 is enough),
// ±Inf, a negative figure or a current size that is no device count
// leaves that workload without a recommendation, with a note naming the
// figure, and low confidence; the other workloads are unaffected and
// every output format still prints.
func TestReportNonFinite(t *testing.T) {
	t.Parallel()
	notebook := wl("research", "notebook", "StatefulSet")
	size := func(v float64) []Sample {
		l := map[string]string{"model": h100}
		for k, v := range notebook {
			l[k] = v
		}
		return []Sample{{Labels: l, Value: v}}
	}
	const (
		alloc    = "namespace_workload:gpu_allocated_hours:sum_7d"
		idle     = "namespace_workload:gpu_idle_hours:sum_7d"
		peak     = "namespace_workload:gpu_device_memory_used_bytes:max_7d"
		activity = "namespace_workload:gpu_device_utilization_ratio:p95_7d"
		coverage = "count_over_time(namespace_workload:gpu_allocated_hours:sum_1h"
		current  = "max by (cluster, namespace, workload, model, mig_profile)"
	)
	tests := []struct {
		name  string
		query string
		value float64
		sizes []Sample // replaces the notebook's current size when set
		note  string
	}{
		{"allocated hours NaN", alloc, math.NaN(), nil, "allocated GPU-hours is NaN"},
		{"idle hours +Inf", idle, math.Inf(1), nil, "idle GPU-hours is +Inf"},
		{"peak memory -Inf", peak, math.Inf(-1), nil, "peak device memory is -Inf"},
		{"activity negative", activity, -0.5, nil, "p95 device activity is -0.5"},
		{"coverage NaN", coverage, math.NaN(), nil, "coverage is NaN"},
		{"current size NaN", current, 0, size(math.NaN()), "current size NaN"},
		{"current size +Inf", current, 0, size(math.Inf(1)), "current size +Inf"},
		{"current size 1e308", current, 0, size(1e308), "current size 1e+308"},
		{"current size negative", current, 0, size(-5), "current size -5"},
		{"current size not whole", current, 0, size(1.5), "current size 1.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := week()
			if tt.sizes != nil {
				// The notebook's size replaced, the others' kept.
				var keep []Sample
				for _, s := range f.answers[current] {
					if s.Labels["workload"] != "notebook" {
						keep = append(keep, s)
					}
				}
				f.answers[current] = append(keep, tt.sizes...)
			} else {
				found := false
				for i, s := range f.answers[tt.query] {
					if s.Labels["workload"] == "notebook" {
						f.answers[tt.query][i].Value, found = tt.value, true
					}
				}
				if !found {
					f.answers[tt.query] = append(f.answers[tt.query], Sample{Labels: notebook, Value: tt.value})
				}
			}
			w := mustWindow(t, "7d")
			rows, err := Report(context.Background(), serve(t, f), Options{Window: w, Headroom: 0.1, MinCoverage: 0.5})
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]Row{}
			for _, r := range rows {
				byName[r.Workload] = r
			}
			nb, ok := byName["notebook"]
			if !ok {
				t.Fatalf("no notebook row: %+v", rows)
			}
			if !strings.Contains(nb.Note, tt.note) || nb.Recommendation != "" || nb.Confidence != "low" {
				t.Errorf("notebook: note %q, recommendation %q, confidence %q; want a note with %q, none, low",
					nb.Note, nb.Recommendation, nb.Confidence, tt.note)
			}
			if r := byName["infer"]; r.Recommendation != "1g.10gb" || r.Note != "" {
				t.Errorf("infer affected: %+v", r)
			}
			for _, format := range Formats {
				var b strings.Builder
				if err := Write(&b, rows, format, w); err != nil {
					t.Fatalf("%s: %v", format, err)
				}
				for _, bad := range []string{"-9223372036854775808", "+-", "9223372036854775807"} {
					if strings.Contains(b.String(), bad) {
						t.Errorf("%s output holds %q:\n%s", format, bad, b.String())
					}
				}
			}
		})
	}
}

// TestWriteNonFiniteRow: rows made by a caller, not by Report, may carry
// non-finite figures; every format still prints, JSON with the figure
// left at 0 and a note naming it, never with a json error.
func TestWriteNonFiniteRow(t *testing.T) {
	t.Parallel()
	rows := []Row{{Namespace: "ns", Workload: "w", Current: "1 GPU", Recommendation: "1g.10gb",
		PeakMemoryBytes: math.NaN(), Coverage: math.Inf(1), FreedGPUHoursPerWeek: math.Inf(-1), Confidence: "high"}}
	w := mustWindow(t, "7d")
	for _, format := range Formats {
		var b strings.Builder
		if err := Write(&b, rows, format, w); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if format == "table" && strings.Contains(b.String(), "high") {
			t.Errorf("table rates a row with non-finite figures high:\n%s", b.String())
		}
	}
	var b strings.Builder
	if err := Write(&b, rows, "json", w); err != nil {
		t.Fatal(err)
	}
	var back []Row
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil || len(back) != 1 {
		t.Fatalf("json %v: %s", err, b.String())
	}
	got := back[0]
	if got.PeakMemoryBytes != 0 || got.Coverage != 0 || got.Recommendation != "" || got.Confidence != "low" ||
		!strings.Contains(got.Note, "peak_memory_bytes") || !strings.Contains(got.Note, "coverage") {
		t.Errorf("json row %+v: want the figures at 0, no recommendation, low, a note naming them", got)
	}
	if rows[0].Recommendation != "1g.10gb" {
		t.Error("Write changed the caller's rows")
	}
}

// TestConfidence: coverage that is unknown (NaN) or below the minimum is
// low, whatever else holds.
func TestConfidence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		row  Row
		want string
	}{
		{"full steady", Row{Coverage: 1, Pattern: "steady"}, "high"},
		{"full bursty", Row{Coverage: 1, Pattern: "bursty"}, "medium"},
		{"most of the window", Row{Coverage: 0.8, Pattern: "steady"}, "medium"},
		{"too little", Row{Coverage: 0.2, Pattern: "steady"}, "low"},
		{"coverage NaN", Row{Coverage: math.NaN(), Pattern: "steady"}, "low"},
		{"coverage -Inf", Row{Coverage: math.Inf(-1), Pattern: "steady"}, "low"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := confidence(tt.row, 0.5); got != tt.want {
				t.Errorf("confidence = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestSizeString: a size never prints as an overflowed or signed count.
func TestSizeString(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		size Size
		want string
	}{
		{Size{GPUs: 2}, "2 GPU"},
		{Size{Profile: "1g.10gb"}, "1g.10gb"},
		{Size{GPUs: 0}, "no GPU"},
		{Size{GPUs: -5}, "no GPU"},
	} {
		if got := tt.size.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.size, got, tt.want)
		}
	}
}

// TestTableEscapesControls: label values come from whatever the cluster
// named; a newline, tab, terminal escape (ESC, C1 CSI), bidi override or
// invalid UTF-8 in one is printed escaped, so a table row stays one line
// and the terminal runs no escape sequence. CSV quotes them its own way.
func TestTableEscapesControls(t *testing.T) {
	t.Parallel()
	rows := []Row{
		{Namespace: "ns\nfake-row", Workload: "w\x1b[31mred\x1b[0m", WorkloadType: "Job\tx", Model: "m\u009b2J",
			Current: "1 GPU", Recommendation: "keep", Confidence: "high", Pattern: "steady", Coverage: 1},
		{Namespace: "ns", Workload: "evil\u202etxt.exe", WorkloadType: "bad\xffutf8\x7f", Current: "1 GPU",
			Recommendation: "keep", Confidence: "high", Pattern: "steady", Coverage: 1},
	}
	var b strings.Builder
	if err := Write(&b, rows, "table", mustWindow(t, "1h")); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "\n"); n != len(rows)+1 {
		t.Errorf("%d lines, want a header and %d rows:\n%s", n, len(rows), out)
	}
	for i, r := range out {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r <= 0x9f) || r == '\u202e' || r == '\ufffd' {
			t.Errorf("raw control %U at byte %d in:\n%q", r, i, out)
		}
	}
	for _, want := range []string{`ns\nfake-row`, `w\x1b[31mred\x1b[0m`, `Job\tx`, `m\u009b2J`, `evil\u202etxt.exe`, `bad\xffutf8\x7f`} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %s:\n%s", want, out)
		}
	}
	var c strings.Builder
	if err := Write(&c, rows, "csv", mustWindow(t, "1h")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(c.String(), "\"ns\nfake-row\"") {
		t.Errorf("csv does not quote the newline:\n%s", c.String())
	}
}
