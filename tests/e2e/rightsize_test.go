package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/rightsize"
	"github.com/gpu-exporter/gpu-exporter/rules"
)

// rightsizeWindow is the window ("1h", "1d", "7d") of a right-sizing
// recording, "" for any other rule.
func rightsizeWindow(record string) string {
	if !strings.Contains(record, "_hours:sum_") && !strings.Contains(record, ":max_") && !strings.Contains(record, ":p95_") {
		return ""
	}
	for _, w := range rightsize.Windows {
		if strings.HasSuffix(record, "_"+w.Name) {
			return w.Name
		}
	}
	return ""
}

// testRightsize: the 1h right-sizing recordings return data on the
// simulated nodes, the 1d and 7d ones are valid queries (they need an
// hour-aligned hour of 1h recordings; rules/tests/rightsize_long_test.yaml
// tests their arithmetic), and `gpu-exporter rightsize --window=1h`
// recommends what the scenarios imply:
//   - research/notebook (demo GPU 5): a whole H100 held idle with 18,446
//     MiB in use; with 10% headroom that is 21.3 GB, over the 20 GB
//     profiles, so 3g.40gb;
//   - batch/embed (autoscaling GPU 2, time-sliced): the GPU at 60%, so
//     more than the 4 of 7 slices of any profile: keep its GPU;
//   - inference/llm-server: pods on whole GPUs (up to 2), on a GPU share
//     and on a 3g.40gb instance; its busiest GPU at 90% of 2 GPUs: keep,
//     with the MIG size named as another size.
func testRightsize(t *testing.T, s *stack) {
	rec, err := rules.Load(rules.RecordingFile)
	if err != nil {
		t.Fatal(err)
	}
	var hourly, long []string
	for _, r := range rec.Rules() {
		switch rightsizeWindow(r.Record) {
		case "1h":
			hourly = append(hourly, r.Record)
		case "1d", "7d":
			long = append(long, r.Record)
		}
	}
	if len(hourly) == 0 || len(long) == 0 {
		t.Fatalf("right-sizing recordings: %d hourly, %d daily or weekly", len(hourly), len(long))
	}
	// The 1h figures sample a 1-minute grid: they appear at the first
	// minute boundary after the instantaneous recordings do.
	s.eventually(t, 90*time.Second, func() []string {
		var missing []string
		for _, r := range hourly {
			if res, err := s.query(r); err != nil {
				missing = append(missing, err.Error())
			} else if len(res) == 0 {
				missing = append(missing, "recording rule "+r+" returns no data")
			}
		}
		return missing
	})
	for _, r := range long {
		if _, err := s.query(r); err != nil {
			t.Errorf("%s: %v", r, err)
		}
	}

	p, err := rightsize.NewPrometheus(s.prom)
	if err != nil {
		t.Fatal(err)
	}
	w, err := rightsize.WindowByName("1h")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := rightsize.Report(ctx, p, rightsize.Options{Window: w, Headroom: 0.1, MinCoverage: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]rightsize.Row{}
	for _, r := range rows {
		byName[r.Namespace+"/"+r.Workload] = r
	}
	elapsed := time.Since(s.started).Hours()
	type want struct{ current, rec, other string }
	for name, w := range map[string]want{
		"research/notebook":    {"1 GPU", "3g.40gb", ""},
		"batch/embed":          {"1 GPU", "keep", ""},
		"inference/llm-server": {"2 GPU", "keep", "3g.40gb"},
	} {
		r, ok := byName[name]
		if !ok {
			t.Errorf("%s: no row in %+v", name, rows)
			continue
		}
		other := strings.Join(r.OtherSizes, ",")
		if r.Current != w.current || r.Recommendation != w.rec || other != w.other || r.Model != "NVIDIA H100 80GB HBM3" {
			t.Errorf("%s: current %q (others %q) recommendation %q model %q; want %q (%q) %q", name,
				r.Current, other, r.Recommendation, r.Model, w.current, w.other, w.rec)
		}
		// A few minutes of data in a 1h window: charged at most the time
		// the stack has run, and too little data for confidence.
		if r.AllocatedGPUHours <= 0 || r.AllocatedGPUHours > 3*(elapsed+1.0/60) || r.Coverage <= 0 || r.Coverage > elapsed+1.0/60 || r.Confidence != "low" {
			t.Errorf("%s: %.4f GPU-hours, coverage %.3f, confidence %s after %.3f h", name, r.AllocatedGPUHours, r.Coverage, r.Confidence, elapsed)
		}
	}
	if nb := byName["research/notebook"]; nb.P95Activity != 0 || nb.IdleGPUHours != nb.AllocatedGPUHours || nb.PeakMemoryBytes != 18446*(1<<20) {
		t.Errorf("research/notebook: p95 activity %v, idle %v of %v GPU-hours, peak memory %v; want 0, all, 18446 MiB",
			nb.P95Activity, nb.IdleGPUHours, nb.AllocatedGPUHours, nb.PeakMemoryBytes)
	}
}
