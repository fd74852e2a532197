// Command generate renders rules/alerts.yaml from rules/alerts.src.yaml
// (and recording.yaml from recording.src.yaml) with the Helm chart's
// default prometheusRule values, and writes the chart's helper that fills
// ${gpuLabels} and the XID tiers' placeholders (rules.ChartHelperFile):
//
//	go run ./rules/generate
//
// `make rules` runs it and copies the rules into the chart. The output is
// committed; rules' tests fail when it differs from what the source renders.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpu-exporter/gpu-exporter/rules"
)

func main() {
	dir := flag.String("dir", "rules", "Directory holding the rule source; the rendered file is written there.")
	values := flag.String("values", "deployment/helm/gpu-exporter/values.yaml", "Helm values file whose prometheusRule section holds the defaults.")
	chart := flag.String("chart", "deployment/helm/gpu-exporter", "Helm chart directory that gets the generated rules.ChartHelperFile.")
	flag.Parse()
	if err := run(*dir, *values, *chart); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run(dir, valuesPath, chart string) error {
	values, err := os.ReadFile(valuesPath) //nolint:gosec // G304: the values file the developer names with -values
	if err != nil {
		return err
	}
	for _, s := range rules.Sources {
		src, err := os.ReadFile(filepath.Join(dir, s.Source)) //nolint:gosec // G304: the rule source the developer names with -dir
		if err != nil {
			return err
		}
		out, err := rules.GenerateFile(s.Source, src, values)
		if err != nil {
			return fmt.Errorf("%s: %w", valuesPath, err)
		}
		path := filepath.Join(dir, s.Out)
		if err := os.WriteFile(path, out, 0o644); err != nil { //nolint:gosec // G306: committed, world-readable rule file
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	path := filepath.Join(chart, rules.ChartHelperFile)
	if err := os.WriteFile(path, rules.ChartHelper(), 0o644); err != nil { //nolint:gosec // G306: committed chart template
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
