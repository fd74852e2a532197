package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestHelpGolden pins --help and `doctor --help` byte for byte: flags, their
// order, defaults and help text are the interface (docs/operations.md lists
// them), and a refactor of where flags are declared must not move or
// change one unnoticed. `go test ./cmd/gpu-exporter -run TestHelpGolden
// -update` rewrites the files after a deliberate change.
func TestHelpGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"help.golden", []string{"--help"}},
		{"doctor-help.golden", []string{"doctor", "--help"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tc.args, noEnv, &stdout, &stderr, nil); code != 0 {
				t.Fatalf("%v: exit %d: %s", tc.args, code, stderr.String())
			}
			got := append(stdout.Bytes(), stderr.Bytes()...)
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, got, 0o600); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%v differs from %s; if the change is deliberate, run with -update and review the diff:\n%s", tc.args, path, got)
			}
		})
	}
}
