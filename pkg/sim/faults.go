package sim

import (
	"regexp"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// window is a span of elapsed time, [from, until), or [from, ∞) when open.
type window struct {
	from, until time.Duration
	open        bool
}

func (w window) contains(t time.Duration) bool {
	return t >= w.from && (w.open || t < w.until)
}

// xidFault makes a GPU report an XID error from a time on.
type xidFault struct {
	at  time.Duration
	gpu int
	xid int64
}

// lostFault takes a GPU off the bus for a window.
type lostFault struct {
	gpu int
	window
}

// healthFault makes a GPU's health watch for one subsystem report a
// warning or a failure for a window.
type healthFault struct {
	gpu       int
	subsystem string
	status    source.HealthStatus
	window
}

// subsystemName is what a health fault may name: DCGM's subsystems are
// lower-case words ("pcie", "memory", "nvswitch_fatal"; dcgm_structs.h
// DCGM_HEALTH_WATCH_*, named in pkg/source/dcgm), and the name becomes a
// label value.
var subsystemName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// healthStatuses are the results a health fault may set.
var healthStatuses = map[string]source.HealthStatus{"warn": source.HealthWarn, "fail": source.HealthFail}

func (b *builder) faults(n *yaml.Node, p string) error {
	items, err := b.d.list(n, p)
	if err != nil {
		return err
	}
	for i, item := range items {
		if err := b.fault(item, indexPath(p, i)); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) fault(n *yaml.Node, p string) error {
	d := b.d
	o, err := d.object(n, p, "at", "duration", "gpu", "xid", "outage", "lost", "health", "status")
	if err != nil {
		return err
	}
	if err := o.require("at"); err != nil {
		return err
	}
	outage, err := o.truth("outage")
	if err != nil {
		return err
	}
	lost, err := o.truth("lost")
	if err != nil {
		return err
	}
	kinds := 0
	for _, k := range []bool{o.has("xid"), outage, lost, o.has("health")} {
		if k {
			kinds++
		}
	}
	if kinds != 1 {
		return d.errf(o.node, p, "a fault is exactly one of xid: N, outage: true, lost: true or health: SUBSYSTEM")
	}
	if v, vp := o.at("status"); v != nil && !o.has("health") {
		return d.errf(v, vp, "status belongs to a health fault")
	}
	w := window{open: true}
	if w.from, err = o.duration("at", false); err != nil {
		return err
	}
	if v, vp := o.at("duration"); v != nil {
		if o.has("xid") {
			return d.errf(v, vp, "an XID has no duration: DCGM keeps reporting the last one")
		}
		dur, err := o.duration("duration", false)
		if err != nil {
			return err
		}
		if dur == 0 {
			return d.errf(v, vp, "must be positive")
		}
		w.until, w.open = w.from+dur, false
	}
	if outage {
		if v, vp := o.at("gpu"); v != nil {
			return d.errf(v, vp, "an outage is of the whole source, not of one GPU")
		}
		if w.open {
			return d.errf(o.node, p, "an outage needs a duration")
		}
		b.scn.outages = append(b.scn.outages, w)
		return nil
	}
	if err := o.require("gpu"); err != nil {
		return err
	}
	gpu, err := b.gpuRef(o, "gpu")
	if err != nil {
		return err
	}
	if lost {
		b.lost = append(b.lost, lostFault{gpu: gpu, window: w})
		return nil
	}
	if o.has("health") {
		h, err := b.health(o)
		if err != nil {
			return err
		}
		h.gpu, h.window = gpu, w
		b.scn.health = append(b.scn.health, h)
		return nil
	}
	xid, err := o.integer("xid", 1, maxXID)
	if err != nil {
		return err
	}
	b.scn.xids = append(b.scn.xids, xidFault{at: w.from, gpu: gpu, xid: xid})
	return nil
}

// health reads a health fault's subsystem and status.
func (b *builder) health(o *object) (healthFault, error) {
	d := b.d
	if err := o.require("status"); err != nil {
		return healthFault{}, err
	}
	var h healthFault
	sub, err := o.str("health")
	if err != nil {
		return h, err
	}
	if !subsystemName.MatchString(sub) {
		v, vp := o.at("health")
		return h, d.errf(v, vp, "subsystem %q is not a lower-case name such as pcie, memory or nvlink", sub)
	}
	st, err := o.str("status")
	if err != nil {
		return h, err
	}
	status, ok := healthStatuses[st]
	if !ok {
		v, vp := o.at("status")
		return h, d.errf(v, vp, "status %q is neither warn nor fail", st)
	}
	h.subsystem, h.status = sub, status
	return h, nil
}

// gpuRef reads the GPU index under key and checks that the GPU exists.
func (b *builder) gpuRef(o *object, key string) (int, error) {
	v, vp := o.at(key)
	return b.gpuIndex(v, vp)
}

func (b *builder) gpuIndex(n *yaml.Node, p string) (int, error) {
	i, err := b.d.integer(n, p, 0, maxGPUs)
	if err != nil {
		return 0, err
	}
	if int(i) >= len(b.gpuList) {
		return 0, b.d.errf(resolve(n), p, "GPU %d does not exist (the scenario has %d)", i, len(b.gpuList))
	}
	return int(i), nil
}
