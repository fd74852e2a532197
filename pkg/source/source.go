// Package source defines what every GPU data source (DCGM, NVML, the
// simulator) returns: an inventory of entities and, per collection, a Sample
// of typed field values. Sources translate their own "no value" markers into
// Blank so that no other package ever sees a sentinel number.
package source

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// ErrUnavailable reports that a source cannot reach its backend right now
// (hostengine gone, library missing, simulated outage). Callers retry.
var ErrUnavailable = errors.New("source unavailable")

// Source is a GPU data source. Calls are made by one goroutine (the
// collector); implementations need not be safe for concurrent use.
type Source interface {
	// Name is a short identifier: "dcgm", "nvml" or "sim".
	Name() string
	// Inventory returns the current entities. A source returns the same
	// pointer until the inventory changes, so callers may compare pointers
	// to detect a change.
	Inventory(ctx context.Context) (*Inventory, error)
	// Watch sets the fields to read. It replaces any earlier set. Fields a
	// source cannot provide are left out of later samples' columns' values
	// (their values are Blank), not rejected, unless none can be provided.
	Watch(ctx context.Context, set []fields.Field) error
	// Read returns the latest value of every watched field for every entity.
	Read(ctx context.Context) (*Sample, error)
	// Close releases the backend.
	Close() error
}

// EntityKind is the kind of thing a field value belongs to.
type EntityKind uint8

// Entity kinds.
const (
	GPU EntityKind = iota
	GPUInstance
	NVSwitch
	NVLink
)

// Level returns the catalog level matching the kind.
func (k EntityKind) Level() fields.Level {
	switch k {
	case GPUInstance:
		return fields.LevelGPUInstance
	case NVSwitch:
		return fields.LevelNVSwitch
	case NVLink:
		return fields.LevelNVLink
	default:
		return fields.LevelGPU
	}
}

// String names the kind.
func (k EntityKind) String() string {
	switch k {
	case GPUInstance:
		return "gpu_instance"
	case NVSwitch:
		return "nvswitch"
	case NVLink:
		return "nvlink"
	default:
		return "gpu"
	}
}

// Entity is one GPU, MIG GPU instance, NVSwitch or NVLink.
type Entity struct {
	Kind EntityKind
	// GPU is the index of the physical GPU (the parent GPU for a MIG instance
	// or NVLink).
	GPU int
	// UUID is the physical GPU's UUID ("GPU-…"); the parent's for MIG.
	UUID string
	// Device is the device node name, "nvidia<minor>".
	Device string
	// Model is the product name ("NVIDIA H100 80GB HBM3").
	Model string
	// PCIBusID is the PCI bus id ("00000000:3B:00.0").
	PCIBusID string
	// MemoryBytes is the GPU's (or instance's) total memory, when known.
	MemoryBytes uint64

	// GPUInstance is the MIG GPU instance id (Kind == GPUInstance).
	GPUInstance int
	// ComputeInstance is the MIG compute instance id, -1 when the instance
	// is reported as a whole (a GPU instance split into several compute
	// instances: Inventory.MIGDevices lists them).
	ComputeInstance int
	// MIGProfile is the instance profile ("1g.10gb").
	MIGProfile string
	// MIGPlacementStart is the GPU instance's placement start, the first
	// memory slice it occupies (NVML nvmlGpuInstanceInfo_t.placement.start),
	// valid when MIGPlacementKnown. NVIDIA's DRA driver names a MIG device
	// by it, and a dynamic-MIG device is found by it (docs/dra.md).
	MIGPlacementStart int
	MIGPlacementKnown bool
	// MIGUUID is the MIG device UUID ("MIG-…") of a GPU instance with one
	// compute instance; empty for one split into several, whose MIG
	// devices each have their own (Inventory.MIGDevices).
	MIGUUID string

	// Link is the NVLink index (Kind == NVLink); ID the NVSwitch id (Kind
	// == NVSwitch, or an NVLink whose Parent is NVSwitch).
	Link int
	ID   int
	// Parent is the kind of entity an NVLink belongs to: GPU (the zero
	// value; GPU, UUID, Device, Model and PCIBusID are the GPU's) or
	// NVSwitch (ID is the switch, GPU is -1).
	Parent EntityKind
	// PeerType and Peer name the far end of an NVLink when the source knows
	// it: PeerType "gpu" (Peer is the GPU index) or "nvswitch" (Peer is the
	// switch id); empty when unknown.
	PeerType, Peer string
}

// Peer types of Entity.PeerType.
const (
	PeerGPU      = "gpu"
	PeerNVSwitch = "nvswitch"
)

// Key identifies the entity within an inventory: kind, GPU index and the
// instance or link number.
func (e *Entity) Key() string {
	switch e.Kind {
	case GPUInstance:
		return "gi:" + strconv.Itoa(e.GPU) + ":" + strconv.Itoa(e.GPUInstance)
	case NVLink:
		if e.Parent == NVSwitch {
			return "swlink:" + strconv.Itoa(e.ID) + ":" + strconv.Itoa(e.Link)
		}
		return "link:" + strconv.Itoa(e.GPU) + ":" + strconv.Itoa(e.Link)
	case NVSwitch:
		return "switch:" + strconv.Itoa(e.ID)
	default:
		return "gpu:" + strconv.Itoa(e.GPU)
	}
}

// Inventory is the set of entities a source currently sees.
type Inventory struct {
	// DriverVersion is the NVIDIA driver version, when known.
	DriverVersion string
	// Entities are ordered GPUs first (by index), each followed by nothing
	// else; then MIG instances by GPU and instance id; then NVLinks and
	// NVSwitches.
	Entities []Entity
	// MIGDevices are the MIG devices (compute instances) of the GPU
	// instances in Entities, by GPU, GPU instance and compute instance id;
	// nil when the source does not list them.
	MIGDevices []MIGDevice
}

// GPUs returns the number of physical GPUs in the inventory.
func (inv *Inventory) GPUs() int {
	n := 0
	for i := range inv.Entities {
		if inv.Entities[i].Kind == GPU {
			n++
		}
	}
	return n
}

// ValueKind says which member of a Value holds the value.
type ValueKind uint8

// Value kinds. The zero Value is Blank.
const (
	Blank ValueKind = iota
	Int
	Float
	String
)

// Value is one field value. Blank means "no value": not supported, not yet
// sampled, not permitted or not applicable; it is never exported.
type Value struct {
	Kind  ValueKind
	Int   int64
	Float float64
	Str   string
}

// IntValue returns an integer value.
func IntValue(v int64) Value { return Value{Kind: Int, Int: v} }

// FloatValue returns a floating-point value.
func FloatValue(v float64) Value { return Value{Kind: Float, Float: v} }

// StringValue returns a string value.
func StringValue(v string) Value { return Value{Kind: String, Str: v} }

// Number returns the value as a float64; ok is false for Blank and String.
func (v Value) Number() (f float64, ok bool) {
	switch v.Kind {
	case Int:
		return float64(v.Int), true
	case Float:
		return v.Float, true
	default:
		return 0, false
	}
}

// XIDEvent is one XID error the source saw between two reads.
type XIDEvent struct {
	// Entity is the index of the GPU entity in the sample's inventory.
	Entity int
	XID    int64
	Time   time.Time
}

// Sample is the result of one Read: a matrix of values, one row per entity of
// Inventory and one column per field of Fields.
type Sample struct {
	Time      time.Time
	Inventory *Inventory
	Fields    []fields.Field
	// Values holds len(Inventory.Entities)*len(Fields) values, row-major:
	// entity e, field f is Values[e*len(Fields)+f].
	Values []Value
	// XIDs are the XID events since the previous Read, when the source can
	// see each one (not only the last value).
	XIDs []XIDEvent
	// LinkStates holds, per inventory row, the state of NVLink rows
	// (LinkUnknown on other rows); nil when the source reports no link
	// state.
	LinkStates []LinkState
	// FabricErrors counts the reads of the NVLink fabric's inventory and
	// state that failed since the previous sample without failing the
	// Read: the source kept the links it knew, without their states. The
	// collector counts them in gpu_exporter_collection_errors_total{stage="fabric"}.
	FabricErrors int
}

// LinkState is the state of an NVLink, as DCGM's dcgmNvLinkLinkState_t
// (dcgm_structs.h) and NVML's nvmlDeviceGetNvLinkState report it.
type LinkState uint8

// Link states.
const (
	// LinkUnknown: not an NVLink row, or the source could not tell.
	LinkUnknown LinkState = iota
	// LinkDisabled: the link exists but is disabled (not expected up).
	LinkDisabled
	// LinkDown: the link is expected up and is not.
	LinkDown
	// LinkUp: the link is active.
	LinkUp
)

// LinkState returns the state of inventory row e; LinkUnknown when the
// sample carries no link states.
func (s *Sample) LinkState(e int) LinkState {
	if e < 0 || e >= len(s.LinkStates) {
		return LinkUnknown
	}
	return s.LinkStates[e]
}

// NewSample allocates a sample with every value Blank.
func NewSample(t time.Time, inv *Inventory, set []fields.Field) *Sample {
	return &Sample{Time: t, Inventory: inv, Fields: set, Values: make([]Value, len(inv.Entities)*len(set))}
}

// At returns the value of field column f for entity row e.
func (s *Sample) At(e, f int) Value { return s.Values[e*len(s.Fields)+f] }

// Set stores the value of field column f for entity row e.
func (s *Sample) Set(e, f int, v Value) { s.Values[e*len(s.Fields)+f] = v }
