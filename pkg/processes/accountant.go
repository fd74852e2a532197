package processes

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// Mode is what process accounting exports (--collect.processes).
type Mode uint8

// Modes.
const (
	// ModeOff disables process accounting.
	ModeOff Mode = iota
	// ModeContainer exports per-container sums (gpu_container_*).
	ModeContainer
	// ModeProcess also exports one series per process (gpu_process_*).
	ModeProcess
)

// ParseMode reads --collect.processes: off, container or process.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "off":
		return ModeOff, nil
	case "container":
		return ModeContainer, nil
	case "process":
		return ModeProcess, nil
	}
	return ModeOff, fmt.Errorf("--collect.processes: unknown mode %q (want off, container or process)", s)
}

// String returns the name ParseMode reads.
func (m Mode) String() string {
	switch m {
	case ModeContainer:
		return "container"
	case ModeProcess:
		return "process"
	}
	return "off"
}

// PodLookup names the container of a pod UID and a container id;
// podlabels.Store is one.
type PodLookup interface {
	LookupContainer(podUID, containerID string) (podlabels.ContainerRef, bool)
}

// Config configures an Accountant.
type Config struct {
	// Procfs is the proc filesystem to read (--path.procfs).
	Procfs string
	// MaxCached bounds the PID cache; 0 means DefaultMaxCached.
	MaxCached int
	// Mode is ModeContainer or ModeProcess.
	Mode Mode
	// HostPIDs says the sampler reports PIDs of the host's PID namespace,
	// as NVML does (HostPIDNamespace): NewAccountant then checks that
	// Procfs shows that namespace, and warns when it does not. The
	// simulator's PIDs live in its own procfs tree.
	HostPIDs bool
	// Pods names pods and containers; nil when the exporter has no access
	// to the Kubernetes API: usage is then labelled with pod_uid and
	// container_id alone.
	Pods PodLookup
}

// Who names the owner of one usage row.
type Who struct {
	// Namespace, Pod and Container name the container; all empty for the
	// host's processes (one aggregate per device), and for a pod the API
	// does not name (then PodUID and ContainerID say who it is).
	Namespace, Pod, Container string
	// PodUID and ContainerID are set when the names are not known: without
	// API access, or before the informer has seen the pod or container.
	PodUID, ContainerID string
}

// Usage is what the processes of one container (or one process) use of
// one device.
type Usage struct {
	Who
	// PID is the process, in per-process rows; 0 in container rows.
	PID uint32
	// Processes is the number of processes summed.
	Processes int
	// MemoryBytes is the device memory they use; MemoryKnown is false when
	// the driver could tell for none of them.
	MemoryBytes uint64
	MemoryKnown bool
	// SM is their share of the device's SM time as a ratio 0-1: the sum of
	// the processes' SM utilization. Valid when the device's Utilization
	// is.
	SM float64
	// EnergyJoules is their share of the device's energy since the row
	// first had one (EnergySplitter), in container rows when the device's
	// EnergyKnown.
	EnergyJoules float64
	// Mechanism is the sharing mechanism that limits them (MPS, HAMi,
	// KAI), or MechanismNone; MemoryLimitBytes and SMLimit are what it
	// gave them of the device (0: no limit of that kind, or not known for
	// this device: Limits.ForDevice). MemoryShare is a share of the
	// device's memory (KAI's GPU_PORTION, 0-1) that whoever knows the
	// device's total memory turns into bytes; 0 when none. A container
	// row has the largest of its processes' limits (processes of one
	// container start with the same environment).
	Mechanism        Mechanism
	MemoryLimitBytes uint64
	SMLimit          float64
	MemoryShare      float64
}

// DeviceUsage is the usage of one GPU or MIG device.
type DeviceUsage struct {
	GPU         int
	UUID        string
	GPUInstance int
	MIGUUID     string
	// Utilization is true when the device reports per-process
	// utilization (Usage.SM is valid).
	Utilization bool
	// Containers are sorted by namespace, pod, container, pod UID and
	// container id; the host aggregate (all empty) comes first.
	Containers []Usage
	// Processes are the per-process rows (ModeProcess), sorted the same
	// way, then by PID.
	Processes []Usage
	// Orphans counts the device's orphan processes by OrphanKind, when
	// OrphansKnown (orphans.go: with a synced pod informer only).
	Orphans      [numOrphanKinds]Orphans
	OrphansKnown bool
	// IdleEnergyJoules is the device's energy spent while no process was
	// on its SMs, summed since the device's first split, when
	// EnergyKnown (energy.go); the containers' shares are in their
	// Usage.EnergyJoules. Whole GPUs only: a MIG device's idle energy is
	// its GPU's, which EnergySplitter.SplitMIG returns.
	IdleEnergyJoules float64
	EnergyKnown      bool
}

// Accountant attributes the processes of every device to containers once
// per collection: Sampler, then Resolver, then PodLookup.
type Accountant struct {
	cfg      Config
	sampler  Sampler
	resolver *Resolver
	logger   *slog.Logger
	m        *metrics
	reg      prometheus.Registerer
	// logged holds the failure kinds already logged.
	logged map[string]bool
	// reached says whether the sampler reached the GPUs at the last
	// Collect that had an answer; reachUnknown before the first (the
	// availability gauge has no series then).
	reached reach
	// lookups, resolved and at are one collection's PIDs, their owners,
	// and each PID's index in both; reused.
	lookups  []Lookup
	resolved []Resolution
	at       map[uint32]int
	// orphans remembers the pod UIDs unknown at the last collection.
	orphans orphanTracker
}

// reach is whether a sampler reached the GPUs.
type reach uint8

const (
	reachUnknown reach = iota
	reachYes
	reachNo
)

// NewAccountant returns an Accountant on sampler. Self-metrics go to reg
// unless it is nil. Without cfg.Pods it logs once that usage is labelled
// with pod UIDs and container ids.
func NewAccountant(cfg Config, sampler Sampler, logger *slog.Logger, reg prometheus.Registerer) (*Accountant, error) {
	if cfg.Mode != ModeContainer && cfg.Mode != ModeProcess {
		return nil, fmt.Errorf("processes: accountant mode %s exports nothing", cfg.Mode)
	}
	if sampler == nil {
		return nil, errors.New("processes: no sampler")
	}
	r, err := NewResolver(cfg.Procfs, cfg.MaxCached)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	a := &Accountant{cfg: cfg, sampler: sampler, resolver: r, logger: logger, m: m, reg: reg, logged: map[string]bool{}}
	if cfg.HostPIDs {
		if host, err := HostPIDNamespace(context.Background(), cfg.Procfs); !host {
			logger.Warn("process accounting reads a procfs that does not show the host's PID namespace; NVML reports host PIDs, so GPU processes are left out as exited or matched to unrelated processes: run with hostPID and --path.procfs at the host's /proc",
				"procfs", cfg.Procfs, "err", err)
		}
	}
	if cfg.Pods == nil {
		m.podNames.Set(0)
		logger.Warn("process accounting has no Kubernetes API access; GPU usage per container is labelled with pod_uid and container_id instead of namespace, pod and container",
			"procfs", cfg.Procfs)
	} else {
		m.podNames.Set(1)
	}
	return a, nil
}

// Close unregisters the self-metrics and closes the procfs files the
// resolver holds; whoever opened the sampler closes it.
func (a *Accountant) Close() {
	a.m.unregister(a.reg)
	a.resolver.Close()
}

// Collect samples every device and attributes its processes. When the
// sampler fails for some devices, the others are returned with the error.
// When the sampler is unavailable on this host, the error wraps
// ErrUnavailable: the accountant reports that state itself (its gauge,
// one warning per change), and the caller should not count it as a failure.
func (a *Accountant) Collect(ctx context.Context) ([]DeviceUsage, error) {
	devs, err := a.sampler.Sample(ctx)
	if errors.Is(err, ErrUnavailable) {
		a.setAvailable(false, err)
		// No process is listed while NVML is away: the cache is emptied
		// (its PIDs may be reused before it is back), and the gauge says
		// so instead of keeping the last count.
		a.resolver.Begin()
		a.resolver.End()
		a.m.cached.Set(0)
		return nil, err
	}
	if err == nil || devs != nil || !noAnswer(err) {
		a.setAvailable(true, nil)
	}
	if devs == nil && err != nil {
		return nil, err
	}
	devs = joinInstances(devs)
	a.resolver.Begin()
	a.resolveAll(ctx, devs)
	if ctx.Err() != nil {
		// Out of time (or stopping) half-way: sums over the processes
		// resolved so far would understate their containers, so none is
		// returned. The cache keeps what was resolved (End would forget
		// the PIDs not reached).
		a.m.cached.Set(float64(a.resolver.Cached()))
		return nil, fmt.Errorf("process accounting: resolving the GPUs' processes: %w", context.Cause(ctx))
	}
	out := make([]DeviceUsage, len(devs))
	a.orphans.begin()
	orphans := a.countsOrphans()
	for i := range devs {
		out[i] = a.attribute(&devs[i], orphans)
	}
	a.resolver.End()
	a.m.cached.Set(float64(a.resolver.Cached()))
	return out, err
}

// noAnswer reports whether a Sample failed before the library answered:
// its call timed out or waited on a blocked one (cgocall.CallError wraps
// source.ErrUnavailable), the collection ended, the sampler was closed.
// That says nothing of the library, and availability stays as it was. Any
// other failure is the library's answer (a lost GPU it cannot list): it
// is there, and the failure is a counted collection error.
func noAnswer(err error) bool {
	return errors.Is(err, source.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) || errors.Is(err, cgocall.ErrClosed)
}

// setAvailable sets the gauge and logs a change of availability: once
// when the sampler becomes unavailable (with how to turn accounting off),
// once when it is back.
func (a *Accountant) setAvailable(ok bool, err error) {
	was := a.reached
	if ok {
		a.reached = reachYes
		a.m.available.WithLabelValues().Set(1)
		if was == reachNo {
			a.logger.Info("GPU process accounting available again")
		}
		return
	}
	a.reached = reachNo
	a.m.available.WithLabelValues().Set(0)
	if was != reachNo {
		a.logger.Warn("GPU process accounting unavailable on this node; retried with back-off, not counted as a collection error (--collect.processes=off turns it off)",
			"err", err, "retry_max", UnavailableRetryMax)
	}
}

// resolveAll resolves every PID of devs once, in one pass over procfs.
// A process sampled but not listed on any device (it exited after its
// samples, and another process may hold its PID now) is looked up as
// known only.
func (a *Accountant) resolveAll(ctx context.Context, devs []Device) {
	if a.at == nil {
		a.at = map[uint32]int{}
	}
	clear(a.at)
	a.lookups = a.lookups[:0]
	for i := range devs {
		for _, p := range devs[i].Processes {
			if k, ok := a.at[p.PID]; ok {
				a.lookups[k].Known = a.lookups[k].Known && p.Unlisted
				continue
			}
			a.at[p.PID] = len(a.lookups)
			a.lookups = append(a.lookups, Lookup{PID: p.PID, Known: p.Unlisted})
		}
	}
	if cap(a.resolved) < len(a.lookups) {
		a.resolved = make([]Resolution, len(a.lookups))
	}
	a.resolved = a.resolved[:len(a.lookups)]
	a.resolver.ResolveAll(ctx, a.lookups, a.resolved)
}

// attribute sums one device's processes per container, from resolveAll's
// answers, and counts its orphans when orphans is set.
func (a *Accountant) attribute(d *Device, orphans bool) DeviceUsage {
	u := DeviceUsage{GPU: d.GPU, UUID: d.UUID, GPUInstance: d.GPUInstance, MIGUUID: d.MIGUUID, Utilization: d.Utilization, OrphansKnown: orphans}
	index := map[Who]int{}
	for i := range d.Processes {
		p := &d.Processes[i]
		res := &a.resolved[a.at[p.PID]]
		owner, err := res.Owner, res.Err
		if err != nil {
			a.failed(p.PID, err)
			continue
		}
		who := a.name(owner)
		if orphans {
			if k, ok := a.orphanKind(p, owner, who); ok {
				u.Orphans[k].Processes++
				if p.UsedKnown {
					u.Orphans[k].MemoryBytes += p.UsedBytes
				}
			}
		}
		// SM stays in percent until the sums are made: NVML's integer
		// percents add up exactly, and one division gives the ratio.
		row := Usage{Who: who, PID: p.PID, Processes: 1, MemoryBytes: p.UsedBytes, MemoryKnown: p.UsedKnown, SM: p.SM}
		if !p.UsedKnown {
			row.MemoryBytes = 0
		}
		if res.Limits.Known() {
			dev := d.UUID
			if d.MIGUUID != "" {
				dev = d.MIGUUID
			}
			row.Mechanism, row.MemoryShare = res.Limits.Mechanism, res.Limits.MemoryShare
			row.MemoryLimitBytes, row.SMLimit = res.Limits.ForDevice(dev)
		}
		if a.cfg.Mode == ModeProcess {
			u.Processes = append(u.Processes, row)
		}
		k, ok := index[who]
		if !ok {
			index[who] = len(u.Containers)
			row.PID = 0
			u.Containers = append(u.Containers, row)
			continue
		}
		c := &u.Containers[k]
		c.Processes++
		c.MemoryBytes += row.MemoryBytes
		c.MemoryKnown = c.MemoryKnown || row.MemoryKnown
		c.SM += row.SM
		if c.Mechanism == MechanismNone {
			c.Mechanism = row.Mechanism
		}
		c.MemoryLimitBytes = max(c.MemoryLimitBytes, row.MemoryLimitBytes)
		c.SMLimit = max(c.SMLimit, row.SMLimit)
		c.MemoryShare = max(c.MemoryShare, row.MemoryShare)
	}
	for i := range u.Containers {
		u.Containers[i].SM /= 100
	}
	for i := range u.Processes {
		u.Processes[i].SM /= 100
	}
	slices.SortFunc(u.Containers, compareUsage)
	slices.SortFunc(u.Processes, compareUsage)
	return u
}

func compareUsage(x, y Usage) int {
	return cmp.Or(cmp.Compare(x.Namespace, y.Namespace), cmp.Compare(x.Pod, y.Pod), cmp.Compare(x.Container, y.Container),
		cmp.Compare(x.PodUID, y.PodUID), cmp.Compare(x.ContainerID, y.ContainerID), cmp.Compare(x.PID, y.PID))
}

// name turns a cgroup owner into labels: names through the API when it
// knows the pod, else the UID and id.
func (a *Accountant) name(o Owner) Who {
	if o.Host() {
		return Who{}
	}
	if a.cfg.Pods != nil {
		if ref, ok := a.cfg.Pods.LookupContainer(o.PodUID, o.ContainerID); ok {
			w := Who{Namespace: ref.Namespace, Pod: ref.Pod, Container: ref.Container}
			if ref.Container == "" {
				w.ContainerID = o.ContainerID
			}
			return w
		}
		a.m.unresolved.WithLabelValues("unknown_pod").Inc()
	}
	return Who{PodUID: o.PodUID, ContainerID: o.ContainerID}
}

// failed counts a process left out and logs the first failure of each
// kind: an exit between the GPU listing and the procfs read is routine and
// only counted.
func (a *Accountant) failed(pid uint32, err error) {
	if errors.Is(err, ErrExited) {
		a.m.unresolved.WithLabelValues("exited").Inc()
		return
	}
	a.m.unresolved.WithLabelValues("unreadable").Inc()
	if !a.logged["unreadable"] {
		a.logged["unreadable"] = true
		a.logger.Warn("cannot tell which container runs a GPU process; it is left out (further failures are only counted)",
			"pid", pid, "err", err)
	}
}
