package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/rightsize"
)

const rightsizeCommand = "rightsize"

// runRightsize prints, per workload, its current GPU or MIG size, the size
// its recorded usage fits, and the GPU-hours the change frees.
func runRightsize(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("gpu-exporter rightsize", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	promURL := fs.String("prometheus.url", "", "Prometheus base URL, e.g. http://prometheus:9090 (required).")
	window := fs.String("window", "7d", "Window of the recording rules: 1h, 1d or 7d.")
	output := fs.String("output", "text", "Output format: text or json.")
	headroom := fs.Float64("headroom", 0.2, "Memory headroom over the observed peak, as a fraction.")
	timeout := fs.Duration("timeout", 30*time.Second, "Timeout of each Prometheus query.")
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err == nil && *promURL == "" {
		err = errors.New("--prometheus.url is required")
	}
	if err == nil && *output != "text" && *output != "json" {
		err = fmt.Errorf("--output=%q: want text or json", *output)
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpu-exporter rightsize: %v\n", err)
		return 2
	}
	rows, err := rightsize.Report(ctx, &http.Client{Timeout: *timeout}, *promURL, *window, *headroom)
	if err != nil {
		fmt.Fprintf(stderr, "gpu-exporter rightsize: %v\n", err)
		return 1
	}
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rows); err != nil {
			fmt.Fprintf(stderr, "gpu-exporter rightsize: %v\n", err)
			return 1
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAMESPACE\tWORKLOAD\tMODEL\tCURRENT\tPEAK MEM GB\tP95 ACTIVITY\tGPU-H (%s)\tRECOMMEND\tGPU-H FREED\n", *window)
	for _, r := range rows {
		rec := r.Recommendation
		if r.Note != "" {
			rec = "- (" + r.Note + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%.2f\t%.1f\t%s\t%.1f\n", r.Namespace, r.Workload, r.Model, r.Current,
			r.PeakMemoryBytes/1e9, r.P95Activity, r.AllocatedGPUHours, rec, r.FreedGPUHours)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "gpu-exporter rightsize: %v\n", err)
		return 1
	}
	return 0
}
