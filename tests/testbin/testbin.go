// Package testbin holds what the repository's tests share to run real
// programs: the repository root, the test tools `make tools` builds into
// tests/tools/bin, and a freshly built exporter binary. Only tests import it.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Root returns the repository's top directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Tool returns the path of a test tool: from PATH, else tests/tools/bin.
// A missing tool fails the test under CI, where .ci/run builds every tool,
// and skips it elsewhere.
func Tool(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	p := filepath.Join(Root(), "tests", "tools", "bin", name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	Missing(t, name+" not found on PATH or in tests/tools/bin; run `make tools`")
	return ""
}

// Missing skips the test for an absent prerequisite, or fails it under CI,
// where every prerequisite must be there.
func Missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and %s", why)
	}
	t.Skip(why)
}

// BuildExporter builds cmd/gpu-exporter into dir and returns its path.
func BuildExporter(dir string) (string, error) {
	bin := filepath.Join(dir, "gpu-exporter")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/gpu-exporter")
	cmd.Dir = Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/gpu-exporter: %w\n%s", err, out)
	}
	return bin, nil
}
