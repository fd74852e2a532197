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
