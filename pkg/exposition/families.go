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

// familyID indexes the declared families.
type familyID uint8

const (
	famGPUInfo familyID = iota
	famMIGInfo
	famMIGDeviceInfo
	famAllocation
	famXIDErrors
	famXIDLastSeen
	famLost
	famHealth
	famXIDWindow
	famClockEventsWindow
	famGPUHealthStatus
	famContainerUtilization
	famContainerMemory
	famContainerProcesses
	famProcessUtilization
	famProcessMemory
	famContainerEnergy
	famIdleEnergy
	famOrphanProcesses
	famOrphanMemory
	famNVLinkUp
	famNVSwitchInfo
	famNVLinkPeer
	famDRAClaim
	numFamilies
)

// declaredFamilies returns every family the renderer adds, by familyID;
// each naming declares its own.
func declaredFamilies() [numFamilies]Family {
	var d [numFamilies]Family
	declarePrometheusFamilies(&d)
	declareDCGMFamilies(&d)
	declareFabricFamilies(&d)
	declareDRAFamilies(&d)
	return d
}

// Families returns every family gpu-exporter adds besides the catalog's
// fields, in page order, both namings.
func Families() []Family {
	d := declaredFamilies()
	return d[:]
}

// family starts the declared family id on the page.
func (p *pageWriter) family(id familyID) family {
	d := &p.owner.families[id]
	return family{name: d.Name, help: d.Help, typ: d.Type}
}
