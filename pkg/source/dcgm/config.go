// Package dcgm is the DCGM source: it reads GPU fields through go-dcgm from
// an embedded hostengine or a remote nv-hostengine.
//
// The source watches one field group per entity level (GPUs, MIG GPU
// instances) with an update frequency equal to the collection interval and a
// bounded keep-age, reads the latest values of every entity of a level in one
// call per collection, turns DCGM's blank markers into source.Blank, and
// keeps the XID events DCGM recorded between two reads.
//
// go-dcgm is cgo: the real implementation builds with cgo on linux only; any
// other build gets a stub whose New returns an error, so the rest of the
// exporter still builds with CGO_ENABLED=0.
//
// Every DCGM call runs on one worker goroutine and the caller waits at most
// Config.CallTimeout for it. A cgo call cannot be cancelled, so while a call
// is still blocked later calls fail at once instead of queueing goroutines.
// A timed-out call, or a hostengine that reports a broken connection, makes
// Read fail with an error wrapping source.ErrUnavailable; the source then
// shuts go-dcgm down and initialises it again with capped exponential
// backoff, re-creating its groups and watches.
//
// Inventory changes (a GPU falling off the bus, MIG reconfiguration) are
// noticed by Read, which checks the supported GPUs and the MIG hierarchy on
// every collection and then returns a new *source.Inventory. Profiling (DCP)
// fields are watched only on GPUs whose supported metric groups include
// them; the others read Blank, logged once.
//
// The NVLink fabric: the links of each GPU and the NVSwitches with their
// ports (dcgmGetNvLinkLinkStatus, dcgmGetEntityGroupEntities(DCGM_FE_SWITCH))
// are entities of the inventory, links as DCGM_FE_LINK entities
// (dcgm_link_t ids). Their fields, and the fabric fields of GPUs
// (fields.Field.Fabric), are watched in field groups of their own updated
// every Config.FabricInterval; links and switches are read, and link states
// and the switch list asked, at most that often, the samples repeating
// their last values in between. A GPU link carries the GPU fields DCGM also
// reports per link, a switch port the link-level fields.
//
// go-dcgm keeps one connection per process in package variables, so only one
// Source may be open in a process at a time.
package dcgm

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// Modes of Config.Mode.
const (
	// ModeEmbedded runs the hostengine inside the exporter process.
	ModeEmbedded = "embedded"
	// ModeRemote connects to a running nv-hostengine.
	ModeRemote = "remote"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultInterval    = 15 * time.Second
	DefaultCallTimeout = cgocall.DefaultCallTimeout
	DefaultBackoffMin  = cgocall.DefaultBackoffMin
	DefaultBackoffMax  = cgocall.DefaultBackoffMax
	// minKeepAge is the least keep-age the default picks: DCGM needs some
	// history for XID events between two reads even at short intervals.
	minKeepAge = 30 * time.Second
)

// Config configures the DCGM source.
type Config struct {
	// Mode is ModeEmbedded (default) or ModeRemote.
	Mode string
	// RemoteAddress is the nv-hostengine address in remote mode: host:port
	// (or host, port 5555), tcp://host:port, a unix socket path starting
	// with "/" or ".", or unix://path.
	RemoteAddress string
	// Interval is the watch update frequency; it should equal the
	// collection interval. Default 15s.
	Interval time.Duration
	// FabricInterval is the watch update frequency of fabric fields
	// (fields.Field.Fabric: NVLink, NVSwitch, fabric manager), which are
	// watched in field groups of their own, and how often link states are
	// read. Default Interval.
	FabricInterval time.Duration
	// KeepAge bounds how long DCGM keeps samples. Default max(3×Interval,
	// 30s); it must be at least Interval so that no XID event is dropped
	// between two reads.
	KeepAge time.Duration
	// CallTimeout bounds every DCGM call. Default 10s.
	CallTimeout time.Duration
	// GPUs selects GPUs by DCGM GPU id (the NVML index on a usual host);
	// empty means all. MIG instances of selected GPUs are included.
	GPUs []int
	// Health enables DCGM health watches on the GPUs, read with
	// Source.Health.
	Health bool
	// BackoffMin and BackoffMax bound the wait between reconnect attempts,
	// which doubles after each failure. Defaults 1s and 30s.
	BackoffMin, BackoffMax time.Duration
}

// withDefaults validates c and fills its zero fields.
func (c Config) withDefaults() (Config, error) {
	c.Mode = strings.ToLower(strings.TrimSpace(c.Mode))
	switch c.Mode {
	case "":
		c.Mode = ModeEmbedded
	case ModeEmbedded:
	case ModeRemote:
		if strings.TrimSpace(c.RemoteAddress) == "" {
			return c, errors.New("dcgm: remote mode needs a hostengine address")
		}
	default:
		return c, fmt.Errorf("dcgm: unknown mode %q (want %q or %q)", c.Mode, ModeEmbedded, ModeRemote)
	}
	for name, d := range map[string]time.Duration{"interval": c.Interval, "keep age": c.KeepAge, "fabric interval": c.FabricInterval} {
		if d < 0 {
			return c, fmt.Errorf("dcgm: negative %s %s", name, d)
		}
	}
	r, err := cgocall.Retry{CallTimeout: c.CallTimeout, BackoffMin: c.BackoffMin, BackoffMax: c.BackoffMax}.WithDefaults("dcgm")
	if err != nil {
		return c, err
	}
	c.CallTimeout, c.BackoffMin, c.BackoffMax = r.CallTimeout, r.BackoffMin, r.BackoffMax
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Interval < time.Millisecond {
		return c, fmt.Errorf("dcgm: interval %s is below DCGM's 1ms resolution", c.Interval)
	}
	if c.FabricInterval == 0 {
		c.FabricInterval = c.Interval
	}
	if c.FabricInterval < time.Millisecond {
		return c, fmt.Errorf("dcgm: fabric interval %s is below DCGM's 1ms resolution", c.FabricInterval)
	}
	if c.KeepAge == 0 {
		c.KeepAge = max(3*c.Interval, minKeepAge)
	}
	if c.KeepAge < c.Interval {
		return c, fmt.Errorf("dcgm: keep age %s is shorter than the interval %s", c.KeepAge, c.Interval)
	}
	c.GPUs, err = cgocall.Selection("dcgm", "GPU id", c.GPUs)
	return c, err
}

// remoteAddress splits a RemoteAddress into the address go-dcgm passes to
// dcgmConnect_v2 and whether it is a unix socket path.
func remoteAddress(addr string) (string, bool) {
	addr = strings.TrimSpace(addr)
	lower := strings.ToLower(addr)
	switch {
	case strings.HasPrefix(lower, "unix://"):
		return addr[len("unix://"):], true
	case strings.HasPrefix(lower, "tcp://"):
		return addr[len("tcp://"):], false
	case strings.HasPrefix(addr, "/"), strings.HasPrefix(addr, "./"), strings.HasPrefix(addr, "../"):
		return addr, true
	default:
		return addr, false
	}
}
