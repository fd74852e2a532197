package exposition

import (
	"iter"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// dcgmScheme is dcgm-exporter's naming: DCGM_FI_* names with the counters
// file's types and help, DCGM's native units, the raw bitmask, its labels
// (label fields among them) and its window counters.
type dcgmScheme struct {
	labeler func(s *source.Sample, t Holding, labelCols []int) holdingLabels
	xidAttr map[int64][]byte // ,err_code="N",err_msg="…" per code
	windows windows
	// clockEvents is the clock event bitmask field, watched for the clock
	// events window counter when the counters do not list it.
	clockEvents fields.Field
	hasClock    bool
	// health is the DCGM_EXP_GPU_HEALTH_STATUS row of the counters being
	// watched (watchSet records it); nil when they do not list it.
	health *ExporterFamily
	// p2p is the DCGM_EXP_P2P_STATUS row (watchSet records it); nil when
	// the counters do not list it.
	p2p *ExporterFamily
}

func newDCGMScheme(o DCGMOptions) *dcgmScheme {
	if o.HostnameLabel == "" {
		o.HostnameLabel = HostnameLabel
	}
	n := &dcgmScheme{labeler: dcgmLabeler(o), xidAttr: map[int64][]byte{}, windows: newWindows()}
	n.clockEvents, n.hasClock = fields.MustNew().ByID(fields.ClockEventReasonsID)
	return n
}

// dcgm-exporter's window counters; the counters file row that turns one
// on gives its header, which Derive puts in Input.Windows.
var (
	// xidWindowFamily is DCGM_EXP_XID_ERRORS_COUNT.
	xidWindowFamily = Family{
		Name: fields.XIDErrorsCountName, Type: fields.Gauge, Naming: NamingDCGM, FromCounters: true,
		Help: "Per GPU and XID code, the XID errors during the last `--naming.xid-count-window` (dcgm-exporter's `-x`, default 5m). " +
			"A GPU without any has one zero series without `" + WindowXID + "`.",
		Labels:   []string{EntityLabels, windowSizeLabel, WindowXID, HolderLabels},
		Optional: []string{WindowXID},
		render: func(p *pageWriter, in Input, _ family) {
			for i := range in.Windows {
				if in.Windows[i].Label != WindowClockEvent {
					p.renderWindow(in, &in.Windows[i])
				}
			}
		},
	}
	// clockEventsWindowFamily is DCGM_EXP_CLOCK_EVENTS_COUNT.
	clockEventsWindowFamily = Family{
		Name: fields.ClockEventsCountName, Type: fields.Gauge, Naming: NamingDCGM, FromCounters: true,
		Help: "Per GPU and reason, the collections during the last `--naming.clock-events-count-window` (default 5m) that saw the reason active. " +
			"A GPU without any sample has one zero series without `" + WindowClockEvent + "`; one whose samples show no reason has none.",
		Labels:   []string{EntityLabels, WindowClockEvent, windowSizeLabel, HolderLabels},
		Optional: []string{WindowClockEvent},
		render: func(p *pageWriter, in Input, _ family) {
			for i := range in.Windows {
				if in.Windows[i].Label == WindowClockEvent {
					p.renderWindow(in, &in.Windows[i])
				}
			}
		},
	}
)

// dcgmTail are the families dcgm naming writes after the catalog's
// fields, in page order.
var dcgmTail = []*Family{&xidWindowFamily, &clockEventsWindowFamily, &gpuHealthStatusFamily, &p2pStatusFamily}

// watchSet adds the label fields and the fields window counters need that
// are not collected anyway.
func (n *dcgmScheme) watchSet(k Counters) (set []fields.Field, extra int) {
	n.health = k.GPUHealthStatus
	n.p2p = k.P2PStatus
	set = append([]fields.Field(nil), k.Fields...)
	for _, l := range k.Labels {
		l.Kind = fields.Label
		set = append(set, l)
	}
	if k.ClockEventsCount != nil && n.hasClock && !slices.ContainsFunc(k.Fields, isClockEvents) {
		set = append(set, n.clockEvents)
		extra++
	}
	return set, extra
}

func isClockEvents(f fields.Field) bool { return f.ID == fields.ClockEventReasonsID }

// wantsHealth is true when the counters list DCGM_EXP_GPU_HEALTH_STATUS:
// dcgm-exporter has no lost-GPU family.
func (n *dcgmScheme) wantsHealth() bool { return n.health != nil }

// wantsP2P is true when the counters list DCGM_EXP_P2P_STATUS.
func (n *dcgmScheme) wantsP2P() bool { return n.p2p != nil }

func (*dcgmScheme) labelFields() bool { return true }

// derive records the sample's XID events and clock event bitmasks and sets
// the window counters k configures.
func (n *dcgmScheme) derive(in *Input, k Counters) {
	in.Windows = n.windows.update(in.Sample, k)
}

func (n *dcgmScheme) label(s *source.Sample, t Holding, labelCols []int) holdingLabels {
	return n.labeler(s, t, labelCols)
}

// column exports the value as DCGM reported it, under the counters file's
// name, type and help.
func (n *dcgmScheme) column(f *fields.Field, col int) column {
	c := column{col: col, fam: family{name: f.DCGMName, help: f.DCGMHelp, typ: f.DCGMType}, mode: modeRaw}
	// A MIG GPU's own row is never exported: its instances carry every
	// field, GPU-level ones with the GPU's value (see column.fromParent).
	c.instancesOnly = f.Levels.Has(fields.LevelGPU) || f.Levels.Has(fields.LevelGPUInstance)
	c.fromParent = f.Levels.Has(fields.LevelGPU) && !f.Levels.Has(fields.LevelGPUInstance)
	if f.ID == fields.XIDErrorsID {
		c.mode = modeRawXID
		c.attribute = n.xidAttribute
	}
	return c
}

// render writes the fields, then the window counters and the health
// status.
func (n *dcgmScheme) render(p *pageWriter, in Input) {
	p.renderFields(in)
	p.gpuHealth = n.health
	p.p2p = n.p2p
	p.renderFamilies(in, dcgmTail)
}

// maxXIDAttrs bounds the cache of XID labels; codes past it are built on
// each use.
const maxXIDAttrs = 1024

// xidAttribute returns the ,err_code="N",err_msg="…" label pairs dcgm
// naming puts on a DCGM_FI_DEV_XID_ERRORS value, built once per code.
func (n *dcgmScheme) xidAttribute(code int64) []byte {
	if b, ok := n.xidAttr[code]; ok {
		return b
	}
	b := appendLabel(nil, false, "err_code", strconv.FormatInt(code, 10))
	b = appendLabel(b, false, "err_msg", fields.XIDMessage(code))
	if len(n.xidAttr) < maxXIDAttrs {
		n.xidAttr[code] = b
	}
	return b
}

// dcgmLabeler returns the label builder of dcgm naming. Labels come in
// dcgm-exporter's order: the entity's fixed labels, the hostname, the label
// fields sorted by name, then the holder's labels sorted by name.
func dcgmLabeler(o DCGMOptions) func(s *source.Sample, t Holding, labelCols []int) holdingLabels {
	uuid, pod, namespace, container := "UUID", "pod", "namespace", "container"
	if o.OldNamespace {
		uuid, pod, namespace, container = "uuid", "pod_name", "pod_namespace", "container_name"
	}
	return func(s *source.Sample, t Holding, labelCols []int) holdingLabels {
		e := &s.Inventory.Entities[t.Entity]
		var b []byte
		switch e.Kind {
		case source.NVSwitch:
			b = appendLabel(b, true, "nvswitch", "nvswitch"+strconv.Itoa(e.ID))
		case source.NVLink:
			b = appendLabel(b, true, "nvlink", strconv.Itoa(e.Link))
			if e.Parent == source.NVSwitch {
				// dcgm-exporter's link template: nvlink, then nvswitch
				// ("nvswitch<id>") for a switch port (internal/pkg/
				// rendermetrics linkMetricsFormat, collector toSwitchMetric).
				b = appendLabel(b, false, "nvswitch", "nvswitch"+strconv.Itoa(e.ID))
				break
			}
			b = appendLabel(b, false, "gpu", strconv.Itoa(e.GPU))
			b = appendLabel(b, false, "gpu_uuid", e.UUID)
			b = appendLabel(b, false, "pci_bus_id", e.PCIBusID)
			b = appendLabel(b, false, "device", "nvidia"+strconv.Itoa(e.GPU))
			b = appendLabel(b, false, "model_name", modelName(e.Model, o))
		default:
			b = appendLabel(b, true, "gpu", strconv.Itoa(e.GPU))
			b = appendLabel(b, false, uuid, e.UUID)
			b = appendLabel(b, false, "pci_bus_id", e.PCIBusID)
			// dcgm-exporter names the device after the GPU index, not the
			// device minor number.
			b = appendLabel(b, false, "device", "nvidia"+strconv.Itoa(e.GPU))
			b = appendLabel(b, false, "modelName", modelName(e.Model, o))
			if e.Kind == source.GPUInstance {
				b = appendLabel(b, false, "GPU_I_PROFILE", e.MIGProfile)
				b = appendLabel(b, false, "GPU_I_ID", strconv.Itoa(e.GPUInstance))
			}
		}
		if o.Hostname != "" {
			b = appendLabel(b, false, o.HostnameLabel, o.Hostname)
		}
		parent := -1
		if e.Kind == source.GPUInstance {
			parent = parentGPU(s.Inventory, e.GPU)
		}
		for _, col := range labelCols {
			f := &s.Fields[col]
			v, ok := labelValue(s.At(t.Entity, col))
			if !ok && parent >= 0 { // label fields are read per GPU
				v, ok = labelValue(s.At(parent, col))
			}
			if !ok && f.ID == fields.DriverVersionID && s.Inventory.DriverVersion != "" {
				v, ok = s.Inventory.DriverVersion, true
			}
			if ok {
				b = appendLabel(b, false, f.DCGMName, v)
			}
		}
		l := holdingLabels{window: len(b), migParent: e.Kind == source.GPU && hasInstances(s.Inventory, e.GPU), parent: parent + 1}
		if h := t.Holder; h != nil && h.HPCJob != "" {
			l.attr = len(b) // err_code and err_msg sort before hpc_*
			b = appendHPCJob(b, h)
		} else if h != nil {
			// Sorted by name: container(_name) sorts before err_code and
			// err_msg, the rest after them.
			b = appendLabel(b, false, container, h.Container)
			b = appendDCGMDRA(b, &h.DRA) // dra_* sort between container and err_code
			l.attr = len(b)
			if o.OldNamespace {
				b = appendLabel(b, false, pod, h.Pod)
				b = appendLabel(b, false, namespace, h.Namespace)
			} else {
				b = appendLabel(b, false, namespace, h.Namespace)
				b = appendLabel(b, false, pod, h.Pod)
			}
			if h.PodUID != "" {
				b = appendLabel(b, false, "pod_uid", h.PodUID)
			}
			// dcgm-exporter writes its attributes sorted by name: vgpu
			// after pod_uid.
			if o.VirtualGPUs && h.VGPU != "" {
				b = appendLabel(b, false, "vgpu", h.VGPU)
			}
			for _, pl := range h.Labels {
				b = appendLabel(b, false, pl.Name, pl.Value)
			}
		} else {
			l.attr = len(b)
		}
		l.b = b
		return l
	}
}

// hasInstances reports whether GPU index gpu has MIG GPU instances in the
// inventory.
func hasInstances(inv *source.Inventory, gpu int) bool {
	for i := range inv.Entities {
		if inv.Entities[i].Kind == source.GPUInstance && inv.Entities[i].GPU == gpu {
			return true
		}
	}
	return false
}

// parentGPU returns the inventory row of GPU index gpu, or -1.
func parentGPU(inv *source.Inventory, gpu int) int {
	for i := range inv.Entities {
		if inv.Entities[i].Kind == source.GPU && inv.Entities[i].GPU == gpu {
			return i
		}
	}
	return -1
}

// modelName is the modelName label value.
func modelName(model string, o DCGMOptions) string {
	if !o.ReplaceBlanksInModelName {
		return model
	}
	return strings.Join(strings.Fields(model), "-")
}

// labelValue formats a value as dcgm-exporter writes a label field: strings
// as they are, integers in decimal, floats with six decimals. Blank values
// leave the label out.
func labelValue(v source.Value) (string, bool) {
	switch v.Kind {
	case source.String:
		return v.Str, true
	case source.Int:
		return strconv.FormatInt(v.Int, 10), true
	case source.Float:
		return strconv.FormatFloat(v.Float, 'f', 6, 64), true
	}
	return "", false
}

// renderWindow writes one of dcgm-exporter's window counters: for every
// holding on a GPU, one series per event kind counted in the window, or one
// zero series without the event label when there was none.
func (p *pageWriter) renderWindow(in Input, w *WindowFamily) {
	fam := family{name: w.Name, help: w.Help, typ: w.Type}
	window := strconv.FormatInt(w.Window.Milliseconds(), 10)
	eventFirst := w.Label < windowSizeLabel // dcgm-exporter sorts these labels by name
	for i := range gpuHoldings(in) {
		t, l := in.Holdings[i], &p.owner.labels[i]
		k := sort.Search(len(w.Counts), func(k int) bool { return w.Counts[k].Entity >= t.Entity })
		for ; k < len(w.Counts) && w.Counts[k].Entity == t.Entity; k++ {
			c := &w.Counts[k]
			p.extra = p.extra[:0]
			if c.Event != "" && eventFirst {
				p.extra = appendLabel(p.extra, false, w.Label, c.Event)
			}
			p.extra = appendLabel(p.extra, false, windowSizeLabel, window)
			if c.Event != "" && !eventFirst {
				p.extra = appendLabel(p.extra, false, w.Label, c.Event)
			}
			p.value = strconv.AppendUint(p.value[:0], c.Count, 10)
			p.series(&fam, l.b, l.window, p.extra, p.value)
		}
	}
}

// gpuHoldings yields the index and entity of every holding on a whole GPU:
// dcgm-exporter's DCGM_EXP_* window, health and P2P collectors read GPU
// entities only, never a MIG instance.
func gpuHoldings(in Input) iter.Seq2[int, *source.Entity] {
	return func(yield func(int, *source.Entity) bool) {
		for i, t := range in.Holdings {
			e := &in.Sample.Inventory.Entities[t.Entity]
			if e.Kind == source.GPU && !yield(i, e) {
				return
			}
		}
	}
}

// intSeries writes one series of fam on holding i with two extra labels,
// in the order given (dcgm-exporter sorts them by name), and an integer
// value.
func (p *pageWriter) intSeries(fam *family, i int, name1, value1, name2, value2 string, v int64) {
	l := &p.owner.labels[i]
	p.extra = appendLabel(p.extra[:0], false, name1, value1)
	p.extra = appendLabel(p.extra, false, name2, value2)
	p.value = strconv.AppendInt(p.value[:0], v, 10)
	p.series(fam, l.b, l.window, p.extra, p.value)
}
