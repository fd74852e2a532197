// Package e2e runs the built exporter on simulator scenarios under a real
// Prometheus (with the chart's relabelling, the shipped recording rules and
// alerts), a real Alertmanager and a fake kube-state-metrics, and checks
// what users see: pod labels, every dashboard query and recording rule
// returning data, and the key alerts reaching an Alertmanager webhook.
package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// exporterBin is the exporter built by TestMain; empty in -short mode or
// when the build failed (buildErr says why).
var (
	exporterBin string
	buildErr    error
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testing.Short() {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "gpu-exporter-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	exporterBin, buildErr = buildExporter(dir)
	return m.Run()
}

func buildExporter(dir string) (string, error) {
	bin := filepath.Join(dir, "gpu-exporter")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/gpu-exporter/gpu-exporter/cmd/gpu-exporter")
	cmd.Dir = repoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the exporter: %w\n%s", err, out)
	}
	return bin, nil
}

// repoRoot is the repository root, two levels above this package.
func repoRoot() string {
	abs, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return filepath.Join("..", "..")
	}
	return abs
}

// tool finds a test tool on PATH or in tests/tools/bin. Without it the test
// fails under CI and is skipped elsewhere.
func tool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	p := filepath.Join(repoRoot(), "tests", "tools", "bin", name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	msg := name + " not found on PATH or in tests/tools/bin; run `make tools`"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func requireExporter(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return exporterBin
}
