package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
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

// testRightsize runs `gpu-exporter rightsize`'s report on the stack's
// Prometheus. The 1h window reads the live simulator data, so its answers
// follow from the scenarios:
//   - research/notebook (demo GPU 5): a whole H100 held idle with 18,446
//     MiB in use; with 10% headroom that is 21.3 GB, over the 20 GB
//     profiles, so 3g.40gb;
//   - batch/embed (autoscaling GPU 2, time-sliced): the GPU at 60%, more
//     than the 4 of 7 slices of any profile: keep its GPU;
//   - inference/llm-server: pods on whole GPUs (up to 2), on a GPU share
//     and on a 3g.40gb instance; its busiest GPU at 90% of 2 GPUs: keep,
//     with the MIG size named as another size.
//
// The 7d window reads the backfilled week (backfill_test.go): the
// notebook held its GPU idle all week, but one hour a day it used 40 GiB,
// which no profile under the whole GPU fits with headroom: keep, bursty.
func testRightsize(t *testing.T, s *stack) {
	rec, err := rules.Load(rules.RecordingFile)
	if err != nil {
		t.Fatal(err)
	}
	var hourly []string
	for _, r := range rec.Rules() {
		if rightsizeWindow(r.Record) == "1h" {
			hourly = append(hourly, r.Record)
		}
	}
	// The live 1h figures sample a 1-minute grid: they appear at the first
	// minute boundary after the instantaneous recordings do.
	poll.Problems(t, 90*time.Second, time.Second, func() []string {
		var missing []string
		for _, r := range hourly {
			if res, err := s.query(r + `{namespace="research"}`); err != nil {
				missing = append(missing, err.Error())
			} else if len(res) == 0 {
				missing = append(missing, "recording rule "+r+" has no live data for research")
			}
		}
		return missing
	})

	p, err := rightsize.NewPrometheus(s.prom)
	if err != nil {
		t.Fatal(err)
	}
	report := func(window string) map[string]rightsize.Row {
		t.Helper()
		w, err := rightsize.WindowByName(window)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rows, err := rightsize.Report(ctx, p, rightsize.Options{Window: w, Headroom: 0.1, MinCoverage: 0.5})
		if err != nil {
			t.Fatalf("%s report: %v", window, err)
		}
		byName := map[string]rightsize.Row{}
		for _, r := range rows {
			byName[r.Namespace+"/"+r.Workload] = r
		}
		return byName
	}

	hour := report("1h")
	// Live data reaches the 1h figures from the stack's start; the
	// notebook's hour also holds the end of the backfilled history.
	elapsed := time.Since(s.started).Hours()
	type want struct{ current, rec, other string }
	for name, w := range map[string]want{
		"research/notebook":    {"1 GPU", "3g.40gb", ""},
		"batch/embed":          {"1 GPU", "keep", ""},
		"inference/llm-server": {"2 GPU", "keep", "3g.40gb"},
	} {
		r, ok := hour[name]
		if !ok {
			t.Errorf("1h: %s: no row in %v", name, hour)
			continue
		}
		other := strings.Join(r.OtherSizes, ",")
		if r.Current != w.current || r.Recommendation != w.rec || other != w.other || r.Model != "NVIDIA H100 80GB HBM3" {
			t.Errorf("1h: %s: current %q (others %q) recommendation %q model %q; want %q (%q) %q", name,
				r.Current, other, r.Recommendation, r.Model, w.current, w.other, w.rec)
		}
		if name == "research/notebook" {
			continue
		}
		// A few minutes of data in a 1h window: charged at most the time
		// the stack has run (plus the grid minute), for at most the six
		// GPUs the autoscaling node's pods hold between them (llm-server
		// alone holds about 4.9 GPU equivalents: GPUs 0, 1, 4 and 5, half
		// of GPU 2 and a 3g.40gb instance), and too little data for
		// confidence.
		if r.AllocatedGPUHours <= 0 || r.AllocatedGPUHours > 6*(elapsed+1.0/60) || r.Coverage <= 0 || r.Coverage > elapsed+1.0/60 || r.Confidence != "low" {
			t.Errorf("1h: %s: %.4f GPU-hours, coverage %.3f, confidence %s after %.3f h", name, r.AllocatedGPUHours, r.Coverage, r.Confidence, elapsed)
		}
	}
	// The notebook is idle all the time it holds its GPU. Its idle and
	// allocated hours come from two recordings that rule groups write
	// independently: at the first grid minute after the stack starts, one
	// may already have a sample and the other not yet, so idle may trail
	// allocated by that one minute of its one GPU (never in steady state).
	if nb := hour["research/notebook"]; nb.P95Activity != 0 || nb.IdleGPUHours <= 0 || nb.IdleGPUHours > nb.AllocatedGPUHours ||
		nb.AllocatedGPUHours-nb.IdleGPUHours > 1.0/60+1e-9 || nb.PeakMemoryBytes != historyBaseMiB*(1<<20) {
		t.Errorf("1h: research/notebook: p95 activity %v, idle %v of %v GPU-hours, peak memory %v; want 0, all (less at most the first grid minute), %d MiB",
			nb.P95Activity, nb.IdleGPUHours, nb.AllocatedGPUHours, nb.PeakMemoryBytes, historyBaseMiB)
	}

	// The command itself, as an operator runs it: the built binary's CSV.
	cmd := exec.Command(requireExporter(t), "rightsize", "--prometheus.url="+s.prom, "--window=1h", "--namespace=research", "--output=csv")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gpu-exporter rightsize: %v\n%s", err, out)
	}
	recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("gpu-exporter rightsize --output=csv: %v; want a header and the notebook's row:\n%s", err, out)
	}
	row := map[string]string{}
	for i, h := range recs[0] {
		row[h] = recs[1][i]
	}
	if row["namespace"] != "research" || row["workload"] != "notebook" || row["current"] != "1 GPU" || row["recommendation"] != "3g.40gb" || row["confidence"] != "low" {
		t.Errorf("gpu-exporter rightsize row %v; want research/notebook, 1 GPU -> 3g.40gb, low confidence", row)
	}

	week := report("7d")
	nb, ok := week["research/notebook"]
	switch {
	case !ok:
		t.Errorf("7d: no row for research/notebook in %v", week)
	case nb.Recommendation != "keep" || nb.Current != "1 GPU" || nb.Pattern != "bursty" || nb.Confidence != "medium":
		t.Errorf("7d: research/notebook: %s -> %s, %s, confidence %s; want 1 GPU -> keep, bursty, medium", nb.Current, nb.Recommendation, nb.Pattern, nb.Confidence)
	case nb.PeakMemoryBytes != historyPeakMiB*(1<<20) || nb.P95MemoryBytes != historyBaseMiB*(1<<20) || nb.P95Activity != 0:
		t.Errorf("7d: research/notebook: peak %v, p95 memory %v, p95 activity %v; want %d MiB, %d MiB, 0",
			nb.PeakMemoryBytes, nb.P95MemoryBytes, nb.P95Activity, historyPeakMiB, historyBaseMiB)
	case nb.AllocatedGPUHours < 166 || nb.AllocatedGPUHours > 168.5 || nb.IdleGPUHours < 166 || nb.Coverage < 0.98:
		// 168 hourly figures; the last hour step may fall between the
		// history's end and the first live figure.
		t.Errorf("7d: research/notebook: %.2f GPU-hours allocated, %.2f idle, coverage %.3f; want about 168, 168, 1",
			nb.AllocatedGPUHours, nb.IdleGPUHours, nb.Coverage)
	}
}
