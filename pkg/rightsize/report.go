package rightsize

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Row is the report for one workload.
type Row struct {
	Cluster      string `json:"cluster,omitempty"`
	Namespace    string `json:"namespace"`
	Workload     string `json:"workload"`
	WorkloadType string `json:"workload_type"`
	Model        string `json:"model"`
	Current      string `json:"current"`
	// OtherSizes are the sizes other pods of the workload hold now, when
	// they differ (a Deployment with pods on whole GPUs and on MIG): the
	// recommendation is made for Current, the largest.
	OtherSizes        []string `json:"other_sizes,omitempty"`
	PeakMemoryBytes   float64  `json:"peak_memory_bytes"`
	P95MemoryBytes    float64  `json:"p95_memory_bytes"`
	P95Activity       float64  `json:"p95_activity"`
	AllocatedGPUHours float64  `json:"allocated_gpu_hours"`
	IdleGPUHours      float64  `json:"idle_gpu_hours"`
	Recommendation    string   `json:"recommendation"`
	Keep              bool     `json:"keep"`
	// FreedGPUHours over the window; FreedGPUHoursPerWeek scales it to a
	// week.
	FreedGPUHours        float64 `json:"freed_gpu_hours"`
	FreedGPUHoursPerWeek float64 `json:"freed_gpu_hours_per_week"`
	// Coverage is the share of the window the workload was recorded in.
	Coverage float64 `json:"coverage"`
	// Pattern is "steady" or "bursty" (peak memory well above its p95).
	Pattern string `json:"pattern"`
	// Confidence is high, medium or low (see Options.MinCoverage).
	Confidence string `json:"confidence"`
	// Note says why there is no recommendation, when there is none.
	Note string `json:"note,omitempty"`
}

// Window is a window the recording rules keep.
type Window struct {
	Name  string
	Hours float64
	// coverage is the query of the hours (or, for 1h, the minutes / 60)
	// each workload was recorded in during the window.
	coverage string
}

// Windows are the windows the recording rules keep.
var Windows = []Window{
	{"1h", 1, `count_over_time(namespace_workload:gpu_allocated:sum%s[1h:1m]) / 60`},
	{"1d", 24, `count_over_time(namespace_workload:gpu_allocated_hours:sum_1h%s[1d:1h])`},
	{"7d", 168, `count_over_time(namespace_workload:gpu_allocated_hours:sum_1h%s[7d:1h])`},
}

// WindowByName returns the window called name.
func WindowByName(name string) (Window, error) {
	for _, w := range Windows {
		if w.Name == name {
			return w, nil
		}
	}
	names := make([]string, len(Windows))
	for i, w := range Windows {
		names[i] = w.Name
	}
	return Window{}, fmt.Errorf("--window=%q: want one of %s", name, strings.Join(names, ", "))
}

// Options select and tune a report.
type Options struct {
	Window Window
	// Namespace limits the report to one namespace; empty: all.
	Namespace string
	// NamespaceLabel is the label the recordings carry the namespace in
	// (the chart's monitoring.namespaceLabel).
	NamespaceLabel string
	// Headroom is the memory kept free over the observed peak (0.1: 10%).
	Headroom float64
	// MinCoverage is the share of the window below which a recommendation
	// has low confidence.
	MinCoverage float64
}

// Errors a report can end with, besides a query's.
var (
	ErrNoRules = errors.New("the right-sizing recording rules are not loaded (rules/recording.yaml, group gpu-exporter.rightsize.*; the chart's prometheusRule installs them)")
	ErrNoData  = errors.New("no right-sizing data for the window yet: the 1h figures need an hour of recordings, the 1d and 7d ones an hour-aligned hour; try a shorter --window")
)

// labelName is a label name PromQL takes unquoted in a selector.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// burstyRatio: a peak this far above the p95 makes memory bursty.
const burstyRatio = 1.25

// Report queries the recordings of opts.Window and recommends a size per
// workload.
func Report(ctx context.Context, p *Prometheus, opts Options) ([]Row, error) {
	if opts.NamespaceLabel == "" {
		opts.NamespaceLabel = "namespace"
	}
	if !labelName.MatchString(opts.NamespaceLabel) {
		return nil, fmt.Errorf("--namespace-label=%q: not a label name", opts.NamespaceLabel)
	}
	w := opts.Window
	allocName := "namespace_workload:gpu_allocated_hours:sum_" + w.Name
	ok, err := p.HasRecording(ctx, allocName)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("prometheus %s: no rule records %s: %w", p.url, allocName, ErrNoRules)
	}
	sel := ""
	if opts.Namespace != "" {
		sel = "{" + opts.NamespaceLabel + "=" + strconv.Quote(opts.Namespace) + "}"
	}
	nsl := opts.NamespaceLabel
	// unusable holds, per workload, the figures left out because their
	// recording answered no usable number (a 0/0 in a recording is NaN):
	// the workload gets no recommendation and says why.
	unusable := map[rowKey][]string{}
	keep := []string{"cluster", nsl, "workload", "workload_type", "model", "mig_profile"}
	get := func(what, q string) (map[rowKey]Sample, error) {
		ss, err := p.query(ctx, q, keep)
		if err != nil {
			return nil, err
		}
		m := make(map[rowKey]Sample, len(ss))
		for _, s := range ss {
			k := rowKey{s.Labels["cluster"], s.Labels[nsl], s.Labels["workload"]}
			if !usableFigure(s.Value) {
				unusable[k] = append(unusable[k], fmt.Sprintf("%s is %v", what, s.Value))
				// Kept at 0 so that an unusable allocation still lists
				// its workload.
				s.Value = 0
			}
			m[k] = s
		}
		return m, nil
	}
	alloc, err := get("allocated GPU-hours", allocName+sel)
	if err != nil {
		return nil, err
	}
	if len(alloc) == 0 {
		return nil, ErrNoData
	}
	var idle, peak, p95mem, act, coverage map[rowKey]Sample
	for _, f := range []struct {
		what, query string
		dst         *map[rowKey]Sample
	}{
		{"idle GPU-hours", "namespace_workload:gpu_idle_hours:sum_" + w.Name + sel, &idle},
		{"peak device memory", "namespace_workload:gpu_device_memory_used_bytes:max_" + w.Name + sel, &peak},
		{"p95 device memory", "namespace_workload:gpu_device_memory_used_bytes:p95_" + w.Name + sel, &p95mem},
		{"p95 device activity", "namespace_workload:gpu_device_utilization_ratio:p95_" + w.Name + sel, &act},
		{"coverage", fmt.Sprintf(w.coverage, sel), &coverage},
	} {
		if *f.dst, err = get(f.what, f.query); err != nil {
			return nil, err
		}
	}
	sizes, err := p.query(ctx, strings.NewReplacer("$ns", nsl, "$sel", sel).Replace(currentQuery), keep)
	if err != nil {
		return nil, err
	}
	current := map[rowKey][]Sample{}
	for _, s := range sizes {
		k := rowKey{s.Labels["cluster"], s.Labels[nsl], s.Labels["workload"]}
		if !deviceCount(s.Value) {
			unusable[k] = append(unusable[k], fmt.Sprintf("current size %v is not a device count", s.Value))
			continue
		}
		current[k] = append(current[k], s)
	}
	rows := make([]Row, 0, len(alloc))
	for k, a := range alloc {
		r := Row{Cluster: k.cluster, Namespace: k.ns, Workload: k.workload, WorkloadType: a.Labels["workload_type"],
			AllocatedGPUHours: a.Value, IdleGPUHours: idle[k].Value,
			PeakMemoryBytes: peak[k].Value, P95MemoryBytes: p95mem[k].Value, P95Activity: act[k].Value,
			Coverage: min(coverage[k].Value/w.Hours, 1)}
		r.Pattern = "steady"
		if r.PeakMemoryBytes > burstyRatio*r.P95MemoryBytes {
			r.Pattern = "bursty"
		}
		r.Confidence = confidence(r, opts.MinCoverage)
		r.recommend(current, k, w, opts.Headroom)
		if why := unusable[k]; len(why) > 0 {
			r.withhold("not usable: " + strings.Join(why, "; ") + " (want a finite number of 0 or more)")
		}
		r.checkFinite()
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b Row) int {
		return strings.Compare(a.Cluster+"\x00"+a.Namespace+"\x00"+a.Workload, b.Cluster+"\x00"+b.Namespace+"\x00"+b.Workload)
	})
	return rows, nil
}

type rowKey struct{ cluster, ns, workload string }

// currentQuery is, per workload, GPU model and MIG profile, the most
// devices one of its pods holds now ($ns: the namespace label, $sel: the
// namespace selector).
const currentQuery = `max by (cluster, $ns, workload, model, mig_profile) (
  count by (cluster, $ns, workload, pod, model, mig_profile) (
    gpu_pod_allocation_info$sel
      * on (cluster, node, uuid) group_left (model) max by (cluster, node, uuid, model) (gpu_info)
      * on (cluster, $ns, pod) group_left (workload) namespace_workload_pod:gpu_pod_owner:relabel
  )
)`

// confidence: low with too little data, medium when bursty or not
// recorded for most of the window, else high. The comparisons are written
// so that an unknown (NaN) coverage is low, never high.
func confidence(r Row, minCoverage float64) string {
	switch {
	case !(r.Coverage >= minCoverage):
		return "low"
	case r.Pattern == "bursty" || !(r.Coverage >= 0.9):
		return "medium"
	default:
		return "high"
	}
}

// largest picks, of the sizes a workload's pods hold now (one sample per
// model and MIG profile, valued the most devices one pod holds), the
// largest: whole GPUs before MIG, more GPUs first, then the MIG profile
// with the most memory. ok is false when there are none.
func largest(sizes []Sample) (model string, size Size, others []string, ok bool) {
	if len(sizes) == 0 {
		return "", Size{}, nil, false
	}
	type cand struct {
		model string
		size  Size
		gpus  float64
	}
	cands := make([]cand, 0, len(sizes))
	for _, s := range sizes {
		c := cand{model: s.Labels["model"], size: Size{Profile: s.Labels["mig_profile"]}}
		if c.size.Profile == "" {
			c.size.GPUs = int(s.Value)
			c.gpus = s.Value + 1 // above any MIG profile
		} else if m, ok := ModelFor(c.model); ok {
			c.gpus, _ = m.gpus(c.size)
		}
		cands = append(cands, c)
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		if a.gpus != b.gpus {
			if a.gpus > b.gpus {
				return -1
			}
			return 1
		}
		return strings.Compare(a.size.String(), b.size.String())
	})
	for _, c := range cands[1:] {
		others = append(others, c.size.String())
	}
	return cands[0].model, cands[0].size, others, true
}

// recommend fills the current size, model and recommendation of r.
func (r *Row) recommend(current map[rowKey][]Sample, k rowKey, w Window, headroom float64) {
	model, size, others, ok := largest(current[k])
	if !ok {
		r.Note = "holds no GPU now"
		return
	}
	r.Model, r.Current, r.OtherSizes = model, size.String(), others
	m, ok := ModelFor(r.Model)
	if !ok {
		r.Note = "no MIG profiles known for this model"
		return
	}
	rec, err := Recommend(Usage{Model: m.Name, Current: size, PeakMemoryBytes: r.PeakMemoryBytes,
		P95Activity: r.P95Activity, AllocatedGPUHours: r.AllocatedGPUHours}, headroom)
	if err != nil {
		r.Note = err.Error()
		return
	}
	r.Recommendation, r.Keep, r.FreedGPUHours = rec.Size.String(), rec.Keep, rec.FreedGPUHours
	r.FreedGPUHoursPerWeek = rec.FreedGPUHours * 168 / w.Hours
	if rec.Keep {
		r.Recommendation = "keep"
	}
}

// maxDevices bounds the devices one pod can hold: far above any node's
// GPU or MIG instance count, low enough that a count converts to an int.
const maxDevices = 1 << 16

// usableFigure: the recorded figures (GPU-hours, bytes, ratios, hours of
// coverage) are finite and never negative.
func usableFigure(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0
}

// deviceCount: a current size is a whole count of devices, 1 or more.
func deviceCount(v float64) bool {
	return v >= 1 && v <= maxDevices && v == math.Trunc(v)
}

// withhold drops r's recommendation, saying why.
func (r *Row) withhold(why string) {
	r.Recommendation, r.Keep, r.FreedGPUHours, r.FreedGPUHoursPerWeek = "", false, 0, 0
	r.Confidence = "low"
	r.Note = why
}

// checkFinite zeroes the figures of r that are not finite numbers and
// withholds its recommendation, naming them: JSON has no NaN or Inf, and
// a figure derived from one (or one that overflowed) would mislead.
func (r *Row) checkFinite() {
	var bad []string
	for _, f := range []struct {
		name string
		v    *float64
	}{
		{"peak_memory_bytes", &r.PeakMemoryBytes}, {"p95_memory_bytes", &r.P95MemoryBytes},
		{"p95_activity", &r.P95Activity}, {"allocated_gpu_hours", &r.AllocatedGPUHours},
		{"idle_gpu_hours", &r.IdleGPUHours}, {"freed_gpu_hours", &r.FreedGPUHours},
		{"freed_gpu_hours_per_week", &r.FreedGPUHoursPerWeek}, {"coverage", &r.Coverage},
	} {
		if math.IsNaN(*f.v) || math.IsInf(*f.v, 0) {
			*f.v = 0
			bad = append(bad, f.name)
		}
	}
	if len(bad) > 0 {
		why := "not finite numbers: " + strings.Join(bad, ", ")
		if r.Note != "" {
			why = r.Note + "; " + why
		}
		r.withhold(why)
	}
}
