package sim

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/etc"
	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// DCGM field ids the simulator treats specially (a test checks them
// against the catalog).
const (
	fieldGPUUtil    = 203 // DCGM_FI_DEV_GPU_UTIL: Blank under MIG
	fieldXID        = 230 // DCGM_FI_DEV_XID_ERRORS: set by xid faults
	fieldFBTotal    = 250 // DCGM_FI_DEV_FB_TOTAL: defaults to memory_mib
	fieldFBFree     = 251 // DCGM_FI_DEV_FB_FREE: derived from the others
	fieldFBUsed     = 252 // DCGM_FI_DEV_FB_USED
	fieldFBReserved = 253 // DCGM_FI_DEV_FB_RESERVED
)

// Limits that keep a mistyped count from exhausting memory.
const (
	maxGPUs        = 1024
	maxMemoryMiB   = 1 << 24 // 16 TiB
	maxInstanceID  = 1000
	maxXID         = 1 << 31
	builtinDir     = "sim"
	builtinDisplay = "etc/sim"
)

// Scenario is a parsed and validated simulation: entities, their fields as
// functions of elapsed time, pods and faults. It is immutable and safe for
// concurrent use.
type Scenario struct {
	name string
	// entities is the full inventory (no GPU lost): GPUs by index, then MIG
	// instances by GPU and instance id; specs holds their fields.
	entities []source.Entity
	// migDevices are the MIG devices (compute instances) of every GPU
	// instance, by GPU, GPU instance and compute instance.
	migDevices []source.MIGDevice
	specs      []map[uint16]*fieldSpec
	pods       []podTemplate
	jobs       []jobTemplate
	// objects are the pods' owners, JobSets and Kueue LocalQueues (workloads.go).
	objects  []podlabels.StaticObject
	outages  []window
	xids     []xidFault // by time
	lost     []lostFault
	health   []healthFault // as written
	timeline []segment     // by from; the inventory as GPUs are lost
	// procs are every process, host processes first, then by pod and
	// container (processes.go).
	procs []procRef
	// sharing is how the device plugin shares each GPU that says so, by
	// GPU index (allocatable.go); nil when none does.
	sharing map[int]gpuSharing
	// hasLinks is set when the scenario has an NVLink fabric; linkDown
	// maps the entity index of a link to the elapsed time it goes down.
	hasLinks bool
	linkDown map[int]time.Duration
}

// Name returns the scenario's name, which seeds its derived ids.
func (s *Scenario) Name() string { return s.name }

// Load reads and parses a scenario file, the read bounded in time and
// size (the exporter reads --sim.scenario through node.LoadScenario).
func Load(file string) (*Scenario, error) {
	data, err := bounded.ReadFile(context.Background(), file, maxScenarioBytes, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return Parse(file, data)
}

// maxScenarioBytes caps a scenario file; the built-in ones are a few KiB.
const maxScenarioBytes = 16 << 20

// LoadBuiltin parses one of the scenarios embedded from etc/sim, by name
// without extension ("demo").
func LoadBuiltin(name string) (*Scenario, error) {
	data, err := fs.ReadFile(etc.FS, builtinDir+"/"+name+".yaml")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) {
			return nil, fmt.Errorf("scenario %q is not built in (built in: %s)", name, strings.Join(Builtins(), ", "))
		}
		return nil, fmt.Errorf("scenario %q: %w", name, err)
	}
	return Parse(builtinDisplay+"/"+name+".yaml", data)
}

// Builtins returns the names of the embedded scenarios, sorted.
func Builtins() []string {
	files, _ := fs.Glob(etc.FS, builtinDir+"/*.yaml") // the pattern is valid
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, strings.TrimSuffix(path.Base(f), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// Parse parses a scenario; file names it in errors, and its base name is
// the scenario's name unless the scenario sets one.
func Parse(file string, data []byte) (*Scenario, error) {
	cat, err := fields.New()
	if err != nil {
		return nil, err
	}
	d := &decoder{file: file, catalog: cat}
	root, err := d.document(data)
	if err != nil {
		return nil, err
	}
	o, err := d.object(root, "", "name", "driver_version", "defaults", "gpus", "fabric", "pods", "jobs", "faults", "host_processes", "objects")
	if err != nil {
		return nil, err
	}
	if err := o.require("gpus"); err != nil {
		return nil, err
	}
	b := &builder{d: d, scn: &Scenario{}}
	if b.scn.name, err = o.str("name"); err != nil {
		return nil, err
	}
	if b.scn.name == "" {
		b.scn.name = strings.TrimSuffix(path.Base(strings.ReplaceAll(file, "\\", "/")), path.Ext(file))
	}
	if b.driver, err = o.str("driver_version"); err != nil {
		return nil, err
	}
	if n, p := o.at("defaults"); n != nil {
		if err := b.defaults(n, p); err != nil {
			return nil, err
		}
	}
	if err := b.gpus(o.at("gpus")); err != nil {
		return nil, err
	}
	if n, p := o.at("fabric"); n != nil {
		if err := b.fabric(n, p); err != nil {
			return nil, err
		}
	}
	if n, p := o.at("faults"); n != nil {
		if err := b.faults(n, p); err != nil {
			return nil, err
		}
	}
	if n, p := o.at("pods"); n != nil {
		if err := b.pods(n, p); err != nil {
			return nil, err
		}
	}
	if n, p := o.at("jobs"); n != nil {
		if err := b.jobs(n, p); err != nil {
			return nil, err
		}
	}
	if n, p := o.at("objects"); n != nil {
		if err := b.objects(n, p); err != nil {
			return nil, err
		}
	}
	if n, p := o.at("host_processes"); n != nil {
		if b.hostProcs, err = b.processList(n, p, true); err != nil {
			return nil, err
		}
	}
	b.finish()
	b.listProcesses()
	return b.scn, nil
}

// builder holds what parsing needs beyond the finished Scenario.
type builder struct {
	d           *decoder
	scn         *Scenario
	driver      string
	defFields   map[uint16]*template
	defMIG      map[uint16]*template
	gpuList     []*simGPU
	uuids, pcis map[string]string // id -> path that set it, for duplicate errors
	lost        []lostFault
	pids        map[uint32]string // process PIDs -> where set, for duplicate errors
	hostProcs   []simProcess
	fab         *fabricDef // nil without a fabric section
}

// simGPU is one physical GPU after count expansion.
type simGPU struct {
	entity    source.Entity
	specs     map[uint16]*fieldSpec
	instances []*simInstance // by instance id
}

type simInstance struct {
	entity source.Entity
	specs  map[uint16]*fieldSpec
	// devices are the instance's MIG devices (compute instances), as NVML
	// lists them: one per compute instance, each with its own UUID.
	devices []source.MIGDevice
}

// device returns the instance's compute instance ci, if it has one.
func (in *simInstance) device(ci int) (source.MIGDevice, bool) {
	for _, d := range in.devices {
		if d.ComputeInstance == ci {
			return d, true
		}
	}
	return source.MIGDevice{}, false
}

func (g *simGPU) instance(id int) *simInstance {
	for _, in := range g.instances {
		if in.entity.GPUInstance == id {
			return in
		}
	}
	return nil
}

func (b *builder) defaults(n *yaml.Node, p string) error {
	o, err := b.d.object(n, p, "fields", "mig_fields")
	if err != nil {
		return err
	}
	if v, vp := o.at("fields"); v != nil {
		if b.defFields, err = b.d.fieldMap(v, vp, fields.LevelGPU); err != nil {
			return err
		}
	}
	if v, vp := o.at("mig_fields"); v != nil {
		if b.defMIG, err = b.d.fieldMap(v, vp, fields.LevelGPUInstance); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) gpus(n *yaml.Node, p string) error {
	items, err := b.d.list(n, p)
	if err != nil {
		return err
	}
	b.uuids, b.pcis = map[string]string{}, map[string]string{}
	for i, item := range items {
		if err := b.gpu(item, indexPath(p, i)); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) gpu(n *yaml.Node, p string) error {
	d := b.d
	o, err := d.object(n, p, "model", "memory_mib", "count", "uuid", "pci_bus_id", "fields", "mig", "sharing")
	if err != nil {
		return err
	}
	if err := o.require("model", "memory_mib"); err != nil {
		return err
	}
	model, err := o.str("model")
	if err != nil {
		return err
	}
	mem, err := o.integer("memory_mib", 1, maxMemoryMiB)
	if err != nil {
		return err
	}
	count := int64(1)
	if o.has("count") {
		if count, err = o.integer("count", 1, maxGPUs); err != nil {
			return err
		}
	}
	if len(b.gpuList)+int(count) > maxGPUs {
		return d.errf(o.node, p, "more than %d GPUs", maxGPUs)
	}
	uuid, pci, err := b.gpuIDs(o, count)
	if err != nil {
		return err
	}
	var own map[uint16]*template
	if v, vp := o.at("fields"); v != nil {
		if own, err = d.fieldMap(v, vp, fields.LevelGPU); err != nil {
			return err
		}
	}
	var migs []migDef
	if v, vp := o.at("mig"); v != nil {
		if migs, err = b.migDefs(v, vp, mem); err != nil {
			return err
		}
		if t := own[fieldGPUUtil]; t != nil && t.gen != nil {
			return d.errf(t.keyNode, keyPath(p, "fields"), "%s is blank for a GPU in MIG mode, as DCGM reports it; set the instances' DCGM_FI_PROF_GR_ENGINE_ACTIVE instead", t.field.DCGMName)
		}
	}
	share, err := b.sharing(o, len(migs) > 0)
	if err != nil {
		return err
	}
	for range count {
		idx := len(b.gpuList)
		if share.replicas > 0 {
			if b.scn.sharing == nil {
				b.scn.sharing = map[int]gpuSharing{}
			}
			b.scn.sharing[idx] = share
		}
		g := &simGPU{entity: source.Entity{
			Kind:        source.GPU,
			GPU:         idx,
			UUID:        uuid,
			Device:      "nvidia" + strconv.Itoa(idx),
			Model:       model,
			PCIBusID:    pci,
			MemoryBytes: uint64(mem) << 20,
		}}
		if g.entity.UUID == "" {
			g.entity.UUID = gpuUUID(b.scn.name, idx)
		}
		if g.entity.PCIBusID == "" {
			g.entity.PCIBusID = pciBusID(idx)
		}
		if err := b.claim(o, g.entity.UUID, g.entity.PCIBusID); err != nil {
			return err
		}
		salt := uint64(idx) << 16
		g.specs = merge(salt, mem, b.defFields, own)
		if len(migs) > 0 {
			delete(g.specs, fieldGPUUtil)
		}
		for _, m := range migs {
			in := &simInstance{entity: g.entity}
			in.entity.Kind = source.GPUInstance
			in.entity.MemoryBytes = uint64(m.memMiB) << 20
			in.entity.GPUInstance = m.id
			in.entity.ComputeInstance = -1
			in.entity.MIGProfile = m.profile
			in.entity.MIGUUID = m.uuid
			if m.placement >= 0 {
				in.entity.MIGPlacementStart, in.entity.MIGPlacementKnown = m.placement, true
			}
			if in.entity.MIGUUID == "" {
				in.entity.MIGUUID = migUUID(b.scn.name, idx, m.id)
			}
			if err := b.claim(o, in.entity.MIGUUID, ""); err != nil {
				return err
			}
			if err := b.computeInstances(o, in, idx, m); err != nil {
				return err
			}
			in.specs = merge(salt+uint64(m.id)+1, m.memMiB, b.defMIG, m.fields)
			g.instances = append(g.instances, in)
		}
		sort.Slice(g.instances, func(i, j int) bool { return g.instances[i].entity.GPUInstance < g.instances[j].entity.GPUInstance })
		b.gpuList = append(b.gpuList, g)
	}
	return nil
}

// gpuIDs reads the optional uuid and pci_bus_id, which name one GPU only.
func (b *builder) gpuIDs(o *object, count int64) (uuid, pci string, err error) {
	for _, key := range []string{"uuid", "pci_bus_id"} {
		if v, vp := o.at(key); v != nil && count > 1 {
			return "", "", b.d.errf(v, vp, "cannot be combined with count %d: each GPU needs its own", count)
		}
	}
	if uuid, err = o.str("uuid"); err != nil {
		return "", "", err
	}
	if v, vp := o.at("uuid"); v != nil && !strings.HasPrefix(uuid, "GPU-") {
		return "", "", b.d.errf(v, vp, "GPU UUID %q does not start with GPU-", uuid)
	}
	pci, err = o.str("pci_bus_id")
	return uuid, pci, err
}

// claim records the ids of one entity and rejects duplicates.
func (b *builder) claim(o *object, uuid, pci string) error {
	if prev, dup := b.uuids[uuid]; dup {
		return b.d.errf(o.node, o.path, "UUID %s is also used by %s", uuid, prev)
	}
	b.uuids[uuid] = o.path
	if pci == "" {
		return nil
	}
	if prev, dup := b.pcis[pci]; dup {
		return b.d.errf(o.node, o.path, "PCI bus id %s is also used by %s", pci, prev)
	}
	b.pcis[pci] = o.path
	return nil
}

// migDef is one MIG GPU instance as written.
type migDef struct {
	profile string
	id      int
	memMiB  int64
	uuid    string
	fields  map[uint16]*template
	// cis are the instance's compute instances (compute_instances); none
	// given is one compute instance spanning the instance, under the
	// instance's UUID.
	cis []ciDef
	// placement is the instance's placement start (placement_start), -1
	// when the scenario does not give it.
	placement int
}

func (b *builder) migDefs(n *yaml.Node, p string, gpuMiB int64) ([]migDef, error) {
	d := b.d
	items, err := d.list(n, p)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, d.errf(resolve(n), p, "a GPU in MIG mode needs at least one instance (leave mig out otherwise)")
	}
	var out []migDef
	seen := map[int]int{}
	total := int64(0)
	for i, item := range items {
		ip := indexPath(p, i)
		o, err := d.object(item, ip, "profile", "gpu_instance", "memory_mib", "uuid", "placement_start", "compute_instances", "fields")
		if err != nil {
			return nil, err
		}
		if err := o.require("profile", "gpu_instance", "memory_mib"); err != nil {
			return nil, err
		}
		var m migDef
		if m.profile, err = o.str("profile"); err != nil {
			return nil, err
		}
		id, err := o.integer("gpu_instance", 0, maxInstanceID)
		if err != nil {
			return nil, err
		}
		m.id = int(id)
		if prev, dup := seen[m.id]; dup {
			v, vp := o.at("gpu_instance")
			return nil, d.errf(v, vp, "GPU instance %d is also %s", m.id, indexPath(p, prev))
		}
		seen[m.id] = i
		if m.memMiB, err = o.integer("memory_mib", 1, maxMemoryMiB); err != nil {
			return nil, err
		}
		total += m.memMiB
		if m.uuid, err = o.str("uuid"); err != nil {
			return nil, err
		}
		if v, vp := o.at("uuid"); v != nil && !strings.HasPrefix(m.uuid, "MIG-") {
			return nil, d.errf(v, vp, "MIG UUID %q does not start with MIG-", m.uuid)
		}
		// placement_start: the first memory slice of the instance, as NVML's
		// nvmlGpuInstanceInfo_t.placement.start gives it (at most 7 on
		// today's GPUs; the bound is generous) and NVIDIA's DRA driver names
		// MIG devices with.
		m.placement = -1
		if v, _ := o.at("placement_start"); v != nil {
			start, err := o.integer("placement_start", 0, 31)
			if err != nil {
				return nil, err
			}
			m.placement = int(start)
		}
		if v, vp := o.at("compute_instances"); v != nil {
			if m.cis, err = b.ciDefs(v, vp); err != nil {
				return nil, err
			}
		}
		if v, vp := o.at("fields"); v != nil {
			if m.fields, err = d.fieldMap(v, vp, fields.LevelGPUInstance); err != nil {
				return nil, err
			}
		}
		out = append(out, m)
	}
	if total > gpuMiB {
		return nil, d.errf(resolve(n), p, "instances hold %d MiB, more than the GPU's %d MiB", total, gpuMiB)
	}
	return out, nil
}

// merge instantiates one entity's fields: defaults, overridden by its own,
// then the framebuffer derivations. Explicitly blank fields stay blank.
func merge(salt uint64, memMiB int64, defaults, own map[uint16]*template) map[uint16]*fieldSpec {
	specs := make(map[uint16]*fieldSpec, len(defaults)+len(own)+2)
	for id, t := range defaults {
		specs[id] = t.instantiate(salt)
	}
	for id, t := range own {
		specs[id] = t.instantiate(salt)
	}
	if specs[fieldFBTotal] == nil {
		specs[fieldFBTotal] = &fieldSpec{gen: constant{float64(memMiB)}, integer: true}
	}
	if used := specs[fieldFBUsed]; specs[fieldFBFree] == nil && used != nil && used.gen != nil {
		free := &freeMemory{total: specs[fieldFBTotal], used: used, reserved: specs[fieldFBReserved]}
		specs[fieldFBFree] = &fieldSpec{gen: free, integer: used.integer}
	}
	return specs
}

// finish lays out the entities, applies the XID faults and builds the
// inventory timeline.
func (b *builder) finish() {
	s := b.scn
	for _, g := range b.gpuList {
		s.entities = append(s.entities, g.entity)
		s.specs = append(s.specs, g.specs)
	}
	for _, g := range b.gpuList {
		for _, in := range g.instances {
			s.entities = append(s.entities, in.entity)
			s.specs = append(s.specs, in.specs)
			s.migDevices = append(s.migDevices, in.devices...)
		}
	}
	ents, specs, down := b.fabricEntities()
	for i := range ents {
		if t, ok := down[i]; ok {
			if s.linkDown == nil {
				s.linkDown = map[int]time.Duration{}
			}
			s.linkDown[len(s.entities)] = t
		}
		s.entities = append(s.entities, ents[i])
		s.specs = append(s.specs, specs[i])
	}
	s.hasLinks = b.fab != nil
	sort.SliceStable(s.xids, func(i, j int) bool { return s.xids[i].at < s.xids[j].at })
	for _, x := range s.xids {
		specs := s.specs[x.gpu]
		sp := specs[fieldXID]
		if sp == nil {
			sp = &fieldSpec{integer: true}
			specs[fieldXID] = sp
		}
		sp.xids = append(sp.xids, x)
	}
	for _, specs := range s.specs {
		for id, sp := range specs {
			if sp.gen == nil && len(sp.xids) == 0 {
				delete(specs, id)
			}
		}
	}
	s.lost = b.lost
	s.timeline = buildTimeline(b.driver, s.entities, s.migDevices, len(b.gpuList), b.lost)
}

// segment is the inventory from one elapsed time until the next segment.
type segment struct {
	from time.Duration
	inv  *source.Inventory
	// rows maps an inventory row to its index in Scenario.entities; gpuRow
	// maps a GPU index to its inventory row, -1 while the GPU is lost.
	rows   []int
	gpuRow []int
}

func buildTimeline(driver string, entities []source.Entity, devices []source.MIGDevice, gpus int, lost []lostFault) []segment {
	points := []time.Duration{0}
	for _, l := range lost {
		points = append(points, l.from)
		if !l.open {
			points = append(points, l.until)
		}
	}
	sort.Slice(points, func(i, j int) bool { return points[i] < points[j] })
	var timeline []segment
	byKey := map[string]segment{}
	prevKey := ""
	for i, t := range points {
		if i > 0 && t == points[i-1] {
			continue
		}
		gone := make([]byte, gpus)
		for _, l := range lost {
			if l.contains(t) {
				gone[l.gpu] = 1
			}
		}
		key := string(gone)
		if len(timeline) > 0 && key == prevKey {
			continue
		}
		prevKey = key
		seg, ok := byKey[key]
		if !ok {
			seg = newSegment(driver, entities, devices, gpus, gone)
			byKey[key] = seg
		}
		seg.from = t
		timeline = append(timeline, seg)
	}
	return timeline
}

func newSegment(driver string, entities []source.Entity, devices []source.MIGDevice, gpus int, gone []byte) segment {
	seg := segment{inv: &source.Inventory{DriverVersion: driver}, gpuRow: make([]int, gpus)}
	for i := range seg.gpuRow {
		seg.gpuRow[i] = -1
	}
	for i, e := range entities {
		// NVSwitches and their ports belong to no GPU (GPU -1).
		if e.GPU >= 0 && gone[e.GPU] == 1 {
			continue
		}
		if e.Kind == source.GPU {
			seg.gpuRow[e.GPU] = len(seg.rows)
		}
		seg.rows = append(seg.rows, i)
		seg.inv.Entities = append(seg.inv.Entities, e)
	}
	for _, d := range devices {
		if gone[d.GPU] != 1 {
			seg.inv.MIGDevices = append(seg.inv.MIGDevices, d)
		}
	}
	return seg
}

// segmentAt returns the inventory segment in force at elapsed time t.
func (s *Scenario) segmentAt(t time.Duration) *segment {
	i := sort.Search(len(s.timeline), func(i int) bool { return s.timeline[i].from > t }) - 1
	return &s.timeline[max(i, 0)]
}

// lostSince reports whether GPU g is lost at elapsed time t, and since
// when it has been gone without a break.
func (s *Scenario) lostSince(g int, t time.Duration) (time.Duration, bool) {
	lost := false
	for _, l := range s.lost {
		lost = lost || l.gpu == g && l.contains(t)
	}
	if !lost {
		return 0, false
	}
	since := t
	for moved := true; moved; {
		moved = false
		for _, l := range s.lost {
			// l covers the instants just before since: the GPU left earlier.
			if l.gpu == g && l.from < since && (l.open || l.until >= since) {
				since, moved = l.from, true
			}
		}
	}
	return since, true
}

// outageAt returns the outage window containing t, if any.
func (s *Scenario) outageAt(t time.Duration) (window, bool) {
	for _, w := range s.outages {
		if w.contains(t) {
			return w, true
		}
	}
	return window{}, false
}

// ciDef is one compute instance of a GPU instance (compute_instances).
type ciDef struct {
	id      int
	profile string
	uuid    string
}

// maxComputeInstanceID bounds compute_instances[].id: a GPU instance has at
// most 7 compute instances (one per compute slice; NVML's
// NVML_COMPUTE_INSTANCE_PROFILE_* go up to 8 slices).
const maxComputeInstanceID = 7

// ciDefs reads a GPU instance's compute_instances: each an id, the MIG
// device's profile as NVML names it without "MIG " ("1c.3g.71gb"), and an
// optional uuid.
func (b *builder) ciDefs(n *yaml.Node, p string) ([]ciDef, error) {
	d := b.d
	items, err := d.list(n, p)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, d.errf(resolve(n), p, "a GPU instance has at least one compute instance (leave compute_instances out for one spanning it)")
	}
	var out []ciDef
	seen := map[int]int{}
	for i, item := range items {
		ip := indexPath(p, i)
		o, err := d.object(item, ip, "id", "profile", "uuid")
		if err != nil {
			return nil, err
		}
		if err := o.require("id", "profile"); err != nil {
			return nil, err
		}
		var c ciDef
		id, err := o.integer("id", 0, maxComputeInstanceID)
		if err != nil {
			return nil, err
		}
		c.id = int(id)
		if prev, dup := seen[c.id]; dup {
			v, vp := o.at("id")
			return nil, d.errf(v, vp, "compute instance %d is also %s", c.id, indexPath(p, prev))
		}
		seen[c.id] = i
		if c.profile, err = o.str("profile"); err != nil {
			return nil, err
		}
		if c.uuid, err = o.str("uuid"); err != nil {
			return nil, err
		}
		if v, vp := o.at("uuid"); v != nil && !strings.HasPrefix(c.uuid, "MIG-") {
			return nil, d.errf(v, vp, "MIG UUID %q does not start with MIG-", c.uuid)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// computeInstances lays out the MIG devices of instance in: NVML lists one
// per compute instance, each with its own UUID (nvidia-smi -L prints
// "MIG 1c.3g.71gb Device 0: (UUID: MIG-…)"), and the device plugin hands
// those UUIDs to pods. A GPU instance split into several compute instances
// has no UUID of its own (source.Entity.MIGUUID empty, as the NVML and
// DCGM sources report it); one with a single compute instance is known by
// that device's UUID.
func (b *builder) computeInstances(o *object, in *simInstance, gpu int, m migDef) error {
	if len(m.cis) == 0 {
		in.devices = []source.MIGDevice{{GPU: gpu, GPUInstance: m.id, ComputeInstance: 0, Profile: m.profile, UUID: in.entity.MIGUUID}}
		return nil
	}
	for _, c := range m.cis {
		uuid := c.uuid
		if uuid == "" {
			uuid = migCIUUID(b.scn.name, gpu, m.id, c.id)
		}
		if len(m.cis) == 1 {
			uuid = in.entity.MIGUUID
		} else if err := b.claim(o, uuid, ""); err != nil {
			return err
		}
		in.devices = append(in.devices, source.MIGDevice{GPU: gpu, GPUInstance: m.id, ComputeInstance: c.id, Profile: c.profile, UUID: uuid})
	}
	if len(m.cis) > 1 {
		in.entity.MIGUUID = ""
	}
	return nil
}
