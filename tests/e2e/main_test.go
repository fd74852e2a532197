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
	"testing"

	"github.com/gpu-exporter/gpu-exporter/tests/testbin"
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
	exporterBin, buildErr = testbin.BuildExporter(dir)
	return m.Run()
}

// tool finds a test tool (testbin.Tool).
func tool(t *testing.T, name string) string { t.Helper(); return testbin.Tool(t, name) }

// repoRoot is the repository root.
func repoRoot() string { return testbin.Root() }

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
