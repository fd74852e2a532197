// Command generate writes gpu-exporter's Grafana dashboards as JSON files:
//
//	go run ./dashboards/generate -out dashboards
//
// The files are committed; dashboards' tests fail when they differ from
// what the code renders.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpu-exporter/gpu-exporter/dashboards"
)

func main() {
	out := flag.String("out", "dashboards", "Directory to write the dashboard JSON files into.")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	for _, label := range dashboards.NamespaceLabels {
		o := dashboards.Options{NamespaceLabel: label}
		if err := os.MkdirAll(filepath.Join(dir, o.Dir()), 0o755); err != nil { //nolint:gosec // G301: committed source directory
			return fmt.Errorf("creating %s: %w", filepath.Join(dir, o.Dir()), err)
		}
		if err := write(dir, o); err != nil {
			return err
		}
	}
	return nil
}

func write(dir string, o dashboards.Options) error {
	for _, b := range dashboards.All() {
		data, err := dashboards.Render(b, o)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, o.Dir(), b.File)
		if err := os.WriteFile(path, data, 0o644); err != nil { //nolint:gosec // G306: committed, world-readable dashboard JSON
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}
