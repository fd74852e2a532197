package deploy

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// ruleFile tells a Prometheus rule file (top-level groups:) from other
// YAML under rules/, such as promtool unit tests. `make chart-sync` copies
// the same set (grep -l '^groups:').
var ruleFile = regexp.MustCompile(`(?m)^groups:`)

// TestChartCopiesMatchSources fails while the chart's copies in files/
// differ from rules/ and dashboards/: Helm reads only files inside the
// chart, so `make chart-sync` copies them there. It checks the sources
// that exist; none yet is fine.
func TestChartCopiesMatchSources(t *testing.T) {
	t.Parallel()
	sets := []struct {
		src, pattern, dst string
		keep              func([]byte) bool
	}{
		{"rules", "*.yaml", "files/rules", ruleFile.Match},
		{"dashboards", "*.json", "files/dashboards", func([]byte) bool { return true }},
		{"dashboards/exported_namespace", "*.json", "files/dashboards/exported_namespace", func([]byte) bool { return true }},
	}
	for _, s := range sets {
		t.Run(s.src, func(t *testing.T) {
			t.Parallel()
			want := map[string][]byte{}
			srcFiles, _ := filepath.Glob(filepath.Join(repoRoot, s.src, s.pattern))
			for _, f := range srcFiles {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if s.keep(data) {
					want[filepath.Base(f)] = data
				}
			}
			got := map[string][]byte{}
			copies, _ := filepath.Glob(filepath.Join(chartDir, s.dst, s.pattern))
			for _, f := range copies {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				got[filepath.Base(f)] = data
			}
			for name, data := range want {
				c, ok := got[name]
				switch {
				case !ok:
					t.Errorf("%s/%s is not in the chart (%s): run `make chart-sync`", s.src, name, s.dst)
				case !bytes.Equal(c, data):
					t.Errorf("the chart's %s/%s differs from %s/%s: run `make chart-sync`", s.dst, name, s.src, name)
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("the chart's %s/%s has no source %s/%s: run `make chart-sync`", s.dst, name, s.src, name)
				}
			}
		})
	}
}
