package e2e

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// simTarget is an exporter on a simulator scenario and the target labels
// Prometheus scrapes it with.
type simTarget struct {
	scenario string
	args     []string
	labels   map[string]string
}

// startSimPrometheus starts an exporter per target (collecting every
// second) and a real Prometheus that scrapes them every second under job
// gpu-exporter and evaluates the given rule files every second.
func startSimPrometheus(t *testing.T, targets []simTarget, ruleFiles map[string][]byte) *stack {
	t.Helper()
	exporter := requireExporter(t)
	promBin := tool(t, "prometheus")
	dir := t.TempDir()
	s := &stack{started: time.Now(), dir: dir, exporter: exporter}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range s.procs {
				t.Logf("===== %s output =====\n%s", p.name, p.out.String())
			}
		}
	})
	var statics []any
	for i, tg := range targets {
		addr := freeAddr(t)
		args := append([]string{"--source=sim", "--sim.scenario=" + tg.scenario,
			"--web.listen-address=" + addr, "--collect.interval=1s"}, tg.args...)
		p := startProcess(t, s, "exporter "+tg.scenario+" "+strings.Join(tg.args, " "), dir, exporter, args...)
		waitHTTP(t, p, "http://"+addr+"/readyz", 30*time.Second)
		labels := map[string]string{"target": string(rune('a' + i))}
		for k, v := range tg.labels {
			labels[k] = v
		}
		statics = append(statics, map[string]any{"targets": []string{addr}, "labels": labels})
	}
	var names []string
	for name, data := range ruleFiles {
		writeFile(t, filepath.Join(dir, name), data)
		names = append(names, name)
	}
	sort.Strings(names)
	cfg := map[string]any{
		"global": map[string]any{"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
		"scrape_configs": []any{map[string]any{
			"job_name":       "gpu-exporter",
			"static_configs": statics,
		}},
	}
	if len(names) > 0 {
		cfg["rule_files"] = names
	}
	startPrometheus(t, s, dir, promBin, cfg)
	return s
}

// startPrometheus writes cfg as dir/prometheus.yml, starts promBin on it
// with its data in dir, and waits until it is ready; s.prom is its URL.
func startPrometheus(t *testing.T, s *stack, dir, promBin string, cfg map[string]any) {
	t.Helper()
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "prometheus.yml"), data)
	promAddr := freeAddr(t)
	promProc := startProcess(t, s, "prometheus", dir, promBin, "--config.file=prometheus.yml",
		"--storage.tsdb.path="+filepath.Join(dir, "prom-data"), "--web.listen-address="+promAddr)
	s.prom = "http://" + promAddr
	waitHTTP(t, promProc, s.prom+"/-/ready", 60*time.Second)
}
