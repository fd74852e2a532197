package rightsize

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Row is the report for one workload.
type Row struct {
	Namespace         string  `json:"namespace"`
	Workload          string  `json:"workload"`
	Model             string  `json:"model"`
	Current           string  `json:"current"`
	PeakMemoryBytes   float64 `json:"peak_memory_bytes"`
	P95Activity       float64 `json:"p95_activity"`
	AllocatedGPUHours float64 `json:"allocated_gpu_hours"`
	Recommendation    string  `json:"recommendation"`
	Keep              bool    `json:"keep"`
	FreedGPUHours     float64 `json:"freed_gpu_hours"`
	// Note says why there is no recommendation, when there is none.
	Note string `json:"note,omitempty"`
}

// Windows are the windows the recording rules keep.
var Windows = []string{"1h", "1d", "7d"}

// ErrNoData is returned when Prometheus holds none of the recordings.
var ErrNoData = errors.New("no right-sizing recordings (namespace_workload:gpu_allocated_hours:sum_<window>); are rules/recording.yaml loaded, and has the window's data been recorded?")

// currentQuery is, per workload, GPU model and MIG profile, the most
// devices one of its pods holds now.
const currentQuery = `max by (namespace, workload, model, mig_profile) (
  count by (namespace, workload, pod, model, mig_profile) (
    gpu_pod_allocation_info
      * on (cluster, node, uuid) group_left (model) max by (cluster, node, uuid, model) (gpu_info)
      * on (cluster, namespace, pod) group_left (workload) namespace_workload_pod:gpu_pod_owner:relabel
  )
)`

type key struct{ ns, workload string }

// Report queries base for window's recordings and recommends a size per
// workload with the given memory headroom.
func Report(ctx context.Context, c *http.Client, base, window string, headroom float64) ([]Row, error) {
	if !slices.Contains(Windows, window) {
		return nil, fmt.Errorf("window %q: want one of %s", window, strings.Join(Windows, ", "))
	}
	get := func(q string) (map[key]Sample, error) {
		ss, err := Query(ctx, c, base, q)
		if err != nil {
			return nil, err
		}
		m := make(map[key]Sample, len(ss))
		for _, s := range ss {
			m[key{s.Labels["namespace"], s.Labels["workload"]}] = s
		}
		return m, nil
	}
	alloc, err := get("namespace_workload:gpu_allocated_hours:sum_" + window)
	if err != nil {
		return nil, err
	}
	if len(alloc) == 0 {
		return nil, ErrNoData
	}
	mem, err := get("namespace_workload:gpu_device_memory_used_bytes:max_" + window)
	if err != nil {
		return nil, err
	}
	act, err := get("namespace_workload:gpu_device_utilization_ratio:p95_" + window)
	if err != nil {
		return nil, err
	}
	cur, err := get(currentQuery)
	if err != nil {
		return nil, err
	}
	rows := make([]Row, 0, len(alloc))
	for k, a := range alloc {
		r := Row{Namespace: k.ns, Workload: k.workload, AllocatedGPUHours: a.Value,
			PeakMemoryBytes: mem[k].Value, P95Activity: act[k].Value}
		c, ok := cur[k]
		if !ok {
			r.Note = "holds no GPU now"
			rows = append(rows, r)
			continue
		}
		r.Model = c.Labels["model"]
		size := Size{Profile: c.Labels["mig_profile"]}
		if size.Profile == "" {
			size.GPUs = int(c.Value)
		}
		r.Current = size.String()
		m, ok := ModelFor(r.Model)
		if !ok {
			r.Note = "no MIG profiles known for this model"
			rows = append(rows, r)
			continue
		}
		rec, err := Recommend(Usage{Model: m.Name, Current: size, PeakMemoryBytes: r.PeakMemoryBytes,
			P95Activity: r.P95Activity, AllocatedGPUHours: r.AllocatedGPUHours}, headroom)
		if err != nil {
			r.Note = err.Error()
			rows = append(rows, r)
			continue
		}
		r.Recommendation, r.Keep, r.FreedGPUHours = rec.Size.String(), rec.Keep, rec.FreedGPUHours
		if rec.Keep {
			r.Recommendation = "keep"
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b Row) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Workload, b.Workload)
	})
	return rows, nil
}
