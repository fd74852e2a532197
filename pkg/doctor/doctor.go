// Package doctor checks, once and each with a deadline, every dependency
// the exporter's configuration needs (GPU source and its libraries, watched
// fields, kubelet pod-resources socket, web and counters files, device
// nodes, process accounting) and reports each with what was found and how to fix it. It reuses
// the exporter's own code paths: the caller hands it the source opener the
// exporter uses, and it reads files and the kubelet with the same packages.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Status is the outcome of one check.
type Status string

// Outcomes. Fail means the configuration cannot work as given; Warn means
// it works with less than it asks for (no pod labels, blank fields).
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Names of the checks, in report order.
const (
	CheckCounters  = "counters"
	CheckWebConfig = "web-config"
	CheckSource    = "gpu-source"
	CheckFields    = "fields"
	CheckKubelet   = "kubelet"
	CheckPodLabels = "pod-labels"
	CheckProcesses = "processes"
	CheckDevices   = "devices"
	CheckProfiling = "profiling"
)

// Result is one check's outcome.
type Result struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Found says what the check saw, in one line.
	Found string `json:"found"`
	// Fix says what to do; empty when Status is OK.
	Fix string `json:"fix,omitempty"`
	// Details are further lines: per GPU, per unmatched id, per skipped row.
	Details []string `json:"details,omitempty"`
	// Fields holds the per-field counts of the fields check.
	Fields []FieldCount `json:"fields,omitempty"`
}

// FieldCount is how many entities returned a value or a blank for one
// watched field in one Read (entities whose level cannot carry the field
// are not counted).
type FieldCount struct {
	Field  string `json:"field"`
	Values int    `json:"values"`
	Blanks int    `json:"blanks"`
}

// Report is every check's result.
type Report struct {
	Results []Result `json:"checks"`
}

// Failed reports whether any check failed.
func (r *Report) Failed() bool {
	for _, res := range r.Results {
		if res.Status == Fail {
			return true
		}
	}
	return false
}

// Result returns the result of the named check, or nil.
func (r *Report) Result(check string) *Result {
	for i := range r.Results {
		if r.Results[i].Check == check {
			return &r.Results[i]
		}
	}
	return nil
}

// WriteText writes one line per check ("ok   gpu-source: …"), its fix on
// the next line and its details indented below.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, res := range r.Results {
		fmt.Fprintf(&b, "%-4s %s: %s\n", res.Status, res.Check, res.Found)
		if res.Fix != "" {
			fmt.Fprintf(&b, "     fix: %s\n", res.Fix)
		}
		for _, d := range res.Details {
			fmt.Fprintf(&b, "     - %s\n", d)
		}
	}
	ok, warn, fail := r.counts()
	fmt.Fprintf(&b, "%d ok, %d warn, %d fail\n", ok, warn, fail)
	_, err := io.WriteString(w, b.String())
	return err
}

// Write writes the report in format: "json" (WriteJSON), else text
// (WriteText); Args has checked the format.
func (r *Report) Write(w io.Writer, format string) error {
	if format == "json" {
		return r.WriteJSON(w)
	}
	return r.WriteText(w)
}

// WriteJSON writes the report as one JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	ok, warn, fail := r.counts()
	out := struct {
		Checks []Result `json:"checks"`
		OK     int      `json:"ok"`
		Warn   int      `json:"warn"`
		Fail   int      `json:"fail"`
	}{r.Results, ok, warn, fail}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func (r *Report) counts() (ok, warn, fail int) {
	for _, res := range r.Results {
		switch res.Status {
		case OK:
			ok++
		case Warn:
			warn++
		default:
			fail++
		}
	}
	return ok, warn, fail
}

// Opener opens the GPU source exactly as the exporter does. For the
// simulator it also starts the simulated kubelet and returns its socket
// (empty otherwise). The caller releases what it opened after Run.
type Opener func(ctx context.Context) (src source.Source, kubeletSocket string, err error)

// Config is the configuration to check: the exporter's flags, resolved.
type Config struct {
	// Source is --source, named in the report.
	Source string
	// Traits are the source's properties, and what to check for it.
	Traits source.Traits
	// Open opens the source.
	Open Opener

	// Catalog resolves counters file rows.
	Catalog *fields.Catalog
	// CountersFile is --collect.counters; empty means DefaultFields.
	CountersFile string
	// DefaultFields is the built-in set of the naming in use.
	DefaultFields []fields.Field

	// WebConfigFile is --web.config.file (empty: plain HTTP).
	WebConfigFile string
	// WebConfigFiles reads the web config and the files it names with a
	// deadline, as the exporter does at start-up; nil skips that step.
	WebConfigFiles func(ctx context.Context, path string) error

	// Kubernetes is the pod attribution configuration.
	Kubernetes Kubernetes
	// DRA is the DRA attribution configuration.
	DRA DRA
	// PodLabels says --kubernetes.pod-labels or --kubernetes.pod-uid is set.
	PodLabels bool
	// WorkloadInfo is the --kubernetes.workload-info configuration.
	WorkloadInfo WorkloadInfo
	// NodeName is $NODE_NAME.
	NodeName string
	// Processes is the process accounting configuration.
	Processes Processes

	// Settle is how long the fields check keeps reading while some field
	// is blank everywhere, for the source's first samples: about two
	// collection intervals, at most half of Timeout.
	Settle time.Duration

	// Timeout bounds each check. Default 15s.
	Timeout time.Duration
	// Host probes the machine; zero members use the real host.
	Host Host
}

// Kubernetes is the pod-resources configuration to check.
type Kubernetes struct {
	// Enabled is --kubernetes.enabled: auto, true or false.
	Enabled string
	// Socket is the pod-resources socket.
	Socket string
	// ResourceNames are the attributed resource names (defaults included).
	ResourceNames []string
	// IDType is --kubernetes.gpu-id-type.
	IDType podresources.IDType
	// CallTimeout bounds each kubelet call. Default 5s.
	CallTimeout time.Duration
}

// DefaultTimeout bounds one check when Config.Timeout is zero.
const DefaultTimeout = 15 * time.Second

// Run runs every check once and returns the report.
func Run(ctx context.Context, cfg Config) *Report {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Kubernetes.CallTimeout <= 0 {
		cfg.Kubernetes.CallTimeout = 5 * time.Second
	}
	cfg.Settle = min(max(cfg.Settle, 0), cfg.Timeout/2)
	cfg.Host = cfg.Host.withDefaults()
	r := &Report{}
	set, res := checkCounters(ctx, cfg)
	r.Results = append(r.Results, res, checkWebConfig(ctx, cfg))
	src, inv, socket, res := checkSource(ctx, cfg)
	r.Results = append(r.Results, res)
	if src != nil {
		r.Results = append(r.Results, checkFields(ctx, cfg, src, set))
	}
	if socket == "" {
		socket = cfg.Kubernetes.Socket
	}
	r.Results = append(r.Results, checkKubelet(ctx, cfg, socket, inv), checkDRA(ctx, cfg))
	if cfg.PodLabels {
		r.Results = append(r.Results, checkPodLabels(cfg))
	}
	if cfg.WorkloadInfo.Enabled {
		r.Results = append(r.Results, checkWorkloadInfo(ctx, cfg))
	}
	r.Results = append(r.Results, checkProcesses(ctx, cfg))
	r.Results = append(r.Results, checkDevices(cfg), checkProfiling(cfg, set))
	return r
}

// withTimeout bounds one check.
func withTimeout(ctx context.Context, cfg Config) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, cfg.Timeout)
}
