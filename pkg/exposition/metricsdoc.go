package exposition

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// WriteMetricsDoc writes docs/metrics.md: every catalog field under both
// namings, the label fields, the families the renderer adds and the labels
// of each naming. The file is generated; a test keeps it current.
func WriteMetricsDoc(w io.Writer, cat *fields.Catalog) error {
	fams := declaredFamilies()
	infoName := gpuInfoFamily.Name
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format+"\n", args...) }
	p("# Metrics")
	p("")
	p("<!-- Generated from pkg/fields and pkg/exposition by `make docs`")
	p("     (go test ./cmd/gpu-exporter -run TestMetricsDoc -update). Do not edit. -->")
	p("")
	p("gpu-exporter names its series one of two ways, chosen with `--naming`:")
	p("")
	p("- `prometheus` (the default): `gpu_*` names in base units (bytes, seconds, hertz, joules, watts,")
	p("  ratios 0-1), `_total` on counters, info metrics for static facts, one 0/1 series per clock event reason.")
	p("- `dcgm`: the names, units, types and labels dcgm-exporter exports (`DCGM_FI_*` in DCGM's units),")
	p("  so that dashboards and alerts written for it keep working. See")
	p("  [migrating from dcgm-exporter](migrating-from-dcgm-exporter.md).")
	p("")
	p("The counters file (`--collect.counters`, dcgm-exporter's CSV format) chooses the fields;")
	p("without one the default set below is collected (with `--naming=dcgm`, plus the fields")
	p("dcgm-exporter's default counters file collects and its `DCGM_FI_DRIVER_VERSION` label).")
	p("Blank or unsupported values are never exported: the series is absent.")
	p("")
	p("## Labels")
	p("")
	p("| Meaning | `--naming=prometheus` | `--naming=dcgm` |")
	p("|---|---|---|")
	p("| GPU index | `gpu` | `gpu` |")
	p("| GPU UUID (the parent GPU's for a MIG instance) | `uuid` | `UUID` (`uuid` with `--naming.old-namespace`) |")
	p("| Device node | `device` (`nvidia<minor>`) | `device` (`nvidia<index>`, as dcgm-exporter writes it) |")
	p("| Product name | `model` | `modelName` (blanks as dashes with `--naming.replace-blanks-in-model-name`) |")
	p("| PCI bus id | on `%s` (`pci_bus_id`) | `pci_bus_id` |", infoName)
	p("| Driver version | on `%s` (`driver_version`) | `DCGM_FI_DRIVER_VERSION`, a counters-file label row |", infoName)
	p("| MIG GPU instance id | `gpu_instance` | `GPU_I_ID` |")
	p("| MIG profile | `mig_profile` | `GPU_I_PROFILE` |")
	p("| Host | none: Prometheus target labels name the node | `%s` (up to 4.5.3-4.8.2) or `%s` (4.6.0-4.8.3) by `--naming.dcgm-release`, or `--naming.hostname-label`; from `$NODE_NAME` or the host name |", HostnameLabel, HostnameLabelLower)
	p("| Holding pod | `namespace`, `pod`, `container` | `namespace`, `pod`, `container` (`pod_namespace`, `pod_name`, `container_name` with `--naming.old-namespace`) |")
	p("| Holding HPC job (`--hpc.job-mapping-dir`) | `hpc_job`, `hpc_partition`, `hpc_user` | `hpc_job`, `hpc_partition`, `hpc_user` |")
	p("| NVLink, NVSwitch | `link`, `nvswitch` | `nvlink`, `nvswitch` |")
	p("| Replica of a time-sliced or MPS GPU a container holds | none | `vgpu` with `--naming.vgpu-label` (dcgm-exporter's `--kubernetes-virtual-gpus`) |")
	p("| Counters-file `label` rows | not exported | one label per row, named as the row |")
	p("")
	p("A GPU or MIG instance that no container holds has no pod labels. A device several")
	p("containers share has one series per container.")
	p("")
	p("With `--naming=dcgm`, a GPU with MIG instances has no GPU series for the fields read per")
	p("instance (levels `gi` below): its instances carry them, as in dcgm-exporter, so summing")
	p("`DCGM_FI_DEV_FB_USED` over a node counts each instance once and the GPU not again.")
	p("")
	p("## Fields")
	p("")
	p("*Default*: `yes` in the default set of both namings, `dcgm` only in `--naming=dcgm`'s")
	p("built-in set (dcgm-exporter's default counters file collects it), `no` only when a counters file lists it.")
	p("*Levels*: the entities that carry the field: `gpu`, MIG GPU instance (`gi`), `nvlink`, `nvswitch`.")
	p("*Also read as*: other names a counters file may use for the field (DCGM 4 names, dcgm-exporter 1.x names).")
	p("")
	p("| Prometheus name | Type | Unit | dcgm-exporter name | Type | DCGM unit | Levels | Default | Also read as | Help |")
	p("|---|---|---|---|---|---|---|---|---|---|")
	for _, f := range cat.All() {
		p("| `%s` | %s | %s | `%s` | %s | %s | %s | %s | %s | %s |",
			f.Name, f.Type, orDash(f.Unit), f.DCGMName, f.DCGMType, orDash(f.DCGMUnit()), levels(f.Levels),
			defaultMark(f), codeList(slices.Concat(f.Aliases, nonEmpty(f.LegacyName))), cell(f.Help))
	}
	p("")
	p("With `--naming=dcgm` the HELP text is the counters file's help column; for the built-in set it is:")
	p("")
	p("| dcgm-exporter name | HELP |")
	p("|---|---|")
	for _, f := range cat.All() {
		p("| `%s` | %s |", f.DCGMName, cell(f.DCGMHelp))
	}
	p("")
	p("### Clock event reasons")
	p("")
	p("`DCGM_FI_DEV_CLOCK_THROTTLE_REASONS` is a bitmask. Prometheus naming exports one")
	p("`gpu_clock_event_active{reason}` series per bit (PromQL has no bit operators);")
	p("dcgm naming exports the raw integer, as dcgm-exporter does, and counts the bits in")
	p("`%s` under the `clock_event` names.", fields.ClockEventsCountName)
	p("")
	p("| Bit | `reason` | `clock_event` |")
	p("|---|---|---|")
	if f, ok := cat.ByID(fields.ClockEventReasonsID); ok {
		for _, r := range f.Reasons {
			p("| `0x%x` | `%s` | `%s` |", r.Bit, r.Name, r.DCGMName)
		}
	}
	p("")
	p("## Label fields")
	p("")
	p("DCGM string fields a counters file lists as `label` rows (`DCGM_FI_DRIVER_VERSION, label, …`).")
	p("With `--naming=dcgm` each becomes a label on every series of its entity; Prometheus naming")
	p("ignores them (`%s` carries the driver version). Any field above may also be a label row.", infoName)
	p("")
	p("| Name | Also read as | Default | Meaning |")
	p("|---|---|---|---|")
	for _, f := range cat.Labels() {
		def := "no"
		if f.DCGMDefault {
			def = "dcgm"
		}
		p("| `%s` | %s | %s | %s |", f.DCGMName, codeList(f.Aliases), def, cell(f.Help))
	}
	p("")
	p("## Families gpu-exporter adds")
	p("")
	for _, nd := range namingDocs() {
		for _, line := range nd.intro {
			p("%s", line)
		}
		p("")
		p("| Name | Type | Labels | %s |", nd.help)
		p("|---|---|---|---|")
		for _, f := range fams {
			if f.Naming == nd.naming {
				p("| `%s` | %s | %s | %s |", f.Name, f.Type, labelsCell(f.Labels), cell(f.Help))
			}
		}
		p("")
	}
	p("*Entity labels* are those of the series' GPU, MIG instance, NVLink or NVSwitch in the")
	p("naming (see [Labels](#labels)); *holder labels* those of the container holding it, when one")
	p("does: `namespace`, `pod`, `container` and, with the pod informer, `pod_uid` and allowlisted")
	p("`label_*` pod labels; or those of the HPC job holding it: `hpc_job` and, when the mapping")
	p("file says them, `hpc_partition` and `hpc_user`. A GPU in several jobs has one series per job.")
	p("")
	p("In dcgm naming the series of a container holding the device through a DRA claim also carry")
	p("dcgm-exporter's %s (the `dra_mig_*` two for a MIG device only;", codeList(DCGMDRALabelNames()))
	p("`dra_mig_device_uuid` is empty for a dynamic-MIG device); Prometheus naming states the claim in")
	p("`gpu_dra_claim_info` instead.")
	p("")
	p("In dcgm naming `DCGM_FI_DEV_XID_ERRORS` also carries `err_code` (the code) and `err_msg`")
	p("(the name NVIDIA's XID catalog gives it, `Unknown Error` past it).")
	p("")
	p("The exporter's own `gpu_exporter_*` metrics are the same in both namings.")
	return bw.Flush()
}

// labelsCell lists label names, naming the groups of Family.Labels.
func labelsCell(labels []string) string {
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		switch l {
		case EntityLabels:
			out = append(out, "entity labels")
		case HolderLabels:
			out = append(out, "holder labels")
		default:
			out = append(out, "`"+l+"`")
		}
	}
	return strings.Join(out, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

func codeList(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return "`" + strings.Join(names, "`, `") + "`"
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func levels(l fields.Level) string {
	var out []string
	for _, x := range []struct {
		l    fields.Level
		name string
	}{{fields.LevelGPU, "gpu"}, {fields.LevelGPUInstance, "gi"}, {fields.LevelNVLink, "nvlink"}, {fields.LevelNVSwitch, "nvswitch"}} {
		if l.Has(x.l) {
			out = append(out, x.name)
		}
	}
	return strings.Join(out, ", ")
}

func defaultMark(f fields.Field) string {
	switch {
	case f.Default:
		return "yes"
	case f.DCGMDefault:
		return "dcgm"
	}
	return "no"
}
