package e2e

import (
	"encoding/json"
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

// The simulated nodes: the scenarios of etc/sim, each on its own node.
var testNodes = []node{
	{name: "gpu-node-demo", scenario: "demo"},      // hot GPU 4, idle GPU 5, XID 48 on GPU 7 at 1m
	{name: "gpu-node-mig", scenario: "mig"},        // MIG instances, one held and idle
	{name: "gpu-node-ts", scenario: "timeslicing"}, // GPUs shared by several pods
	{name: "gpu-node-faults", scenario: "faults"},  // PCIe health warning at 10s, GPU 4 lost at 25s; XID 48, double-bit ECC, memory health failure and GPU reset at 1m
	{name: "gpu-node-hpc", scenario: "hpc"},        // Slurm jobs through the job-mapping directory: GPU 2 shared by two jobs, GPU 3 held and idle
	{name: "gpu-node-hgx", scenario: "hgx"},        // NVLink fabric: GPU 3's link 7 counts CRC errors from 15s and goes down at 60s
	// Shared GPUs whose holders carry pod_uid and label_team; its exporter
	// restarts mid-run (restart_test.go).
	{name: labelledNode, scenario: "timeslicing", podLabels: true},
	autoscalingNode, // constant values for the autoscaling queries
}

// TestEndToEnd runs the whole chain once and checks it from the user's
// side. The subtests share the stack and run in order: the alerts need the
// scenarios' faults at 1m, and the dashboards' GPU-hour queries need a full
// minute of recorded data.
func TestEndToEnd(t *testing.T) {
	s := startStack(t, testNodes)

	t.Run("pod labels", func(t *testing.T) { testPodLabels(t, s) })
	t.Run("recording rules", func(t *testing.T) { testRecordingRules(t, s) })
	t.Run("alerts reach alertmanager", func(t *testing.T) { testAlerts(t, s) })
	t.Run("exporter restart", func(t *testing.T) { testExporterRestart(t, s) })
	t.Run("dashboard queries", func(t *testing.T) { testDashboards(t, s) })
	t.Run("autoscaling queries", func(t *testing.T) { testAutoscaling(t, s) })
	t.Run("remote write", func(t *testing.T) { testRemoteWrite(t, s) })
	t.Run("right-sizing", func(t *testing.T) { testRightsize(t, s) })
	t.Logf("end-to-end run took %s", time.Since(s.started).Round(time.Second))
}

// testPodLabels: with the chart's scrape config a held GPU carries its
// pod's labels and an unheld one none, never the exporter's own pod.
func testPodLabels(t *testing.T, s *stack) {
	type want struct {
		query string
		pods  []string // pod label of each series, "" for none
	}
	cases := map[string]want{
		"held GPU":              {`gpu_utilization_ratio{node="gpu-node-demo", gpu="5"}`, []string{"notebook-0"}},
		"unheld GPU":            {`gpu_utilization_ratio{node="gpu-node-demo", gpu="6"}`, []string{""}},
		"GPU shared by 3 pods":  {`gpu_utilization_ratio{node="gpu-node-ts", gpu="0"}`, []string{"shared-a", "shared-b", "shared-c"}},
		"held MIG instance":     {`gpu_graphics_engine_active_ratio{node="gpu-node-mig", gpu="1", gpu_instance="3"}`, []string{"dev-0"}},
		"unheld MIG instance":   {`gpu_graphics_engine_active_ratio{node="gpu-node-mig", gpu="1", gpu_instance="10"}`, []string{""}},
		"GPU facts":             {`gpu_info{node="gpu-node-demo", gpu="5"}`, []string{""}},
		"the exporter's target": {`up{job="gpu-exporter", node="gpu-node-demo"}`, []string{""}},

		// A GPU's link carries its holder: which job a bad link slows.
		"link of a held GPU": {`gpu_nvlink_crc_flit_errors_total{node="gpu-node-hgx", gpu="3", link="7"}`, []string{"llm-pretrain-0"}},
		"NVSwitch":           {`nvswitch_temperature_celsius{node="gpu-node-hgx", nvswitch="0"}`, []string{""}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			poll.Problems(t, 20*time.Second, time.Second, func() []string {
				r, err := s.query(c.query)
				if err != nil {
					return []string{err.Error()}
				}
				var pods []string
				for _, smp := range r {
					pods = append(pods, smp.labels["pod"])
					if smp.labels["pod"] == "" && (smp.labels["namespace"] != "" || smp.labels["container"] != "") {
						return []string{fmt.Sprintf("%s: namespace/container without pod: %v", c.query, smp.labels)}
					}
				}
				sort.Strings(pods)
				if strings.Join(pods, ",") != strings.Join(c.pods, ",") {
					return []string{fmt.Sprintf("%s: pod labels %q, want %q", c.query, pods, c.pods)}
				}
				return nil
			})
		})
	}
	t.Run("no series carries the exporter's pod", func(t *testing.T) {
		r, err := s.query(`count({job="gpu-exporter", pod=~"gpu-exporter-.*"}) or count({job="gpu-exporter", namespace="gpu-exporter"})`)
		if err != nil {
			t.Fatal(err)
		}
		if len(r) != 0 {
			t.Errorf("series with the exporter's own pod labels: %v", r)
		}
	})
}

// testRecordingRules: every recording rule returns data, and the shared-GPU
// and MIG arithmetic holds on real scenario data.
func testRecordingRules(t *testing.T, s *stack) {
	rec, err := rules.Load(rules.RecordingFile)
	if err != nil {
		t.Fatal(err)
	}
	poll.Problems(t, 30*time.Second, time.Second, func() []string {
		var missing []string
		for _, r := range rec.Rules() {
			if rightsizeWindow(r.Record) == "1h" {
				continue // from the first minute boundary on: testRightsize
			}
			res, err := s.query(r.Record)
			if err != nil {
				missing = append(missing, err.Error())
			} else if len(res) == 0 {
				missing = append(missing, "recording rule "+r.Record+" returns no data")
			}
		}
		return missing
	})

	values := map[string]float64{
		// Time-slicing: 4 GPUs, all held, shared 3, 2, 1 and 1 ways.
		`sum(gpu_container:gpu_allocated:ratio{node="gpu-node-ts"})`:                  4,
		`namespace_pod:gpu_allocated:sum{node="gpu-node-ts", pod="shared-a"}`:         1.0 / 3,
		`namespace_pod:gpu_allocated:sum{node="gpu-node-ts", pod="embed-0"}`:          0.5,
		`namespace_pod:gpu_allocated:sum{node="gpu-node-ts", pod="double-0"}`:         1,
		`node:gpu_devices:count{node="gpu-node-ts"}`:                                  4,
		`node:gpu_devices_allocated:count{node="gpu-node-ts"}`:                        4,
		`count(gpu:gpu_utilization_ratio:max{node="gpu-node-ts"})`:                    4,
		`node:gpu_devices:count{node="gpu-node-demo"}`:                                8,
		`node:gpu_devices_allocated:count{node="gpu-node-demo"}`:                      7,
		`node:gpu_info:count{node="gpu-node-mig"}`:                                    3,
		`node:gpu_devices:count{node="gpu-node-mig"}`:                                 12,
		`node:gpu_devices_allocated:count{node="gpu-node-mig"}`:                       8,
		`count(gpu:gpu_utilization_ratio:max{node="gpu-node-mig", gpu_instance!=""})`: 11,
		// Memory of shared GPUs is counted once: the pods' shares add up
		// to the GPUs' memory (every GPU of the node is held).
		`sum(namespace_pod:gpu_memory_used_bytes:sum{node="gpu-node-ts"}) / sum(gpu:gpu_memory_used_bytes:max{node="gpu-node-ts"})`: 1,
		// HPC: job labels from the simulated Slurm prolog's files; GPU 2
		// is shared by jobs 5001 and 5002 and counted once.
		`hpc_job:gpu_allocated:sum{hpc_job="4242", hpc_user="alice", hpc_partition="gpu"}`: 2,
		`hpc_job:gpu_allocated:sum{hpc_job="5001"}`:                                        0.5,
		`hpc_user:gpu_allocated:sum{hpc_user="carol"}`:                                     0.5,
		`count(gpu:gpu_utilization_ratio:max{node="gpu-node-hpc"})`:                        6,
	}
	poll.Problems(t, 20*time.Second, time.Second, func() []string {
		var wrong []string
		for q, want := range values {
			r, err := s.query(q)
			switch {
			case err != nil:
				wrong = append(wrong, err.Error())
			case len(r) != 1:
				wrong = append(wrong, fmt.Sprintf("%s: %d series, want 1", q, len(r)))
			case math.Abs(r[0].value-want) > 0.01*math.Max(1, math.Abs(want)):
				wrong = append(wrong, fmt.Sprintf("%s = %g, want %g", q, r[0].value, want))
			}
		}
		return wrong
	})
}

// alertWant is a subset of an alert's labels.
type alertWant map[string]string

func (w alertWant) matches(a amAlert) bool {
	for k, v := range w {
		if a.Labels[k] != v {
			return false
		}
	}
	return true
}

// testAlerts: the key alerts, with the shipped expressions and a short
// `for`, reach Alertmanager's webhook with the right labels.
func testAlerts(t *testing.T, s *stack) {
	wants := []alertWant{
		{"alertname": "GPUTemperatureHigh", "severity": "warning", "node": "gpu-node-demo", "gpu": "4"},
		{"alertname": "GPUThermalThrottling", "severity": "warning", "node": "gpu-node-demo", "gpu": "4", "reason": "sw_thermal"},
		{"alertname": "GPUXidErrorCritical", "severity": "critical", "node": "gpu-node-demo", "gpu": "7", "xid": "48"},
		{"alertname": "GPUXidErrorCritical", "severity": "critical", "node": "gpu-node-faults", "gpu": "1", "xid": "48"},
		{"alertname": "GPUEccDoubleBitErrors", "severity": "critical", "node": "gpu-node-faults", "gpu": "1"},
		// The time-slicing scenario's GPU 2 is out of spare rows from the
		// start; on the labelled node it is what the restart check holds.
		{"alertname": "GPURowRemapFailure", "severity": "critical", "node": labelledNode, "gpu": "2"},
		{"alertname": "GPUAllocatedButIdle", "severity": "warning", "node": "gpu-node-demo", "gpu": "5",
			"namespace": "research", "pod": "notebook-0", "container": "notebook"},
		{"alertname": "GPUAllocatedButIdle", "severity": "warning", "node": "gpu-node-mig", "gpu": "1",
			"gpu_instance": "3", "namespace": "ml", "pod": "dev-0"},
		{"alertname": "GPUPodPending", "severity": "warning", "namespace": "research", "pod": "sweep-7"},
		// A week of idle history (backfill_test.go).
		{"alertname": "GPUWorkloadMostlyIdle", "severity": "info", "namespace": "research", "workload": "notebook", "workload_type": "StatefulSet"},
		{"alertname": "GPUJobAllocatedButIdle", "severity": "warning", "node": "gpu-node-hpc", "gpu": "3",
			"hpc_job": "6001", "hpc_user": "dave", "hpc_partition": "interactive"},
		// Health: the faults scenario loses GPU 4 at 25s, GPU 3's PCIe
		// health watch warns from 10s, and at 1m GPU 1's memory watch fails
		// and the driver asks for a GPU reset.
		{"alertname": "GPULost", "severity": "critical", "node": "gpu-node-faults", "gpu": "4"},
		{"alertname": "GPUHealthWarning", "severity": "warning", "node": "gpu-node-faults", "gpu": "3", "subsystem": "pcie"},
		{"alertname": "GPUHealthFailure", "severity": "critical", "node": "gpu-node-faults", "gpu": "1", "subsystem": "memory"},
		{"alertname": "GPURecoveryActionRequired", "severity": "critical", "node": "gpu-node-faults", "gpu": "1", "action": "gpu_reset"},
		// The hgx scenario's degrading link: CRC errors rising from 15s,
		// down at 60s, its GPU's NVLink health watch failing.
		{"alertname": "GPUNVLinkErrorsRising", "severity": "warning", "node": "gpu-node-hgx", "gpu": "3", "link": "7", "counter": "crc_flit"},
		{"alertname": "GPUNVLinkDown", "severity": "critical", "node": "gpu-node-hgx", "gpu": "3", "link": "7"},
		{"alertname": "GPUHealthFailure", "severity": "critical", "node": "gpu-node-hgx", "gpu": "3", "subsystem": "nvlink"},
	}
	// The scenarios' faults come at 1m; allow for collection, scrape,
	// evaluation and notification delays after that.
	poll.Problems(t, 150*time.Second, time.Second, func() []string {
		got := s.webhook.received()
		var missing []string
		for _, w := range wants {
			found := false
			for _, a := range got {
				if w.matches(a) {
					found = true
					break
				}
			}
			if !found {
				missing = append(missing, fmt.Sprintf("alert %v did not reach the webhook", map[string]string(w)))
			}
		}
		return missing
	})

	for _, a := range s.webhook.received() {
		l := a.Labels
		switch {
		case l["severity"] == "":
			t.Errorf("alert without severity: %v", l)
		case l["cluster"] != "e2e":
			t.Errorf("alert without the external cluster label: %v", l)
		case a.Annotations["runbook_url"] == "" || a.Annotations["summary"] == "":
			t.Errorf("alert without summary or runbook_url: %v %v", l, a.Annotations)
		case strings.HasPrefix(l["pod"], "gpu-exporter-"):
			t.Errorf("alert labelled with the exporter's own pod: %v", l)
		case l["alertname"] == "GPUAllocatedButIdle" && l["pod"] == "":
			t.Errorf("idle alert for a GPU nobody holds: %v", l)
		case l["alertname"] == "GPUJobAllocatedButIdle" && (l["node"] != "gpu-node-hpc" || l["gpu"] != "3"):
			t.Errorf("idle-job alert for a GPU no idle job holds: %v", l)
		case l["alertname"] == "GPUMemoryNearlyFull":
			t.Errorf("GPUMemoryNearlyFull is off by default (pre-allocating frameworks), yet it fired: %v", l)
		case l["alertname"] == "GPUTemperatureHigh" && (l["node"] != "gpu-node-demo" || l["gpu"] != "4"):
			t.Errorf("temperature alert for a GPU that is not hot: %v", l)
		case l["alertname"] == "GPUXidErrorCritical" && l["xid"] != "79" && l["xid"] != "48":
			t.Errorf("critical XID alert for an XID no scenario raised: %v", l)
		case l["alertname"] == "GPULost" && (l["node"] != "gpu-node-faults" || l["gpu"] != "4"):
			t.Errorf("lost-GPU alert for a GPU that is present: %v", l)
		case (l["alertname"] == "GPUHealthWarning" || l["alertname"] == "GPUHealthFailure") && l["node"] != "gpu-node-faults" &&
			(l["node"] != "gpu-node-hgx" || l["gpu"] != "3" || l["subsystem"] != "nvlink"):
			t.Errorf("health alert on a node whose health watches pass: %v", l)
		case (l["alertname"] == "GPUNVLinkDown" || l["alertname"] == "GPUNVLinkErrorsRising") &&
			(l["node"] != "gpu-node-hgx" || l["gpu"] != "3" || l["link"] != "7"):
			t.Errorf("NVLink alert for a healthy link: %v", l)
		case l["alertname"] == "GPUNVSwitchFatalError" || l["alertname"] == "GPUFabricManagerNotReady":
			t.Errorf("fabric alert no scenario raises: %v", l)
		case l["alertname"] == "GPURecoveryActionRequired" && (l["node"] != "gpu-node-faults" || l["gpu"] != "1"):
			t.Errorf("recovery-action alert for a GPU that needs none: %v", l)
		}
	}
}

// Values for Grafana's variables when the dashboards' queries are run
// directly: every selectable variable at "All", fixed windows for the
// built-in interval variables.
var grafanaVars = strings.NewReplacer(
	"$__rate_interval", "30s",
	"$__range_s", "300",
	"$__range", "5m",
	"$__interval", "5s",
	"$cluster", ".*",
	"$node", ".*",
	"$gpu", ".*",
	"$namespace", ".*",
	"$pod", ".*",
	"$hpc_user", ".*",
	"$price", "0.15", // the Price per kWh variable's default
)

type dashboardQuery struct {
	board, panel, kind, expr string
	instant                  bool
}

func (q dashboardQuery) String() string {
	return fmt.Sprintf("%s / %s (%s): %s", q.board, q.panel, q.kind, q.expr)
}

// testDashboards: every query of every committed dashboard returns data.
func testDashboards(t *testing.T, s *stack) {
	queries := dashboardQueries(t)
	if len(queries) < 50 {
		t.Fatalf("only %d dashboard queries found", len(queries))
	}
	poll.Problems(t, 60*time.Second, time.Second, func() []string {
		var empty []string
		for _, q := range queries {
			expr := grafanaVars.Replace(q.expr)
			var r []sample
			var err error
			if q.instant {
				r, err = s.query(expr)
			} else {
				r, err = s.queryRange(expr, time.Minute, 5*time.Second)
			}
			if err != nil {
				empty = append(empty, fmt.Sprintf("%v: %v", q, err))
			} else if len(r) == 0 {
				empty = append(empty, fmt.Sprintf("no data: %v", q))
			}
		}
		return empty
	})
	t.Logf("%d dashboard queries return data", len(queries))
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*([a-z_]+)\)$`)

// dashboardQueries reads every panel target and template variable query
// of dashboards/*.json. A variable's label_values(selector, label) becomes
// a query for the label's values; cluster is left out, as this Prometheus
// has no cluster label (it is an external label).
func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(), "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards found: %v", err)
	}
	type target struct {
		Expr    string `json:"expr"`
		Instant bool   `json:"instant"`
	}
	type panel struct {
		Type    string   `json:"type"`
		Title   string   `json:"title"`
		Targets []target `json:"targets"`
		Panels  []panel  `json:"panels"`
	}
	var d struct {
		Title      string  `json:"title"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	var out []dashboardQuery
	var walk func(board string, ps []panel)
	walk = func(board string, ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out = append(out, dashboardQuery{board: board, panel: p.Title, kind: p.Type, expr: tg.Expr, instant: tg.Instant})
			}
			walk(board, p.Panels)
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d.Panels, d.Templating.List = nil, nil
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		walk(d.Title, d.Panels)
		for _, v := range d.Templating.List {
			q, ok := v.Query.(string)
			if v.Type != "query" || !ok || v.Name == "cluster" {
				continue
			}
			m := labelValues.FindStringSubmatch(q)
			if m == nil {
				t.Errorf("%s: variable %s: query %q is not label_values(selector, label)", d.Title, v.Name, q)
				continue
			}
			out = append(out, dashboardQuery{board: d.Title, panel: "variable " + v.Name, kind: "variable",
				expr: "group by (" + m[2] + ") (" + m[1] + ")", instant: true})
		}
	}
	return out
}
