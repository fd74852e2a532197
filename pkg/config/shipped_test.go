package config

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// commentedRow is a counters-file row dcgm-exporter ships commented out
// ("# DCGM_FI_DEV_POWER_VIOLATION, counter, …"), for users to enable.
var commentedRow = regexp.MustCompile(`^#\s*((DCGM|dcgm)_[A-Za-z0-9_]+\s*,.*)$`)

// shippedRows returns a shipped counters file with its commented-out rows
// enabled, so that every row a user may turn on is loaded.
func shippedRows(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if m := commentedRow.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			line = m[1]
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// notExportedInGuide returns the names the migration guide's "Not
// exported" bullet lists in backquotes.
func notExportedInGuide(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "migrating-from-dcgm-exporter.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "- **Not exported:**")
	if start < 0 {
		t.Fatal(`the migration guide has no "- **Not exported:**" bullet`)
	}
	end := strings.Index(doc[start+1:], "\n- ")
	if end < 0 {
		t.Fatal("the Not exported bullet does not end")
	}
	var names []string
	for _, m := range regexp.MustCompile("`([A-Za-z0-9_]+)`").FindAllStringSubmatch(doc[start:start+1+end], -1) {
		names = append(names, strings.ToUpper(m[1]))
	}
	return names
}

// TestGuideListsEveryShippedRowSkipped loads every counters file
// dcgm-exporter ships (testdata/dcgm-exporter, copied from its tag
// 4.5.3-4.8.2, commented rows enabled) and ties the migration guide's list
// of unexported rows to the loader: each row the loader skips is named in
// the guide, and each name the guide lists is skipped by some shipped file.
func TestGuideListsEveryShippedRowSkipped(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	files, err := filepath.Glob(filepath.Join("testdata", "dcgm-exporter", "*.csv"))
	if err != nil || len(files) != 3 {
		t.Fatalf("want dcgm-exporter's three shipped counters files, got %v (%v)", files, err)
	}
	skipped := map[string]string{}
	for _, path := range files {
		c, err := ParseCounters(path, strings.NewReader(shippedRows(t, path)), cat)
		if err != nil {
			t.Fatalf("%s does not load: %v", path, err)
		}
		for _, s := range c.Skipped {
			skipped[strings.ToUpper(s.Name)] = s.Where
		}
	}
	guide := notExportedInGuide(t)
	for name, where := range skipped {
		if !slices.Contains(guide, name) {
			t.Errorf("%s (%s) is skipped by the loader but the guide's Not exported list does not name it", name, where)
		}
	}
	for _, name := range guide {
		if _, ok := skipped[name]; !ok {
			t.Errorf("the guide says %s is not exported, but no shipped counters file row naming it is skipped", name)
		}
	}
}
