package exposition

import "github.com/gpu-exporter/gpu-exporter/pkg/fields"

// Family declares one family gpu-exporter writes besides the catalog's
// fields (which pkg/fields declares). The renderer takes each family's
// name, type and help from here, the metrics doc lists them from here, and
// a test fails when a rendered family is not declared or its labels differ.
type Family struct {
	Name string
	Type fields.Type
	Help string
	// Labels names the labels of the series, in order. EntityLabels and
	// HolderLabels stand for groups that depend on the entity and the
	// naming.
	Labels []string
	// Optional are the labels of Labels some series leave out.
	Optional []string
	// Naming is the naming that exports the family.
	Naming Naming
	// FromCounters is set when the counters file row that turns the family
	// on gives its type and help (dcgm-exporter's DCGM_EXP_* counters): Type
	// is then the one dcgm-exporter's own counters file gives (gauge, per
	// the records of its counters tests), and Help, in Markdown, says what
	// it counts.
	FromCounters bool
}

// Label groups of Family.Labels.
const (
	// EntityLabels stands for the labels identifying the series' entity in
	// its naming: in Prometheus naming gpu, uuid, device, model, then
	// gpu_instance and mig_profile (MIG instance), link (NVLink) or nvswitch.
	EntityLabels = "<entity>"
	// HolderLabels stands for the labels of the container holding the
	// entity, when one does: namespace, pod, container and, with the pod
	// informer, pod_uid and allowlisted label_* pod labels.
	HolderLabels = "<holder>"
)

// familyID indexes the declared families.
type familyID uint8

const (
	famGPUInfo familyID = iota
	famMIGInfo
	famAllocation
	famXIDErrors
	famXIDLastSeen
	famLost
	famHealth
	famXIDWindow
	famClockEventsWindow
	numFamilies
)

// declaredFamilies returns every family the renderer adds, by familyID.
func declaredFamilies() [numFamilies]Family {
	return [numFamilies]Family{
		famGPUInfo: {
			Name: "gpu_info", Type: fields.Gauge, Naming: NamingPrometheus,
			Help:   "Static facts about a GPU; always 1.",
			Labels: []string{"gpu", "uuid", "device", "model", "pci_bus_id", "driver_version"},
		},
		famMIGInfo: {
			Name: "gpu_mig_instance_info", Type: fields.Gauge, Naming: NamingPrometheus,
			Help:   "Static facts about a MIG GPU instance; always 1.",
			Labels: []string{"gpu", "uuid", "device", "model", "gpu_instance", "mig_profile", "mig_uuid"},
		},
		famAllocation: {
			Name: "gpu_pod_allocation_info", Type: fields.Gauge, Naming: NamingPrometheus,
			Help:   "A container holding a GPU or MIG instance, as the kubelet reports it; shared=\"true\" when several containers hold the same device. Always 1.",
			Labels: []string{EntityLabels, HolderLabels, "shared"},
		},
		famXIDErrors: {
			Name: "gpu_xid_errors_total", Type: fields.Counter, Naming: NamingPrometheus,
			Help:   "XID errors reported by the driver since the exporter started, by XID code.",
			Labels: []string{EntityLabels, "xid"},
		},
		famXIDLastSeen: {
			Name: "gpu_xid_last_seen_timestamp_seconds", Type: fields.Gauge, Naming: NamingPrometheus,
			Help:   "Unix time the driver last reported an XID error of this code for the GPU.",
			Labels: []string{EntityLabels, "xid"},
		},
		famLost: {
			Name: "gpu_lost_since_timestamp_seconds", Type: fields.Gauge, Naming: NamingPrometheus,
			Help:   "A GPU that was in the inventory and is gone (fell off the bus, marked lost or inaccessible): Unix time it left. Absent while every GPU is present.",
			Labels: []string{"gpu", "uuid"},
		},
		famHealth: {
			Name: "gpu_health_status", Type: fields.Gauge, Naming: NamingPrometheus,
			Help:   "A failing health watch of the GPU's source, by subsystem: 1 warning, 2 failure. Absent while the subsystem passes.",
			Labels: []string{"gpu", "uuid", "subsystem"},
		},
		famXIDWindow: {
			Name: fields.XIDErrorsCountName, Type: fields.Gauge, Naming: NamingDCGM, FromCounters: true,
			Help: "Per GPU and XID code, the XID errors during the last `--naming.xid-count-window` (dcgm-exporter's `-x`, default 5m). " +
				"A GPU without any has one zero series without `" + WindowXID + "`.",
			Labels:   []string{EntityLabels, windowSizeLabel, WindowXID, HolderLabels},
			Optional: []string{WindowXID},
		},
		famClockEventsWindow: {
			Name: fields.ClockEventsCountName, Type: fields.Gauge, Naming: NamingDCGM, FromCounters: true,
			Help: "Per GPU and reason, the collections during the last `--naming.clock-events-count-window` (default 5m) that saw the reason active. " +
				"A GPU without any sample has one zero series without `" + WindowClockEvent + "`; one whose samples show no reason has none.",
			Labels:   []string{EntityLabels, WindowClockEvent, windowSizeLabel, HolderLabels},
			Optional: []string{WindowClockEvent},
		},
	}
}

// Families returns every family gpu-exporter adds besides the catalog's
// fields, in page order, both namings.
func Families() []Family {
	d := declaredFamilies()
	return d[:]
}

// family starts the declared family id on the page.
func (p *page) family(id familyID) family {
	d := &p.owner.families[id]
	return family{name: d.Name, help: d.Help, typ: d.Type}
}
