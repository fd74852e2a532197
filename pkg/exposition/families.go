package exposition

import "github.com/gpu-exporter/gpu-exporter/pkg/fields"

// Family declares one family gpu-exporter writes besides the catalog's
// fields (which pkg/fields declares), with the function that renders it,
// as kube-state-metrics' family generators do: one declaration holds the
// family's name, type, help, labels and series. The renderer takes each
// family's header from here, the metrics doc lists them from here, and a
// test fails when a rendered family is not declared or its labels differ.
//
// A family is a package variable next to the families it shares rows with
// (naming_prometheus.go, fabric.go, dra.go, containers.go, accounting.go, replicas.go,
// naming_dcgm.go, health_dcgm.go); declaredFamilies lists every one in the
// metrics doc's order, and each scheme's render lists its naming's in page
// order.
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

	// render writes the family's series: f is its header (from Name, Help
	// and Type), written before its first series, so that a family without
	// series leaves no trace on the page. A FromCounters family writes the
	// counters row's header instead.
	render func(p *pageWriter, in Input, f family)
}

// Label groups of Family.Labels.
const (
	// EntityLabels stands for the labels identifying the series' entity in
	// its naming: in Prometheus naming gpu, uuid, device, model, then
	// gpu_instance and mig_profile (MIG instance) or link (a GPU's NVLink);
	// an NVSwitch has nvswitch alone, a switch port nvswitch and link.
	EntityLabels = "<entity>"
	// HolderLabels stands for the labels of the container holding the
	// entity, when one does: namespace, pod, container and, with the pod
	// informer, pod_uid and allowlisted label_* pod labels; or those of the
	// HPC job holding it: hpc_job, and hpc_user, hpc_partition when known.
	HolderLabels = "<holder>"
)

// EntityLabelNames lists the labels EntityLabels stands for in Prometheus
// naming: together with the target's node (and a cluster label) they name
// a GPU, MIG instance, NVLink or NVSwitch whoever holds it. The rules
// generator (rules.GPULabels) aggregates GPU series by these labels, so a
// label added to entityLabels must be added here (a test renders every
// entity kind and fails otherwise).
func EntityLabelNames() []string {
	return []string{"gpu", "uuid", "device", "model", "gpu_instance", "mig_profile", "link", "nvswitch"}
}

// HolderLabelNames lists the labels HolderLabels stands for, besides the
// pod labels named HolderLabelPrefix + key: those of a container holding
// the entity and those of an HPC job holding it. A test renders every kind
// of holder and fails when the page carries a holder label not listed
// here. The rules never list them: they aggregate GPU series by
// EntityLabelNames, which leaves every holder label out, pod labels
// included, whose names only the user's allowlist knows.
func HolderLabelNames() []string {
	return []string{"namespace", "pod", "container", "pod_uid", "hpc_job", "hpc_user", "hpc_partition"}
}

// HolderLabelPrefix starts the names of the pod labels a holder carries
// (--kubernetes.pod-labels: podlabels.LabelPrefix).
const HolderLabelPrefix = "label_"

// declaredFamilies returns every family the renderer adds, both namings,
// in the metrics doc's order.
func declaredFamilies() []*Family {
	return []*Family{
		&gpuInfoFamily, &migInstanceInfoFamily, &migDeviceInfoFamily, &allocationFamily, &workloadFamily,
		&sharedReplicasFamily, &containerReplicasFamily,
		&xidErrorsFamily, &xidLastSeenFamily, &lostFamily, &healthFamily,
		&xidWindowFamily, &clockEventsWindowFamily, &gpuHealthStatusFamily, &p2pStatusFamily,
		&containerUtilizationFamily, &containerMemoryFamily, &containerProcessesFamily,
		&containerMemoryLimitFamily, &containerSMLimitFamily,
		&processUtilizationFamily, &processMemoryFamily,
		&containerEnergyFamily, &idleEnergyFamily, &orphanProcessesFamily, &orphanMemoryFamily,
		&nvlinkUpFamily, &nvswitchInfoFamily, &nvlinkPeerFamily, &draClaimFamily,
	}
}

// Families returns every family gpu-exporter adds besides the catalog's
// fields, both namings, in the metrics doc's order.
func Families() []Family {
	d := declaredFamilies()
	out := make([]Family, len(d))
	for i, f := range d {
		out[i] = *f
	}
	return out
}

// renderFamilies writes fams, in order.
func (p *pageWriter) renderFamilies(in Input, fams []*Family) {
	for _, d := range fams {
		d.render(p, in, family{name: d.Name, help: d.Help, typ: d.Type})
	}
}
