package rightsize

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/pflag"
)

// Summary is what `gpu-exporter rightsize` does, for the exporter's --help.
const Summary = "read GPU usage recorded in Prometheus and recommend, per workload, the GPU or MIG size it fits (docs/rightsizing.md)"

// Main runs `gpu-exporter rightsize` with args (the flags after the
// subcommand) and returns its exit code: 0, 1 when Prometheus could not
// answer, 2 for a wrong flag. It prints, per workload, its current GPU or MIG size, the size
// its recorded usage fits, and the GPU-hours the change frees
// MinTimeout is the shortest --timeout accepted.
const MinTimeout = 100 * time.Millisecond

// (docs/rightsizing.md).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("gpu-exporter rightsize", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	promURL := fs.String("prometheus.url", "", "Prometheus base URL, e.g. http://prometheus:9090 (required).")
	window := fs.String("window", "7d", "Window of the right-sizing recordings: 1h, 1d or 7d.")
	namespace := fs.String("namespace", "", "Only this namespace (default: all).")
	nsLabel := fs.String("namespace-label", "namespace", "Label holding the pod's namespace on GPU series (the chart's monitoring.namespaceLabel).")
	output := fs.String("output", "table", "Output format: table, json or csv.")
	headroom := fs.Float64("headroom", 0.1, "Memory kept free over the observed peak, as a fraction.")
	minCoverage := fs.Float64("min-coverage", 0.5, "Share of the window a workload must have been recorded in for more than low confidence.")
	timeout := fs.Duration("timeout", 30*time.Second, "Timeout of the whole report: every query, and reading every reply, within one deadline.")
	maxBytes := fs.Int64("prometheus.max-response-bytes", DefaultMaxResponseBytes, "Largest reply body of one query, in bytes; a larger one ends the report with an error.")
	maxSeries := fs.Int("prometheus.max-series", DefaultMaxSeries, "Most series one query may answer; more end the report with an error.")
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	var w Window
	switch {
	case err != nil:
	case *promURL == "":
		err = errors.New("--prometheus.url is required")
	case !labelName.MatchString(*nsLabel):
		err = fmt.Errorf("--namespace-label=%q: not a label name", *nsLabel)
	case !slices.Contains(Formats, *output):
		err = fmt.Errorf("--output=%q: want table, json or csv", *output)
	case !(*headroom >= 0 && *headroom <= 10):
		err = fmt.Errorf("--headroom=%v: want 0 to 10", *headroom)
	case !(*minCoverage >= 0 && *minCoverage <= 1):
		err = fmt.Errorf("--min-coverage=%v: want 0 to 1", *minCoverage)
	case *timeout < MinTimeout:
		// 1ns failed every query before it was sent.
		err = fmt.Errorf("--timeout=%v: want at least %v", *timeout, MinTimeout)
	case *maxBytes < 1:
		err = fmt.Errorf("--prometheus.max-response-bytes=%d: want 1 or more", *maxBytes)
	case *maxSeries < 1:
		err = fmt.Errorf("--prometheus.max-series=%d: want 1 or more", *maxSeries)
	default:
		w, err = WindowByName(*window)
	}
	var p *Prometheus
	if err == nil {
		p, err = NewPrometheus(*promURL)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpu-exporter rightsize: %v\n", err)
		return 2
	}
	p = p.WithLimits(Limits{MaxResponseBytes: *maxBytes, MaxSeries: *maxSeries})
	// One deadline for the whole run, queries and reply reads alike, not
	// one per query: --timeout bounds what the operator waits.
	runCtx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	rows, err := Report(runCtx, p, Options{Window: w, Namespace: *namespace, NamespaceLabel: *nsLabel,
		Headroom: *headroom, MinCoverage: *minCoverage})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("the report did not finish within --timeout=%v: %w", *timeout, err)
	}
	if err == nil {
		err = Write(stdout, rows, *output, w)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpu-exporter rightsize: %v\n", err)
		return 1
	}
	return 0
}
