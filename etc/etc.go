// Package etc embeds the files the exporter ships under etc/, so that the
// binary works without them on disk: the simulator scenarios (sim/*.yaml)
// that --source=sim, the demo, tests and benchmarks play.
package etc

import "embed"

// FS holds the embedded files, at their paths relative to etc/
// ("sim/demo.yaml").
//
//go:embed sim/*.yaml
var FS embed.FS
