package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// TestMetricsDoc keeps docs/metrics.md equal to what the catalog generates
// (make docs, or -update, rewrites it) and checks that it names every field
// under both namings.
func TestMetricsDoc(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	var b bytes.Buffer
	if err := exposition.WriteMetricsDoc(&b, cat); err != nil {
		t.Fatal(err)
	}
	compareGolden(t, filepath.Join("..", "..", "docs", "metrics.md"), b.Bytes())
	for _, f := range append(cat.All(), cat.Labels()...) {
		for _, name := range []string{f.Name, f.DCGMName} {
			if name != "" && !strings.Contains(b.String(), "`"+name+"`") {
				t.Errorf("metrics doc lacks %s", name)
			}
		}
	}
	if _, err := os.Stat(filepath.Join("..", "..", "docs", "migrating-from-dcgm-exporter.md")); err != nil {
		t.Errorf("metrics doc links the migration guide: %v", err)
	}
}

// TestRefusalsDocRows: in docs/operations.md's refusal tables a row with
// an empty flag cell continues the flag above it, so its message must name
// that flag; a row under the wrong flag sends the reader to the wrong
// flag.
func TestRefusalsDocRows(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	flag := "" // the flag of the row, given or continued; "" outside a flag's rows
	for i, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if !strings.HasPrefix(line, "| ") || len(cells) != 3 {
			flag = ""
			continue
		}
		if first := strings.TrimSpace(cells[0]); first != "" {
			flag = ""
			// only a cell naming one flag alone: `--name`
			if name, ok := strings.CutPrefix(first, "`--"); ok && strings.Count(first, "`") == 2 && strings.HasSuffix(name, "`") {
				flag = "--" + strings.TrimSuffix(name, "`")
			}
		}
		if flag != "" && !strings.Contains(cells[2], flag) {
			t.Errorf("docs/operations.md:%d: a row of %s whose message does not name it: %s", i+1, flag, strings.TrimSpace(cells[2]))
		}
	}
}
