package fakedcgm

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// DCGM return codes the tests inject (dcgm_structs.h).
const (
	StGenericError          = -3
	StNotSupported          = -6
	StNVMLError             = -8
	StTimeout               = -11
	StNoData                = -14
	StNotWatched            = -16
	StNoPermission          = -17
	StGPUIsLost             = -18
	StConnectionNotValid    = -21
	StProfilingNotSupported = -36
	StProfilingMultiPass    = -38
)

// WatchProfiling is a Fault.Func that fails only watches of profiling
// fields, as DCGM does for metric groups it cannot collect in one pass.
const WatchProfiling = "dcgmWatchFields.profiling"

// Health watch systems and results (dcgm_structs.h).
const (
	HealthPCIe    = 0x1
	HealthNVLink  = 0x2
	HealthMemory  = 0x10
	HealthThermal = 0x80
	HealthPower   = 0x100
	HealthDriver  = 0x200
	ResultPass    = 0
	ResultWarn    = 10
	ResultFail    = 20
)

// GPU is one physical GPU of the fake hostengine.
type GPU struct {
	ID    int
	UUID  string
	Name  string
	BusID string
	Minor int
	FBMiB int64
	// Status is "" (ok), "lost" or "inaccessible". A GPU that is not ok is
	// left out of the supported devices, unless Listed, and its values
	// report GPU_IS_LOST.
	Status string
	Listed bool
	// Profiling lists the profiling field ids the GPU supports; nil means
	// profiling is not supported at all.
	Profiling []int
	// NVLinks is the number of NvLink links up; GPUs that both have links
	// are joined by the smaller number (dcgmGetDeviceTopology).
	NVLinks int
	// NUMA is the GPU's NUMA node: its CPU affinity (16 CPUs per node) and
	// its PCIe path to the other GPUs (same node: DCGM_TOPOLOGY_CPU, else
	// DCGM_TOPOLOGY_SYSTEM).
	NUMA int
}

// Instance is a MIG GPU instance.
type Instance struct {
	EntityID  int
	GPU       int
	Instance  int
	Profile   string
	ProfileID int
	Slices    int
	UUID      string
	FBMiB     int64
}

// ComputeInstance is a MIG compute instance: a DCGM_FE_GPU_CI entity
// whose parent in dcgmGetGpuInstanceHierarchy is its GPU instance
// (dcgm_structs.h, dcgmMigHierarchyInfo_v2), with a MIG device UUID of its
// own (DCGM_FI_DEV_UUID).
type ComputeInstance struct {
	EntityID int
	GI       int // entity id of its GPU instance
	Instance int
	UUID     string
	// ProfileID is the NVML compute instance profile id and Slices the
	// compute instance's slice count (dcgmMigEntityInfo_t); zero: those of
	// its GPU instance (a compute instance spanning it).
	ProfileID, Slices int
}

// Entity groups for Value.
const (
	EntityGPU    = "gpu"
	EntityGI     = "gi"
	EntityCI     = "ci"
	EntitySwitch = "switch"
	EntityLink   = "link" // the entity id is a dcgm_link_t: GPULink or SwitchLink
)

// NVSwitch is an NVSwitch of the fake hostengine, with Links ports, all up
// unless LinkStates says otherwise.
type NVSwitch struct {
	ID    int
	BusID string
	Links int
}

// LinkState sets the state of one link of a GPU (Switch false) or of a
// switch: "up", "down", "disabled" or "notsupported" (dcgm_structs.h
// dcgmNvLinkLinkState_t). Without one, a GPU's first NVLinks links and a
// switch's Links ports are up.
type LinkState struct {
	Switch bool
	Parent int
	Index  int
	State  string
}

// DCGM entity groups of a link's parent (dcgm_fields.h DCGM_FE_GPU,
// DCGM_FE_SWITCH).
const (
	feGPU    = 1
	feSwitch = 3
)

// GPULink is the DCGM_FE_LINK entity id of link index of GPU gpu: a
// dcgm_link_t (dcgm_structs.h) with the parent's group in bits 0-7, the
// index in bits 8-23 and the GPU in bits 24-31, as go-dcgm's
// AddLinkEntityToGroup builds it.
func GPULink(gpu, index int) int { return feGPU | index<<8 | gpu<<24 }

// SwitchLink is the DCGM_FE_LINK entity id of port index of switch sw.
func SwitchLink(sw, index int) int { return feSwitch | index<<8 | sw<<24 }

// Value is a field value; Typed is the state-file form: "i:42", "d:1.5",
// "s:text", "i:blank", "i32:notsupported", "d:notfound", "s:notperm",
// "status:-17". Int, Float, Str and Sentinel build it.
type Value struct {
	Group  string
	Entity int
	Field  int
	Typed  string
}

// Int returns an int64 value.
func Int(group string, entity, field int, v int64) Value {
	return Value{group, entity, field, "i:" + strconv.FormatInt(v, 10)}
}

// Float returns a double value.
func Float(group string, entity, field int, v float64) Value {
	return Value{group, entity, field, "d:" + strconv.FormatFloat(v, 'g', -1, 64)}
}

// Str returns a string value.
func Str(group string, entity, field int, v string) Value {
	return Value{group, entity, field, "s:" + v}
}

// Sentinel returns a DCGM sentinel: kind is "i", "i32", "d" or "s"; which is
// "blank", "notfound", "notsupported" or "notperm".
func Sentinel(group string, entity, field int, kind, which string) Value {
	return Value{group, entity, field, kind + ":" + which}
}

// Status returns a value whose per-value status is a DCGM error code.
func Status(group string, entity, field, code int) Value {
	return Value{group, entity, field, "status:" + strconv.Itoa(code)}
}

// XID is one XID event.
type XID struct {
	GPU  int
	Code int64
	Time time.Time
}

// HealthIncident is what dcgmHealthCheck reports for a GPU.
type HealthIncident struct {
	GPU     int
	System  uint32
	Result  int
	Code    int
	Message string
}

// P2P sets the NvLink P2P status (dcgm_structs.h dcgmNvLinkGpuP2PStatus_t:
// 0 OK, 1 chipset not supported, 2 GPU not supported, 3 topology not
// supported, 4 disabled by regkey, 5 not supported, 6 unknown) from GPU to
// Peer. Without one, two GPUs that both have NVLinks up are OK and other
// pairs not supported.
type P2P struct {
	GPU, Peer, Status int
}

// CPU is an NVIDIA CPU of dcgmGetCpuHierarchy, owning cores FirstCore to
// LastCore. Without any, the hierarchy calls answer
// DCGM_ST_MODULE_NOT_LOADED, as DCGM's sysmon module does not load on other
// CPUs.
type CPU struct {
	ID                  int
	FirstCore, LastCore int
	Serial              string
}

// Fault makes Func ("dcgmWatchFields", or "*" for all) fail with Code, or
// block for Hang first. Count limits it to the first Count calls after the
// state file changes (0 = every call).
type Fault struct {
	Func  string
	Code  int
	Hang  time.Duration
	Count int
}

// State is the whole fake hostengine.
type State struct {
	// Down makes the hostengine unreachable: connects fail and the open
	// connection stays invalid until the client reconnects.
	Down             bool
	Driver           string
	GPUs             []GPU
	Instances        []Instance
	ComputeInstances []ComputeInstance
	Values           []Value
	XIDs             []XID
	Health           []HealthIncident
	Faults           []Fault
	// Unknown are field ids the hostengine does not know (an older DCGM
	// than the client library): a field group holding one is refused.
	Unknown []int
	// Switches are the NVSwitches; LinkStates override link states.
	Switches   []NVSwitch
	LinkStates []LinkState
	P2P        []P2P
	CPUs       []CPU
}

func quote(s string) string {
	if strings.ContainsAny(s, " \t") {
		return `"` + s + `"`
	}
	return s
}

// Render returns the state-file text.
func (s *State) Render() string {
	var b strings.Builder
	if s.Down {
		b.WriteString("down\n")
	}
	if s.Driver != "" {
		fmt.Fprintf(&b, "driver %s\n", quote(s.Driver))
	}
	for _, g := range s.GPUs {
		fmt.Fprintf(&b, "gpu %d uuid=%s name=%s bus=%s minor=%d fb=%d", g.ID, quote(g.UUID), quote(g.Name), quote(g.BusID), g.Minor, g.FBMiB)
		if g.Status != "" {
			fmt.Fprintf(&b, " status=%s", g.Status)
		}
		if g.Listed {
			b.WriteString(" listed=1")
		}
		if g.Profiling != nil {
			ids := make([]string, len(g.Profiling))
			for i, id := range g.Profiling {
				ids[i] = strconv.Itoa(id)
			}
			fmt.Fprintf(&b, " prof=%s", strings.Join(ids, ","))
		}
		if g.NVLinks != 0 {
			fmt.Fprintf(&b, " links=%d", g.NVLinks)
		}
		if g.NUMA != 0 {
			fmt.Fprintf(&b, " numa=%d", g.NUMA)
		}
		b.WriteByte('\n')
	}
	for _, gi := range s.Instances {
		fmt.Fprintf(&b, "gi %d gpu=%d instance=%d profile=%s profileid=%d slices=%d uuid=%s fb=%d\n",
			gi.EntityID, gi.GPU, gi.Instance, quote(gi.Profile), gi.ProfileID, gi.Slices, quote(gi.UUID), gi.FBMiB)
	}
	for _, ci := range s.ComputeInstances {
		fmt.Fprintf(&b, "ci %d gi=%d instance=%d uuid=%s", ci.EntityID, ci.GI, ci.Instance, quote(ci.UUID))
		if ci.ProfileID != 0 {
			fmt.Fprintf(&b, " profileid=%d", ci.ProfileID)
		}
		if ci.Slices != 0 {
			fmt.Fprintf(&b, " slices=%d", ci.Slices)
		}
		b.WriteByte('\n')
	}
	for _, w := range s.Switches {
		fmt.Fprintf(&b, "switch %d bus=%s links=%d\n", w.ID, quote(w.BusID), w.Links)
	}
	for _, l := range s.LinkStates {
		parent := "gpu"
		if l.Switch {
			parent = "switch"
		}
		fmt.Fprintf(&b, "linkstate %s %d %d %s\n", parent, l.Parent, l.Index, l.State)
	}
	for _, v := range s.Values {
		kind, val, _ := strings.Cut(v.Typed, ":")
		fmt.Fprintf(&b, "value %s %d %d %s:%s\n", v.Group, v.Entity, v.Field, kind, quote(val))
	}
	for _, x := range s.XIDs {
		fmt.Fprintf(&b, "xid %d %d %d\n", x.GPU, x.Code, x.Time.UnixMicro())
	}
	for _, h := range s.Health {
		fmt.Fprintf(&b, "health %d %#x %d %d %s\n", h.GPU, h.System, h.Result, h.Code, h.Message)
	}
	for _, x := range s.P2P {
		fmt.Fprintf(&b, "p2p %d %d %d\n", x.GPU, x.Peer, x.Status)
	}
	for _, c := range s.CPUs {
		fmt.Fprintf(&b, "cpu %d cores=%d-%d", c.ID, c.FirstCore, c.LastCore)
		if c.Serial != "" {
			fmt.Fprintf(&b, " serial=%s", quote(c.Serial))
		}
		b.WriteByte('\n')
	}
	if len(s.Unknown) > 0 {
		ids := make([]string, len(s.Unknown))
		for i, id := range s.Unknown {
			ids[i] = strconv.Itoa(id)
		}
		fmt.Fprintf(&b, "unknown %s\n", strings.Join(ids, ","))
	}
	for _, f := range s.Faults {
		if f.Hang > 0 {
			fmt.Fprintf(&b, "hang %s %d", f.Func, f.Hang.Milliseconds())
		} else {
			fmt.Fprintf(&b, "fail %s %d", f.Func, f.Code)
		}
		if f.Count > 0 {
			fmt.Fprintf(&b, " n=%d", f.Count)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Env is one fake hostengine: its state and calls files.
type Env struct {
	StatePath string
	CallsPath string
}

// NewEnv returns an Env with files in a fresh test directory and writes s.
func NewEnv(t testing.TB, s State) *Env {
	t.Helper()
	dir := t.TempDir()
	e := &Env{StatePath: filepath.Join(dir, "state.txt"), CallsPath: filepath.Join(dir, "calls.txt")}
	e.Write(t, s)
	return e
}

// Setenv points the fake in this process at the Env (t.Setenv: the test
// cannot be parallel).
func (e *Env) Setenv(t testing.TB) {
	t.Helper()
	t.Setenv("FAKEDCGM_STATE", e.StatePath)
	t.Setenv("FAKEDCGM_CALLS", e.CallsPath)
}

// Environ returns the variables a child process needs to use the fake lib
// with this Env.
func (e *Env) Environ(lib *Lib) []string {
	ld := lib.Dir
	if old := os.Getenv("LD_LIBRARY_PATH"); old != "" {
		ld += ":" + old
	}
	return []string{"LD_LIBRARY_PATH=" + ld, "FAKEDCGM_STATE=" + e.StatePath, "FAKEDCGM_CALLS=" + e.CallsPath}
}

// Write replaces the state atomically; the fake sees it on its next call.
func (e *Env) Write(t testing.TB, s State) {
	t.Helper()
	tmp := e.StatePath + ".tmp"
	if err := os.WriteFile(tmp, []byte(s.Render()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, e.StatePath); err != nil {
		t.Fatal(err)
	}
}

// Calls is a snapshot of the fake's calls file.
type Calls struct {
	// Count is the number of calls per entry point ("dcgmWatchFields").
	Count map[string]int64
	// Sessions is the number of connections (embedded starts or connects)
	// opened so far.
	Sessions int64
	// ActiveGroups, ActiveFieldGroups and ActiveWatches describe the
	// current connection.
	ActiveGroups, ActiveFieldGroups, ActiveWatches int
	// InFlight is the number of calls blocked by a hang fault.
	InFlight int
	// ConnectAddress and ConnectUnix are the last remote connect's address
	// and unix-socket flag; ConnectUnix is -1 when there was none.
	ConnectAddress string
	ConnectUnix    int
	// Watches are the active watches.
	Watches []Watch
}

// Watch is one active watch.
type Watch struct {
	FreqMicros  int64
	KeepAge     float64
	KeepSamples int
	Entities    []string // "<entity group>:<id>", e.g. "1:0" for GPU 0
	Fields      []int
}

// Calls parses the calls file; a missing file is an empty snapshot.
func (e *Env) Calls(t testing.TB) Calls {
	t.Helper()
	c := Calls{Count: map[string]int64{}, ConnectUnix: -1}
	f, err := os.Open(e.CallsPath)
	if os.IsNotExist(err) {
		return c
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		if len(parts) < 2 {
			continue
		}
		n, _ := strconv.ParseInt(parts[1], 10, 64)
		switch parts[0] {
		case "sessions":
			c.Sessions = n
		case "active_groups":
			c.ActiveGroups = int(n)
		case "active_field_groups":
			c.ActiveFieldGroups = int(n)
		case "active_watches":
			c.ActiveWatches = int(n)
		case "in_flight":
			c.InFlight = int(n)
		case "connect":
			c.ConnectAddress = parts[1]
			if len(parts) > 2 {
				c.ConnectUnix, _ = strconv.Atoi(parts[2])
			}
		case "watch":
			c.Watches = append(c.Watches, parseWatch(parts[1:]))
		default:
			c.Count[parts[0]] = n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return c
}

func parseWatch(kvs []string) Watch {
	var w Watch
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "freq_us":
			w.FreqMicros, _ = strconv.ParseInt(v, 10, 64)
		case "keep_age_s":
			w.KeepAge, _ = strconv.ParseFloat(v, 64)
		case "keep_samples":
			w.KeepSamples, _ = strconv.Atoi(v)
		case "entities":
			if v != "" {
				w.Entities = strings.Split(v, ",")
			}
		case "fields":
			for _, f := range strings.Split(v, ",") {
				if id, err := strconv.Atoi(f); err == nil {
					w.Fields = append(w.Fields, id)
				}
			}
		}
	}
	return w
}

// Total returns the number of calls to any DCGM entry point.
func (c Calls) Total() int64 {
	var n int64
	for _, v := range c.Count {
		n += v
	}
	return n
}
