package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The right-sizing history: seven days of the hourly right-sizing figures
// (what the 1h recording group would have written) for the demo node's
// research/notebook, backfilled into Prometheus' storage before it starts,
// so the 1d and 7d recordings, their alert and `rightsize --window=7d`
// run on a real Prometheus. By construction the notebook held its whole
// H100 every hour, never used it, and kept 18,446 MiB in memory except
// for one hour a day at historyPeakMiB.
const (
	historyDays    = 7
	historyStep    = 5 * time.Minute // the spacing of the backfilled samples
	historyPeakMiB = 40960
	historyBaseMiB = 18446
)

// historyEnd is where the backfilled history stops: before the stack's
// first recordings, so history and live samples never meet.
func historyEnd(start time.Time) time.Time { return start.Add(-historyStep).Truncate(historyStep) }

// backfillHistory writes the right-sizing history ending before start as
// OpenMetrics and turns it into TSDB blocks in dataDir with promtool.
func backfillHistory(t *testing.T, promtool, dir, dataDir string, start time.Time) {
	t.Helper()
	end := historyEnd(start)
	begin := end.Add(-historyDays*24*time.Hour - time.Hour)
	notebook := `namespace="research",workload="notebook",workload_type="StatefulSet"`
	research := `namespace="research"`
	type family struct {
		name  string
		value func(ts time.Time) float64
	}
	peak := func(ts time.Time) float64 {
		if ts.UTC().Hour() == 12 {
			return historyPeakMiB * (1 << 20)
		}
		return historyBaseMiB * (1 << 20)
	}
	one := func(time.Time) float64 { return 1 }
	zero := func(time.Time) float64 { return 0 }
	base := func(time.Time) float64 { return historyBaseMiB * (1 << 20) }
	families := []family{
		{"gpu_allocated_hours:sum_1h", one},
		{"gpu_used_hours:sum_1h", zero},
		{"gpu_idle_hours:sum_1h", one},
		{"gpu_device_memory_used_bytes:max_1h", peak},
		{"gpu_device_memory_used_bytes:p95_1h", base},
		{"gpu_device_utilization_ratio:p95_1h", zero},
	}
	// One metric family per series name, samples in time order.
	var b strings.Builder
	for _, f := range families {
		for _, level := range []struct{ prefix, labels string }{{"namespace_workload:", notebook}, {"namespace:", research}} {
			name := level.prefix + f.name
			fmt.Fprintf(&b, "# TYPE %s gauge\n", name)
			for ts := begin; !ts.After(end); ts = ts.Add(historyStep) {
				fmt.Fprintf(&b, "%s{%s} %g %d\n", name, level.labels, f.value(ts), ts.Unix())
			}
		}
	}
	b.WriteString("# EOF\n")
	src := filepath.Join(dir, "history.om")
	writeFile(t, src, []byte(b.String()))
	out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", src, dataDir).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}
	if err := os.Remove(src); err != nil {
		t.Fatal(err)
	}
}
