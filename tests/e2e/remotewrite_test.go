package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/rules"
)

// remoteWriteMarker precedes, in docs/scaling.md, the remote_write example
// whose write_relabel_configs the Prometheus under test uses.
const remoteWriteMarker = "<!-- remote-write example: tests/e2e runs this block -->"

// remoteWriteExample returns the remote_write section of docs/scaling.md's
// example, decoded.
func remoteWriteExample(t *testing.T) map[string]any {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "scaling.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := bytes.Cut(doc, []byte(remoteWriteMarker))
	if !ok {
		t.Fatalf("docs/scaling.md has no %q", remoteWriteMarker)
	}
	_, block, ok := bytes.Cut(after, []byte("```yaml\n"))
	if !ok {
		t.Fatal("docs/scaling.md: no ```yaml block after the remote-write marker")
	}
	block, _, ok = bytes.Cut(block, []byte("```"))
	if !ok {
		t.Fatal("docs/scaling.md: unterminated remote-write block")
	}
	var cfg struct {
		RemoteWrite []map[string]any `yaml:"remote_write"`
	}
	if err := yaml.Unmarshal(block, &cfg); err != nil || len(cfg.RemoteWrite) != 1 {
		t.Fatalf("docs/scaling.md remote-write example: want one remote_write entry (%v)", err)
	}
	return cfg.RemoteWrite[0]
}

// startReceiver starts a second Prometheus that accepts remote write, as
// long-term storage would, and returns the remote_write section that makes
// the Prometheus under test send to it through the documented relabelling.
func startReceiver(t *testing.T, s *stack, dir, promBin string) string {
	t.Helper()
	rw := remoteWriteExample(t)
	addr := freeAddr(t)
	writeFile(t, filepath.Join(dir, "receiver.yml"), []byte("global: {}\n"))
	p := startProcess(t, s, "prometheus (remote-write receiver)", dir, promBin,
		"--config.file=receiver.yml",
		"--storage.tsdb.path="+filepath.Join(dir, "receiver-data"),
		"--web.listen-address="+addr,
		"--web.enable-remote-write-receiver")
	s.receiver = "http://" + addr
	waitHTTP(t, p, s.receiver+"/-/ready", 60*time.Second)

	rw["url"] = s.receiver + "/api/v1/write"
	rw["queue_config"] = map[string]any{"batch_send_deadline": "1s"}
	out, err := yaml.Marshal(map[string]any{"remote_write": []any{rw}})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// testRemoteWrite: long-term storage receives the recording rules and the
// few raw families the doc keeps, nothing else of gpu-exporter's or of its
// rules, all of the other jobs' series, and a fraction of the scraped
// series.
func testRemoteWrite(t *testing.T, s *stack) {
	recv := &stack{prom: s.receiver}
	rec, err := rules.Load(rules.RecordingFile)
	if err != nil {
		t.Fatal(err)
	}
	keep := keptNames(t)

	poll.Problems(t, 30*time.Second, time.Second, func() []string {
		var wrong []string
		for _, r := range rec.Rules() {
			got, err := recv.query(`count(` + r.Record + `)`)
			if err != nil {
				return []string{err.Error()}
			}
			switch kept := keep.MatchString(r.Record); {
			case kept && len(got) == 0:
				wrong = append(wrong, "remote storage has no "+r.Record)
			case !kept && len(got) != 0:
				wrong = append(wrong, "remote storage holds "+r.Record+", which the example drops")
			}
		}
		for _, q := range []string{`count(kube_pod_status_phase)`, `count(gpu_info)`, `count(up{job="gpu-exporter"})`} {
			src, err1 := s.query(q)
			dst, err2 := recv.query(q)
			switch {
			case err1 != nil || err2 != nil:
				wrong = append(wrong, fmt.Sprint(err1, err2))
			case len(src) != 1 || len(dst) != 1 || src[0].value != dst[0].value:
				wrong = append(wrong, fmt.Sprintf("%s: %v scraped, %v in remote storage", q, src, dst))
			}
		}
		return wrong
	})

	t.Run("raw series dropped", func(t *testing.T) {
		names, err := recv.query(`group by (__name__) ({job="gpu-exporter"} or {__name__=~"[a-z_]+:gpu_.+"})`)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if name := n.labels["__name__"]; !keep.MatchString(name) {
				t.Errorf("remote storage holds %s, which the example drops", name)
			}
		}
		for _, name := range []string{"gpu_utilization_ratio", "gpu_clock_event_active", "go_goroutines"} {
			if r, _ := recv.query(`count(` + name + `)`); len(r) != 0 {
				t.Errorf("remote storage holds %s", name)
			}
		}
	})

	t.Run("labels", func(t *testing.T) {
		r, err := recv.query(`count by (cluster) (namespace_pod:gpu_utilization_ratio:avg)`)
		if err != nil || len(r) != 1 || r[0].labels["cluster"] != "e2e" {
			t.Errorf("remote-written series without the external cluster label: %v %v", r, err)
		}
		names, err := recv.labelNames()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if strings.HasPrefix(n, "__tmp") {
				t.Errorf("the relabelling's temporary label %s reached remote storage", n)
			}
		}
	})

	t.Run("reduction", func(t *testing.T) {
		scraped, err := s.query(`sum(scrape_samples_post_metric_relabeling{job="gpu-exporter"})`)
		if err != nil || len(scraped) != 1 {
			t.Fatalf("scraped: %v %v", scraped, err)
		}
		stored, err := recv.query(`count({job="gpu-exporter"} or {__name__=~"[a-z_]+:gpu_.+"})`)
		if err != nil || len(stored) != 1 {
			t.Fatalf("stored: %v %v", stored, err)
		}
		ratio := stored[0].value / scraped[0].value
		t.Logf("gpu-exporter: %g series scraped, %g in remote storage (recording rules and kept families): %.0f %%",
			scraped[0].value, stored[0].value, 100*ratio)
		// docs/scaling.md promises less than 30 %.
		if ratio >= 0.30 {
			t.Errorf("remote storage holds %.0f %% of the scraped series; docs/scaling.md promises less than 30 %%", 100*ratio)
		}
	})
}

// keptNames compiles the doc's keep regex the way relabelling anchors it.
func keptNames(t *testing.T) *regexp.Regexp {
	t.Helper()
	rw := remoteWriteExample(t)
	cfgs, _ := rw["write_relabel_configs"].([]any)
	for _, c := range cfgs {
		m, _ := c.(map[string]any)
		if m["target_label"] == "__tmp_gpu_keep" {
			re, err := regexp.Compile("^(?:" + fmt.Sprint(m["regex"]) + ")$")
			if err != nil {
				t.Fatal(err)
			}
			return re
		}
	}
	t.Fatal("the remote-write example has no rule setting __tmp_gpu_keep")
	return nil
}

// labelNames lists every label name the Prometheus holds.
func (s *stack) labelNames() ([]string, error) {
	r, err := s.query(`count by (__name__) ({__name__=~".+"})`)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	for _, smp := range r {
		series, err := s.seriesLabels(smp.labels["__name__"])
		if err != nil {
			return nil, err
		}
		for _, l := range series {
			for k := range l {
				if !seen[k] {
					seen[k] = true
					names = append(names, k)
				}
			}
		}
	}
	return names, nil
}
