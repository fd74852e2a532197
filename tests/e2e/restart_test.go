package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/rules"
)

// labelledNode runs the time-slicing scenario with pod_uid and label_team
// on its holders (podLabelRelabel): every GPU is shared or held, and each
// holder's copy of a GPU's series differs in those labels too.
const labelledNode = "gpu-node-ts-labels"

// restartedNodes have their exporter restarted mid-run. Only the labelled
// node: the simulator starts its scenario again on a restart, so a
// restarted demo node loses its XID (it comes at 1m) for reasons of the
// simulator's, and right-sizing's current allocation reads it. The
// time-slicing scenario's row-remap failure on GPU 2 is the hardware alert
// that must stay firing across the restart.
var restartedNodes = []string{labelledNode}

// promAlert is one alert of Prometheus' /api/v1/alerts.
type promAlert struct {
	Labels   map[string]string `json:"labels"`
	State    string            `json:"state"`
	ActiveAt time.Time         `json:"activeAt"`
}

// key names an alert by its labels.
func (a promAlert) key() string {
	keys := make([]string, 0, len(a.Labels))
	for k, v := range a.Labels {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// testExporterRestart restarts the exporters of restartedNodes (stop, then
// start on the same address, as a DaemonSet rollout does) and checks
// what users see across it: every hardware alert firing before is firing
// after with the same activeAt (it did not resolve and start again), the
// GPU-level recordings of the labelled node's shared GPUs still return one
// series per GPU, and no rule fails to evaluate.
func testExporterRestart(t *testing.T, s *stack) {
	hardware := hardwareAlertNames(t)
	before := map[string]promAlert{}
	alerts, err := s.alerts()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alerts {
		if a.State == "firing" && hardware[a.Labels["alertname"]] && slices.Contains(restartedNodes, a.Labels["node"]) {
			before[a.key()] = a
		}
	}
	t.Logf("%d hardware alerts firing on the restarted nodes", len(before))
	if len(before) == 0 {
		t.Fatal("no hardware alert fires on the restarted nodes: the check would hold nothing (the time-slicing scenario's GPU 2 has a row-remap failure)")
	}

	for _, n := range restartedNodes {
		s.restartExporter(t, n)
	}
	restarted := time.Now()

	// Long enough for Prometheus to scrape the new processes and to
	// evaluate every rule several times.
	poll.Problems(t, 30*time.Second, time.Second, func() []string {
		var problems []string
		if time.Since(restarted) < 10*time.Second {
			problems = append(problems, "waiting 10s after the restart")
		}
		alerts, err := s.alerts()
		if err != nil {
			return append(problems, err.Error())
		}
		now := map[string]promAlert{}
		for _, a := range alerts {
			now[a.key()] = a
		}
		for k, a := range before {
			switch b, ok := now[k]; {
			case !ok || b.State != "firing":
				problems = append(problems, fmt.Sprintf("hardware alert %s resolved across the exporter restart", k))
			case !b.ActiveAt.Equal(a.ActiveAt):
				problems = append(problems, fmt.Sprintf("hardware alert %s started again at %s (was active since %s)", k, b.ActiveAt, a.ActiveAt))
			}
		}
		for q, want := range map[string]float64{
			`count(gpu:gpu_utilization_ratio:max{node="` + labelledNode + `"})`:                     4,
			`node:gpu_devices_allocated:count{node="` + labelledNode + `"}`:                         4,
			`sum(gpu_container:gpu_allocated:ratio{node="` + labelledNode + `"})`:                   4,
			`count(node:gpu_utilization_ratio:avg{node="` + labelledNode + `"})`:                    1,
			`count(gpu_utilization_ratio{node="` + labelledNode + `", gpu="0", pod_uid=~"uid-.+"})`: 3,
		} {
			r, err := s.query(q)
			switch {
			case err != nil:
				problems = append(problems, err.Error())
			case len(r) != 1 || r[0].value != want:
				problems = append(problems, fmt.Sprintf("%s = %v, want %g", q, r, want))
			}
		}
		bad, err := s.unhealthyRules()
		if err != nil {
			return append(problems, err.Error())
		}
		return append(problems, bad...)
	})
}

// hardwareAlertNames are the alerts of the hardware and fabric groups.
func hardwareAlertNames(t *testing.T) map[string]bool {
	t.Helper()
	f, err := rules.Load(rules.AlertsFile)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, g := range f.Groups {
		if g.Name != "gpu-exporter.hardware" && g.Name != "gpu-exporter.fabric" {
			continue
		}
		for _, r := range g.Rules {
			out[r.Alert] = true
		}
	}
	return out
}

// alerts returns Prometheus' active alerts.
func (s *stack) alerts() ([]promAlert, error) {
	var r struct {
		Data struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	err := s.getJSON("/api/v1/alerts", &r)
	return r.Data.Alerts, err
}

// unhealthyRules lists the rules whose last evaluation failed, with the
// error (a many-to-many match, for one).
func (s *stack) unhealthyRules() ([]string, error) {
	var r struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := s.getJSON("/api/v1/rules", &r); err != nil {
		return nil, err
	}
	var bad []string
	for _, g := range r.Data.Groups {
		for _, rule := range g.Rules {
			if rule.Health == "err" {
				bad = append(bad, fmt.Sprintf("rule %s fails: %s", rule.Name, rule.LastError))
			}
		}
	}
	return bad, nil
}

func (s *stack) getJSON(path string, v any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.prom+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	return nil
}
