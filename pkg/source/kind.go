package source

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/pflag"
)

// Kind is one value of --source, as its package describes it: how --help
// names it, its own flags, how it opens and what the doctor checks for it.
// Each source package exports one (as node_exporter's collectors register
// themselves); pkg/sourceopen's table lists them and is the only place
// that knows the list. A new source touches its package and that table.
type Kind struct {
	// Name is the --source value.
	Name string
	// Usage is how --source's help and errors name it: "nvml" or
	// "sim (built-in simulator)".
	Usage string
	// HelpPlace is where its flags stand in --help among other packages'.
	HelpPlace HelpPlace
	// NewOptions returns its options, fresh for one flag set.
	NewOptions func() Options
}

// HelpPlace is where a kind's flags stand in --help. The places keep the
// order the flags always had; a new kind's flags go Last.
type HelpPlace int

// Places in --help, in its order.
const (
	// Last is after every other package's flags.
	Last HelpPlace = iota
	// AfterProcesses is after the process accounting flags.
	AfterProcesses
)

// Options are one kind's flags and what follows from them.
type Options interface {
	// AddFlags declares the kind's own flags on fs (none is fine).
	AddFlags(fs *pflag.FlagSet)
	// Validate refuses a bad value with a message naming its flag and
	// fills what derives from the flags. Every kind's flags are validated,
	// whichever --source names.
	Validate() error
	// Open opens the source. On error nothing stays open.
	Open(ctx context.Context, s Settings, logger *slog.Logger) (*Opened, error)
	// Traits says, without opening anything, what the rest of the
	// exporter needs to know of the source these options open.
	Traits() Traits
}

// Settings are what other packages' flags tell every source: the
// collection's timing and GPU selection, and the node's other parts the
// exporter reads, which a simulated node serves itself.
type Settings struct {
	// Interval is the collection interval (DCGM's watch period);
	// CollectTimeout bounds one collection, and so each library call.
	Interval, CollectTimeout time.Duration
	// FabricInterval is the period of the NVLink, NVSwitch and fabric
	// manager fields; 0 is Interval.
	FabricInterval time.Duration
	// GPUs selects GPU indices; empty is every GPU.
	GPUs []int
	// Kubelet asks for pod attribution (--kubernetes.enabled is not
	// false); KubeletSocket is the socket given, or "".
	Kubelet       bool
	KubeletSocket string
	// JobMappingDir is --hpc.job-mapping-dir, or "".
	JobMappingDir string
}

// Opened is an open source and what was started with it.
type Opened struct {
	Source Source
	// KubeletSocket is the socket of a kubelet the source serves (the
	// simulated node's), or "".
	KubeletSocket string
	// JobMappingDir is the directory the source writes HPC jobs to (the
	// simulated node's), or "".
	JobMappingDir string
	cleanup       []func()
}

// OnClose adds f to what Close runs, last added first.
func (o *Opened) OnClose(f func()) { o.cleanup = append(o.cleanup, f) }

// Close releases the source and whatever was started with it, last opened
// first. It is safe to call more than once.
func (o *Opened) Close() {
	for i := len(o.cleanup) - 1; i >= 0; i-- {
		o.cleanup[i]()
	}
	o.cleanup = nil
}

// Traits are the properties of a source that others act on, in place of
// its name.
type Traits struct {
	// MayLackGPUs: the source may declare no GPU (the simulator, for
	// tests); others refuse to run without one.
	MayLackGPUs bool
	// RemoteHost is the host whose GPUs the source reads when it is not
	// this one (a remote hostengine), or "".
	RemoteHost string
	// Checkup is what the doctor checks for it.
	Checkup Checkup
}

// Checkup is what `gpu-exporter doctor` needs to check a source.
type Checkup struct {
	// Libraries are the shared libraries whose presence the report lists
	// (none for a source that loads none).
	Libraries []string
	// Endpoints are services the source dials, each checked for
	// reachability before it opens.
	Endpoints []Endpoint
	// LocalDevices: the source reads GPUs through this host's device
	// nodes.
	LocalDevices bool
	// Profiling is how it reads profiling (DCP) fields.
	Profiling Profiling
	// Why says why the source picked, by its Name, is the one read
	// (" (embedded hostengine)"); "" says nothing.
	Why func(picked string) string
	// Fix says what to do when the source does not open or answer;
	// missing reports whether a shared library is absent.
	Fix func(missing func(lib string) bool) string
}

// Endpoint is a service a source dials.
type Endpoint struct {
	// What names it in the report ("hostengine").
	What             string
	Network, Address string
}

// Profiling is how a source reads profiling (DCP) fields.
type Profiling int

// The ways a source reads profiling fields.
const (
	// ProfilingHere: read in this process, which needs CAP_SYS_ADMIN.
	ProfilingHere Profiling = iota
	// ProfilingRemote: read by a remote service, which needs it itself.
	ProfilingRemote
	// ProfilingNone: not read; the fields stay blank.
	ProfilingNone
	// ProfilingSimulated: simulated.
	ProfilingSimulated
)
