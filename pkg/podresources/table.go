package podresources

import (
	"cmp"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/resourceslices"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Holder is one container that holds a device.
type Holder struct {
	Namespace string
	Pod       string
	Container string
	// PodUID is empty for data from the kubelet: pod-resources v1 does not
	// report pod UIDs. It is kept for sources that do.
	PodUID string
	// Resource is the device-plugin resource name ("nvidia.com/gpu") or the
	// DRA driver name ("gpu.nvidia.com") the device was allocated through.
	Resource string
	// Shared is set when the container holds a replica of a shared device
	// (time-slicing or MPS "::N", GKE "/vgpuN", a DRA share id), whether or
	// not another container holds another replica right now.
	Shared bool
	// VGPU is the replica of a shared GPU the container holds: N of
	// "GPU-…::N" (time-slicing, MPS), GKE's "/vgpuN" or HAMi's and
	// Volcano's "GPU-…-N" slot, empty otherwise. It
	// is the value of dcgm-exporter's vgpu label (its getSharedGPU in
	// internal/pkg/transformation/kubernetes.go). A container holding
	// several replicas of one device keeps the lowest.
	VGPU string
	// Replicas is how many replicas of the device the container holds
	// through "::N" ids (NVIDIA's k8s-device-plugin sharing, timeSlicing
	// or mps: see ReplicaID); 0 for a whole device and the other shared
	// forms, whose share the id count does not tell.
	Replicas int
	// DRA is the DRA claim device through which the container holds the
	// device; the zero DRAClaim for a device-plugin allocation.
	DRA DRAClaim
}

// DRAClaim is the device of a DRA claim a holder holds a device through:
// the claim (DynamicResource.claim_namespace, claim_name), the device as
// the kubelet names it (ClaimResource.driver_name, pool_name,
// device_name, share_id) and, for a MIG device the node's ResourceSlices
// describe, its "profile" and "uuid" attributes (no uuid for a dynamic-MIG
// device).
type DRAClaim struct {
	Namespace, Name      string
	Driver, Pool, Device string
	ShareID              string
	MIGProfile, MIGUUID  string
}

func compareDRAClaims(a, b DRAClaim) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name),
		strings.Compare(a.Driver, b.Driver), strings.Compare(a.Pool, b.Pool), strings.Compare(a.Device, b.Device),
		strings.Compare(a.ShareID, b.ShareID), strings.Compare(a.MIGProfile, b.MIGProfile), strings.Compare(a.MIGUUID, b.MIGUUID))
}

func compareHolders(a, b Holder) int {
	return cmp.Or(
		strings.Compare(a.Namespace, b.Namespace),
		strings.Compare(a.Pod, b.Pod),
		strings.Compare(a.Container, b.Container),
		strings.Compare(a.Resource, b.Resource),
		strings.Compare(a.PodUID, b.PodUID),
		cmp.Compare(len(a.VGPU), len(b.VGPU)), // numeric order for decimal replicas
		strings.Compare(a.VGPU, b.VGPU),
		cmp.Compare(a.Replicas, b.Replicas),
		compareDRAClaims(a.DRA, b.DRA),
	)
}

func sameContainer(a, b Holder) bool {
	return a.Namespace == b.Namespace && a.Pod == b.Pod && a.Container == b.Container
}

// Table is an immutable snapshot of which containers hold which devices,
// indexed for lookups by inventory entity. The zero Table and a nil *Table
// hold nothing.
type Table struct {
	// entries are every allocation of a matching resource, sorted and
	// deduplicated; they define the table's content (see Equal).
	entries []entry

	gpuByUUID  map[string][]Holder // by uuidKey("GPU-…")
	gpuByIndex map[int][]Holder
	gpuByMinor map[int][]Holder
	migByUUID  map[string][]Holder       // by uuidKey("MIG-…")
	migByGICI  map[legacyKey][]Holder    // legacy ids, exact compute instance
	migByGI    map[legacyKey][]Holder    // legacy ids, any compute instance (CI -1)
	migByMinor map[minorGI][]Holder      // GKE nvidiaN/giM
	migByPlace map[placementKey][]Holder // DRA dynamic MIG
	claims     []Claim
	malformed  []malformedID
	reported   []string // every resource and DRA driver name the response named
	// invalidUTF8 counts the strings of the response that were not valid
	// UTF-8 and were kept with U+FFFD in place of the invalid bytes.
	invalidUTF8 int
	// replicas is the number of replicas each shared device is advertised
	// as, by lookup key, from the kubelet's allocatable ids
	// (WithAllocatable); allocMalformed are the allocatable ids that did
	// not parse.
	replicas       map[any]int
	allocMalformed []string
}

// entry is one (device id, container) allocation. ID is the zero DeviceID
// when Raw did not parse. Key is the lookup key (indexKey of ID, or what
// the ResourceSlices resolved a DRA device to), nil when no entity can
// match; Reason then says why when it is not the ID's form.
type entry struct {
	Raw    string
	ID     DeviceID
	Key    any
	Reason string
	Holder Holder
}

// malformedID is an id that did not parse, kept for the client's log line.
// Reason is one of parseDeviceID's fixed reasons.
type malformedID struct {
	Resource string
	ID       string
	Reason   string
	Holder   Holder
}

type legacyKey struct {
	uuid   string
	gi, ci int
}

type minorGI struct{ minor, gi int }

// NewTable builds a table from a List response. Device-plugin devices are
// kept when their resource name matches one of resources (exact names or
// path.Match globs such as "nvidia.com/mig-*"), DRA devices when their
// driver name does. Device-plugin ids are parsed as idType says; DRA device
// names as IDTypeDRA. Ids that do not parse are kept as unmatched entries.
// Every string taken from resp is made valid UTF-8 here, where it enters
// (invalid bytes become U+FFFD), so labels and log lines built from the
// table are valid.
func NewTable(resp *podresourcesv1.ListPodResourcesResponse, resources []string, idType IDType) *Table {
	return NewTableDRA(resp, resources, idType, nil)
}

// NewTableDRA is NewTable resolving DRA devices through dra (the node's
// ResourceSlices): a whole GPU by its uuid attribute, a static MIG device
// by its uuid, a dynamic-MIG device by its parentUUID and the placement
// start of its name. A DRA device dra does not know is matched by minor
// number when it is a whole GPU ("gpu-<minor>") and left unmatched
// (UnmatchedNoResourceSlice) otherwise. dra may be nil.
func NewTableDRA(resp *podresourcesv1.ListPodResourcesResponse, resources []string, idType IDType, dra DRADevices) *Table {
	b := tableBuilder{resources: resources, reported: map[string]bool{}, dra: dra}
	for _, pod := range resp.GetPodResources() {
		ns, name := b.valid(pod.GetNamespace()), b.valid(pod.GetName())
		for _, ctr := range pod.GetContainers() {
			h := Holder{Namespace: ns, Pod: name, Container: b.valid(ctr.GetName())}
			for _, dev := range ctr.GetDevices() {
				h.Resource = b.valid(dev.GetResourceName())
				if !b.want(h.Resource) {
					continue
				}
				for _, id := range dev.GetDeviceIds() {
					b.add(b.valid(id), idType, h, false)
				}
			}
			for _, dyn := range ctr.GetDynamicResources() {
				for _, cr := range dyn.GetClaimResources() {
					h.Resource = b.valid(cr.GetDriverName())
					if !b.want(h.Resource) || cr.GetDeviceName() == "" {
						continue
					}
					b.addDRA(dyn, cr, h)
				}
			}
		}
	}
	return b.build()
}

type tableBuilder struct {
	resources   []string
	reported    map[string]bool // name -> matches a configured name
	entries     []entry
	malformed   []malformedID
	invalidUTF8 int
	dra         DRADevices
	claims      []Claim
}

// valid returns s, or a copy with U+FFFD for each run of invalid bytes; the
// check does not allocate when s is valid.
func (b *tableBuilder) valid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b.invalidUTF8++
	return strings.ToValidUTF8(s, string(utf8.RuneError))
}

func (b *tableBuilder) want(resource string) bool {
	ok, seen := b.reported[resource]
	if !seen {
		ok = MatchResource(b.resources, resource)
		b.reported[resource] = ok
	}
	return ok
}

func (b *tableBuilder) add(raw string, idType IDType, h Holder, shared bool) {
	id, reason := parseDeviceID(raw, idType)
	if reason != "" {
		b.malformed = append(b.malformed, malformedID{Resource: h.Resource, ID: raw, Reason: reason, Holder: h})
		b.entries = append(b.entries, entry{Raw: raw, Holder: h})
		return
	}
	h.Shared = shared || id.Shared()
	if id.Replica >= 0 {
		h.VGPU = strconv.Itoa(id.Replica)
	}
	if ReplicaID(id) {
		h.Replicas = 1
	}
	b.entries = append(b.entries, entry{Raw: raw, ID: id, Key: indexKey(id), Holder: h})
}

// addDRA adds one device of a DRA claim, resolved through b.dra.
func (b *tableBuilder) addDRA(dyn *podresourcesv1.DynamicResource, cr *podresourcesv1.ClaimResource, h Holder) {
	c := Claim{Namespace: b.valid(dyn.GetClaimNamespace()), Name: b.valid(dyn.GetClaimName()),
		Driver: h.Resource, Pool: b.valid(cr.GetPoolName()), Device: b.valid(cr.GetDeviceName()),
		ShareID: b.valid(cr.GetShareId())}
	h.Shared = cr.ShareId != nil
	if b.dra != nil {
		c.Slice, c.Resolved = b.dra.Lookup(resourceslices.Key{Driver: c.Driver, Pool: c.Pool, Device: c.Device})
	}
	h.DRA = DRAClaim{Namespace: c.Namespace, Name: c.Name, Driver: c.Driver, Pool: c.Pool, Device: c.Device, ShareID: c.ShareID}
	if c.Resolved && c.Slice.Type == resourceslices.TypeMIG {
		h.DRA.MIGProfile, h.DRA.MIGUUID = c.Slice.Profile, c.Slice.UUID
	}
	c.Holder = h
	b.claims = append(b.claims, c)

	id, reason := parseDeviceID(c.Device, IDTypeDRA)
	e := entry{Raw: c.Device, ID: id, Holder: h}
	if reason == "" {
		e.Key = indexKey(id)
	}
	if c.Resolved {
		if k, ok := draKey(id, c.Slice); ok {
			e.Key = k
		}
	}
	switch {
	case e.Key != nil:
	case reason != "" && !c.Resolved:
		b.malformed = append(b.malformed, malformedID{Resource: h.Resource, ID: c.Device, Reason: reason, Holder: h})
	case id.Kind != KindDRAVFIO && c.Slice.Type != resourceslices.TypeVFIO:
		// A MIG device (or a name of another form) needs its slice.
		e.Reason = UnmatchedNoResourceSlice
		if c.Resolved {
			e.Reason = UnmatchedUnsupportedForm
		}
	}
	b.entries = append(b.entries, e)
}

func (b *tableBuilder) build() *Table {
	t := &Table{malformed: b.malformed, invalidUTF8: b.invalidUTF8, claims: b.claims}
	slices.SortFunc(t.claims, compareClaims)
	for name := range b.reported {
		t.reported = append(t.reported, name)
	}
	slices.Sort(t.reported)

	slices.SortFunc(b.entries, func(a, b entry) int {
		return cmp.Or(strings.Compare(a.Raw, b.Raw), compareHolders(a.Holder, b.Holder), cmpBool(a.Holder.Shared, b.Holder.Shared),
			strings.Compare(a.Reason, b.Reason))
	})
	t.entries = slices.Compact(b.entries)

	lists := map[any][]Holder{}
	for _, e := range t.entries {
		if key := e.Key; key != nil {
			lists[key] = append(lists[key], e.Holder)
			if k, ok := key.(legacyKey); ok {
				k.ci = -1
				lists[k] = append(lists[k], e.Holder)
			}
		}
	}
	for key, hs := range lists {
		hs = normalizeHolders(hs)
		switch k := key.(type) {
		case gpuUUIDKey:
			t.gpuByUUID = put(t.gpuByUUID, string(k), hs)
		case migUUIDKey:
			t.migByUUID = put(t.migByUUID, string(k), hs)
		case gpuIndexKey:
			t.gpuByIndex = put(t.gpuByIndex, int(k), hs)
		case gpuMinorKey:
			t.gpuByMinor = put(t.gpuByMinor, int(k), hs)
		case legacyKey:
			if k.ci < 0 {
				t.migByGI = put(t.migByGI, k, hs)
			} else {
				t.migByGICI = put(t.migByGICI, k, hs)
			}
		case minorGI:
			t.migByMinor = put(t.migByMinor, k, hs)
		case placementKey:
			t.migByPlace = put(t.migByPlace, k, hs)
		}
	}
	return t
}

type (
	gpuUUIDKey  string
	migUUIDKey  string
	gpuIndexKey int
	gpuMinorKey int
)

// indexKey is the lookup key of an attributable id, nil for forms that no
// inventory entity can be matched to (MIG device indexes, DRA MIG and VFIO
// names, ids that did not parse).
func indexKey(id DeviceID) any {
	switch id.Kind {
	case KindGPUUUID, KindGPUSplit:
		return gpuUUIDKey(uuidKey(id.UUID))
	case KindMIGUUID:
		return migUUIDKey(uuidKey(id.UUID))
	case KindLegacyMIG:
		return legacyKey{uuid: uuidKey(id.UUID), gi: id.GPUInstance, ci: id.ComputeInstance}
	case KindIndex:
		return gpuIndexKey(id.GPU)
	case KindDeviceName, KindDRAGPU:
		return gpuMinorKey(id.GPU)
	case KindGKEMIG:
		return minorGI{minor: id.GPU, gi: id.GPUInstance}
	default:
		return nil
	}
}

func put[K comparable](m map[K][]Holder, k K, hs []Holder) map[K][]Holder {
	if m == nil {
		m = map[K][]Holder{}
	}
	m[k] = hs
	return m
}

// normalizeHolders sorts holders and keeps one per container, so that a
// container never yields two series for one entity; the kept holder has the
// first resource name in sort order, is Shared if any merged one was and
// holds the replicas of all of them (each from a distinct id).
func normalizeHolders(hs []Holder) []Holder {
	slices.SortFunc(hs, compareHolders)
	out := hs[:0]
	for _, h := range hs {
		if n := len(out); n > 0 && sameContainer(out[n-1], h) {
			out[n-1].Shared = out[n-1].Shared || h.Shared
			out[n-1].Replicas += h.Replicas
			continue
		}
		out = append(out, h)
	}
	return slices.Clip(out)
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	default:
		return -1
	}
}

// Holders returns every container holding entity e, sorted by namespace,
// pod and container, one holder per container (a container holding the
// entity through several ids or resources is listed once). A GPU entity is matched by
// its UUID (and "::N" replicas and "-N" split slots of it), its index and its nvidiaN device
// name (also the DRA name gpu-<minor>); a GPU instance entity by its MIG
// UUID, the legacy MIG-GPU-<uuid>/<gi>/<ci> id and GKE's nvidiaN/giM. An id
// of a whole GPU never attributes that GPU's MIG instances, nor the reverse.
// The result is shared by every caller: do not modify it. Holders is safe
// for concurrent use and on a nil *Table.
func (t *Table) Holders(e *source.Entity) []Holder {
	if t == nil || e == nil || len(t.entries) == 0 {
		return nil
	}
	var found [4][]Holder
	n := 0
	add := func(hs []Holder) {
		if len(hs) > 0 {
			found[n] = hs
			n++
		}
	}
	minor, hasMinor := deviceMinor(e.Device)
	switch e.Kind {
	case source.GPU, source.NVLink: // a GPU's links are held with it; a switch port has no GPU
		if e.UUID != "" {
			add(t.gpuByUUID[uuidKey(e.UUID)])
		}
		add(t.gpuByIndex[e.GPU])
		if hasMinor {
			add(t.gpuByMinor[minor])
		}
	case source.GPUInstance:
		if e.MIGUUID != "" {
			add(t.migByUUID[uuidKey(e.MIGUUID)])
		}
		if e.UUID != "" {
			k := legacyKey{uuid: uuidKey(e.UUID), gi: e.GPUInstance, ci: e.ComputeInstance}
			if k.ci < 0 {
				add(t.migByGI[k])
			} else {
				add(t.migByGICI[k])
			}
		}
		if hasMinor {
			add(t.migByMinor[minorGI{minor: minor, gi: e.GPUInstance}])
		}
		if e.MIGPlacementKnown && e.UUID != "" {
			add(t.migByPlace[placementKey{parent: uuidKey(e.UUID), start: e.MIGPlacementStart}])
		}
	}
	switch n {
	case 0:
		return nil
	case 1:
		return found[0]
	}
	var all []Holder
	for _, hs := range found[:n] {
		all = append(all, hs...)
	}
	return normalizeHolders(all)
}

// deviceMinor parses "nvidia<minor>".
func deviceMinor(device string) (int, bool) {
	s, ok := strings.CutPrefix(device, "nvidia")
	if !ok {
		return 0, false
	}
	return number(s)
}

// Reasons a device id is unmatched: the values of the reason label of
// gpu_exporter_podresources_unmatched_devices.
const (
	// UnmatchedMalformed: the id does not parse (see ParseDeviceID).
	UnmatchedMalformed = "malformed"
	// UnmatchedUnsupportedForm: the id parses, in a form no inventory entity
	// can be matched to (MIG device indexes "N:M", DRA MIG and VFIO names).
	UnmatchedUnsupportedForm = "unsupported_form"
	// UnmatchedUnknownGPU: the id names a GPU or MIG instance the source
	// does not report.
	UnmatchedUnknownGPU = "unknown_gpu"
	// UnmatchedNoResourceSlice: a DRA device that only the node's
	// ResourceSlices can name (a MIG device, a name of another form), and
	// no slice names it: DRA attribution is off, the API server refuses or
	// is unreachable, or the slice has not been seen yet.
	UnmatchedNoResourceSlice = "no_resourceslice"
)

// UnmatchedCounts is the number of distinct unmatched device ids by reason;
// their sum is len(Unmatched(inv)).
type UnmatchedCounts struct {
	Malformed, UnsupportedForm, UnknownGPU, NoResourceSlice int
}

// ByReason calls f with each reason label value and its count, in a fixed
// order, zeros included.
func (u UnmatchedCounts) ByReason(f func(reason string, n int)) {
	f(UnmatchedMalformed, u.Malformed)
	f(UnmatchedUnsupportedForm, u.UnsupportedForm)
	f(UnmatchedUnknownGPU, u.UnknownGPU)
	f(UnmatchedNoResourceSlice, u.NoResourceSlice)
}

// Unmatched returns the device ids (as the kubelet wrote them, sorted, each
// once) that no entity of inv matches: ids of GPUs the source does not see,
// ids that did not parse, and forms that cannot be matched (MIG device
// indexes "N:M", DRA MIG and VFIO names). Nil-safe on t and inv.
func (t *Table) Unmatched(inv *source.Inventory) []string {
	var out []string
	t.unmatched(inv, func(raw, _ string) { out = append(out, raw) })
	return out
}

// UnmatchedCounts counts the ids Unmatched returns by reason. Nil-safe on t
// and inv.
func (t *Table) UnmatchedCounts(inv *source.Inventory) UnmatchedCounts {
	var u UnmatchedCounts
	t.unmatched(inv, func(_, reason string) {
		switch reason {
		case UnmatchedMalformed:
			u.Malformed++
		case UnmatchedUnsupportedForm:
			u.UnsupportedForm++
		case UnmatchedNoResourceSlice:
			u.NoResourceSlice++
		default:
			u.UnknownGPU++
		}
	})
	return u
}

// unmatched calls f once per distinct unmatched raw id, in sort order, with
// its reason.
func (t *Table) unmatched(inv *source.Inventory, f func(raw, reason string)) {
	if t == nil || len(t.entries) == 0 {
		return
	}
	known := map[any]bool{}
	if inv != nil {
		for i := range inv.Entities {
			for _, k := range entityKeys(&inv.Entities[i]) {
				known[k] = true
			}
		}
	}
	last := ""
	for i, e := range t.entries {
		if i > 0 && e.Raw == last {
			continue
		}
		last = e.Raw
		k := e.Key
		switch {
		case k == nil && e.Reason != "":
			f(e.Raw, e.Reason)
		case k == nil && e.ID.Kind == KindUnknown:
			f(e.Raw, UnmatchedMalformed)
		case k == nil:
			f(e.Raw, UnmatchedUnsupportedForm)
		case known[k]:
		default:
			if lk, ok := k.(legacyKey); ok {
				if lk.ci = -1; known[lk] {
					continue
				}
			}
			f(e.Raw, UnmatchedUnknownGPU)
		}
	}
}

// entityKeys are the index keys an entity answers to, the mirror of Holders.
// A GPU instance reported as a whole (ComputeInstance -1) answers to legacy
// ids of any of its compute instances.
func entityKeys(e *source.Entity) []any {
	minor, hasMinor := deviceMinor(e.Device)
	var keys []any
	switch e.Kind {
	case source.GPU:
		keys = append(keys, gpuUUIDKey(uuidKey(e.UUID)), gpuIndexKey(e.GPU))
		if hasMinor {
			keys = append(keys, gpuMinorKey(minor))
		}
	case source.GPUInstance:
		keys = append(keys, migUUIDKey(uuidKey(e.MIGUUID)),
			legacyKey{uuid: uuidKey(e.UUID), gi: e.GPUInstance, ci: e.ComputeInstance})
		if hasMinor {
			keys = append(keys, minorGI{minor: minor, gi: e.GPUInstance})
		}
		if e.MIGPlacementKnown {
			keys = append(keys, placementKey{parent: uuidKey(e.UUID), start: e.MIGPlacementStart})
		}
	}
	return keys
}

// Equal reports whether two tables hold the same allocations and the same
// DRA claims, as the ResourceSlices described them: a slice change that
// alters what a claim's device is makes the tables differ.
func (t *Table) Equal(o *Table) bool {
	return slices.Equal(t.allocations(), o.allocations()) && slices.Equal(t.Claims(), o.Claims()) &&
		maps.Equal(t.replicaCounts(), o.replicaCounts()) && slices.Equal(t.allocationMalformed(), o.allocationMalformed())
}

func (t *Table) allocations() []entry {
	if t == nil {
		return nil
	}
	return t.entries
}

// Len returns the number of (device id, container) allocations in the
// table, including ids that did not parse.
func (t *Table) Len() int { return len(t.allocations()) }

// MatchResource reports whether name equals one of patterns or matches one
// as a path.Match glob.
func MatchResource(patterns []string, name string) bool {
	for _, p := range patterns {
		if p == name {
			return true
		}
		if ok, err := path.Match(p, name); err == nil && ok {
			return true
		}
	}
	return false
}

// uuidKey folds the case of the hex digits of a "GPU-…" or "MIG-…" UUID. The
// prefix is kept as written (NVML and the parser both want it upper case),
// and NVML's own lower-case spelling comes back without an allocation.
func uuidKey(s string) string {
	if len(s) < 4 {
		return s
	}
	rest := s[4:]
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; c >= 'A' && c <= 'Z' {
			return s[:4] + strings.ToLower(rest)
		}
	}
	return s
}

// Claims returns every device of a DRA claim the kubelet reported for a
// configured driver, sorted, with what the ResourceSlices said of it. The
// result is shared: do not modify it.
func (t *Table) Claims() []Claim {
	if t == nil {
		return nil
	}
	return t.claims
}

func compareClaims(a, b Claim) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name),
		strings.Compare(a.Driver, b.Driver), strings.Compare(a.Pool, b.Pool), strings.Compare(a.Device, b.Device),
		strings.Compare(a.ShareID, b.ShareID), compareHolders(a.Holder, b.Holder))
}
