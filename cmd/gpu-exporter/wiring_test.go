package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxWiringLines bounds this package's non-test code, flag declarations
// included: it composes the packages' options and constructors and runs
// them (docs/architecture.md). A flag, a check or a construction belongs
// in the package it configures, in its options.go; this package was 1,035
// lines before they moved there.
const maxWiringLines = 600

func TestMainIsWiring(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		total += bytes.Count(b, []byte("\n"))
	}
	if total == 0 || total > maxWiringLines {
		t.Errorf("cmd/gpu-exporter has %d lines of non-test Go, want 1..%d: move flags, checks and construction into the package they configure (its options.go)", total, maxWiringLines)
	}
}
