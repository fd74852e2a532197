// Package scaling measures what the exporter costs a Prometheus: it runs
// the built binary on the shipped simulator scenarios, in both namings,
// reads /metrics with the exposition parser and counts series per GPU and
// per node and labels per series. docs/scaling.md's table is this
// measurement; the test fails while the doc is out of date (-update
// rewrites it), and enforces the label budget on every shipped scenario.
package scaling

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/tests/testbin"
)

var update = flag.Bool("update", false, "rewrite docs/scaling.md's measured table")

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
	dir, err := os.MkdirTemp("", "gpu-exporter-scaling-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "scaling:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	exporterBin, buildErr = testbin.BuildExporter(dir)
	return m.Run()
}

// repoRoot is the repository root.
func repoRoot() string { return testbin.Root() }

func requireExporter(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the exporter binary; skipped in -short mode")
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return exporterBin
}
