package sim

import (
	"time"

	"go.yaml.in/yaml/v3"
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
	o, err := d.object(n, p, "at", "duration", "gpu", "xid", "outage", "lost")
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
	for _, k := range []bool{o.has("xid"), outage, lost} {
		if k {
			kinds++
		}
	}
	if kinds != 1 {
		return d.errf(o.node, p, "a fault is exactly one of xid: N, outage: true or lost: true")
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
	xid, err := o.integer("xid", 1, maxXID)
	if err != nil {
		return err
	}
	b.scn.xids = append(b.scn.xids, xidFault{at: w.from, gpu: gpu, xid: xid})
	return nil
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
