package exposition

// The naming seam. A Naming selects one implementation of scheme, and the
// scheme owns everything that differs between the namings: the names, units
// and labels of the series, the fields watched besides the counters (label
// fields, the inputs of derived families), and the families derived from
// raw events (Prometheus naming's XID counters, dcgm-exporter's window
// counters). The renderer and the collector call the scheme and never
// branch on the Naming; newScheme below and the wiring in cmd/gpu-exporter
// are the only places that do. Adding a naming is one more scheme.
//
// The seam lives inside pkg/exposition rather than in a package of its own
// because a scheme decides bytes: it builds the cached label sets and the
// per-column plan the per-series loop runs on, with the page's append
// helpers. A separate package would have to either export those helpers or
// hand label strings back and forth, and pay for it on the hot path.

import (
	"fmt"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Naming selects how GPU series are named, in which units and with which
// labels. It is chosen when the renderer is built; rendering does not branch
// on it per series.
type Naming uint8

// Namings.
const (
	// NamingPrometheus follows Prometheus conventions: gpu_* names, base
	// units, _total counters, info metrics, one 0/1 series per clock event
	// reason, labels gpu, uuid, device, model.
	NamingPrometheus Naming = iota
	// NamingDCGM reproduces dcgm-exporter: DCGM_FI_* names with the counters
	// file's types and help, DCGM's native units, the raw clock event
	// bitmask, labels gpu, UUID, pci_bus_id, device, modelName, Hostname,
	// GPU_I_PROFILE, GPU_I_ID, counters-file label fields, and its window
	// counters.
	NamingDCGM
)

// ParseNaming reads a naming name: "prometheus" or "dcgm".
func ParseNaming(s string) (Naming, error) {
	switch s {
	case "prometheus":
		return NamingPrometheus, nil
	case "dcgm":
		return NamingDCGM, nil
	}
	return 0, fmt.Errorf("unknown naming %q (want prometheus or dcgm)", s)
}

// String returns the name ParseNaming reads.
func (n Naming) String() string {
	if n == NamingDCGM {
		return "dcgm"
	}
	return "prometheus"
}

// Hostname label spellings of dcgm naming.
const (
	// HostnameLabel is the spelling of dcgm-exporter up to 4.5.3-4.8.2.
	HostnameLabel = "Hostname"
	// HostnameLabelLower is the spelling of dcgm-exporter from 4.6.0-4.8.3.
	HostnameLabelLower = "hostname"
)

// DCGMRelease is a dcgm-exporter release whose names --naming=dcgm writes
// (--naming.dcgm-release), with what it sets that differs between releases.
type DCGMRelease struct {
	// Name is the release's tag, as --naming.dcgm-release takes it.
	Name string
	// HostnameLabel is the hostname label's spelling in that release.
	HostnameLabel string
}

// DCGMReleases are the releases --naming.dcgm-release knows, oldest first.
// Between them only the hostname label's spelling differs in the sources
// read (docs/migrating-from-dcgm-exporter.md, "Which dcgm-exporter
// release's names"):
//   - 4.5.3-4.8.2: tag 4.5.3-4.8.2 (NVIDIA/dcgm-exporter 691c927) renders
//     Hostname (internal/pkg/rendermetrics/render_metrics.go).
//   - 4.6.0-4.8.3: d5e5f51 (2026-05-12, "Rename Hostname label to
//     hostname", on main after 691c927) renders hostname; so does 7ad5832,
//     whose README's quick start runs the 4.6.0-4.8.3 image, the release
//     NVIDIA/gpu-operator ships (deployments/gpu-operator/values.yaml at
//     a22dbf6, since f0c422e).
var DCGMReleases = []DCGMRelease{
	{Name: "4.5.3-4.8.2", HostnameLabel: HostnameLabel},
	{Name: "4.6.0-4.8.3", HostnameLabel: HostnameLabelLower},
}

// DefaultDCGMRelease is --naming.dcgm-release's default: the release the
// GPU Operator ships, the one most users replace.
const DefaultDCGMRelease = "4.6.0-4.8.3"

// LookupDCGMRelease returns the release named name.
func LookupDCGMRelease(name string) (DCGMRelease, bool) {
	for _, r := range DCGMReleases {
		if r.Name == name {
			return r, true
		}
	}
	return DCGMRelease{}, false
}

// DCGMOptions tune NamingDCGM.
type DCGMOptions struct {
	// HostnameLabel names the hostname label: HostnameLabel (the default
	// when empty) or HostnameLabelLower.
	HostnameLabel string
	// Hostname is the hostname label's value; empty leaves the label out,
	// as dcgm-exporter's --no-hostname does.
	Hostname string
	// OldNamespace uses dcgm-exporter's 1.x label names: uuid instead of
	// UUID, pod_name, pod_namespace and container_name instead of pod,
	// namespace and container.
	OldNamespace bool
	// ReplaceBlanksInModelName writes modelName with dashes for blanks, as
	// dcgm-exporter's --replace-blanks-in-model-name does.
	ReplaceBlanksInModelName bool
	// VirtualGPUs labels the series of a container holding a replica of a
	// shared GPU (time-slicing, MPS) with vgpu="<replica>", as
	// dcgm-exporter's --kubernetes-virtual-gpus does (its vgpuAttribute,
	// internal/pkg/transformation).
	VirtualGPUs bool
}

// Counters is what to collect: the fields and, in dcgm naming, the label
// fields and window counters.
type Counters struct {
	Fields []fields.Field
	// Labels are fields whose values label every series of their entity
	// (counters file "label" rows). Dcgm naming only.
	Labels []fields.Field
	// XIDErrorsCount and ClockEventsCount configure dcgm-exporter's window
	// counters; nil leaves them out. Dcgm naming only.
	XIDErrorsCount, ClockEventsCount *WindowCounter
	// GPUHealthStatus configures dcgm-exporter's DCGM_EXP_GPU_HEALTH_STATUS;
	// nil leaves it out. Dcgm naming only.
	GPUHealthStatus *ExporterFamily
	// P2PStatus configures dcgm-exporter's DCGM_EXP_P2P_STATUS; nil leaves
	// it out. Dcgm naming only.
	P2PStatus *ExporterFamily
}

// ExporterFamily names one of dcgm-exporter's DCGM_EXP_* families that a
// counters file row turns on, with the row's type and help.
type ExporterFamily struct {
	Name, Help string
	Type       fields.Type
}

// WindowCounter configures one of dcgm-exporter's DCGM_EXP_* counters: per
// GPU, how many events of each kind happened during the last Window.
type WindowCounter struct {
	Name, Help string
	Type       fields.Type
	Window     time.Duration
}

// scheme is the implementation of one Naming. A Renderer owns one; it keeps
// the state of the derived families between collections.
type scheme interface {
	// watchSet returns the fields to watch for k: the counters' fields,
	// then the naming's own. The last extra fields of set only feed derived
	// families; they are never exported as series.
	watchSet(k Counters) (set []fields.Field, extra int)
	// wantsHealth reports whether the naming exports lost GPUs and health
	// incidents, so that the collector asks the source for them. It is
	// asked after watchSet, which may decide it from the counters.
	wantsHealth() bool
	// wantsP2P reports whether the naming exports the GPU pairs' NVLink
	// P2P status (Input.P2P); asked after watchSet.
	wantsP2P() bool
	// derive records the raw events of one collection (the sample's XID
	// events) and sets the families derived from them on in.
	derive(in *Input, k Counters)
	// labelFields reports whether sample columns of Kind fields.Label
	// become labels of their entity's series.
	labelFields() bool
	// label builds the label set of one holding.
	label(s *source.Sample, t Holding, labelCols []int) holdingLabels
	// column plans how sample column col, field f, becomes series.
	column(f *fields.Field, col int) column
	// render writes the page's families in the naming's order.
	render(p *pageWriter, in Input)
}

// namingDoc is how the metrics doc introduces the families a naming adds.
type namingDoc struct {
	naming Naming
	// intro is the paragraph above the naming's table; help heads the help
	// column.
	intro []string
	help  string
}

// namingDocs lists every naming, in the metrics doc's order.
func namingDocs() []namingDoc {
	return []namingDoc{
		{NamingPrometheus, []string{"Prometheus naming:"}, "Help"},
		{NamingDCGM, []string{
			"Dcgm naming, when the counters file lists them (as dcgm-exporter's does, commented out);",
			"the counters file's row gives the type and HELP (dcgm-exporter's file says gauge):",
		}, "Meaning"},
	}
}

// newScheme returns the scheme of opts.Naming.
func newScheme(opts Options) scheme {
	if opts.Naming == NamingDCGM {
		return newDCGMScheme(opts.DCGM)
	}
	return newPrometheusScheme()
}

// Window counter event labels.
const (
	// WindowXID labels DCGM_EXP_XID_ERRORS_COUNT series with the XID code.
	WindowXID = "xid"
	// WindowClockEvent labels DCGM_EXP_CLOCK_EVENTS_COUNT series with the
	// clock event reason.
	WindowClockEvent = "clock_event"
)

// WindowFamily is one of dcgm-exporter's window counters: for each GPU, how
// many events of each kind it had during the last Window. Only NamingDCGM
// renders them.
type WindowFamily struct {
	Name, Help string
	Type       fields.Type
	// Label names the event label: WindowXID or WindowClockEvent.
	Label string
	// Window is the length of the window, exported in the
	// window_size_in_ms label.
	Window time.Duration
	// Counts, sorted by entity then event. A GPU with no event in the window
	// has one count with an empty Event and a zero Count: its series has no
	// event label, as in dcgm-exporter.
	Counts []WindowCount
}

// WindowCount is the number of events of one kind one entity had.
type WindowCount struct {
	Entity int
	Event  string
	Count  uint64
}
