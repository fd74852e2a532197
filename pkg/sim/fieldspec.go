package sim

import (
	"hash/fnv"
	"math"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// fieldSpec is one field of one entity, ready to evaluate.
type fieldSpec struct {
	gen     generator // nil: Blank, unless an XID applies
	integer bool
	floor   bool // integer by flooring (counters), not rounding
	// xids are the XID faults of the GPU, by time; set on
	// DCGM_FI_DEV_XID_ERRORS only. The latest one at or before t wins.
	xids []xidFault
}

func (f *fieldSpec) value(t time.Duration) source.Value {
	var v source.Value
	f.fill(t, &v)
	return v
}

// fill stores the value at t into v, which must be Blank. It writes only
// the scalar members, so that filling a sample on the heap needs no write
// barriers.
func (f *fieldSpec) fill(t time.Duration, v *source.Value) {
	for i := len(f.xids) - 1; i >= 0; i-- {
		if f.xids[i].at <= t {
			v.Kind, v.Int = source.Int, f.xids[i].xid
			return
		}
	}
	if f.gen == nil {
		return
	}
	x := f.gen.at(t)
	if !f.integer {
		v.Kind, v.Float = source.Float, x
		return
	}
	if f.floor {
		x = math.Floor(x)
	} else {
		x = math.Round(x)
	}
	v.Kind, v.Int = source.Int, toInt64(x)
}

func toInt64(v float64) int64 {
	switch {
	case math.IsNaN(v):
		return 0
	case v >= math.MaxInt64:
		return math.MaxInt64
	case v <= math.MinInt64:
		return math.MinInt64
	default:
		return int64(v)
	}
}

// template is a parsed field spec, instantiated once per entity.
type template struct {
	field   fields.Field
	keyNode *yaml.Node // where the field was named, for later errors
	gen     generator  // nil when blank
	integer bool
	floor   bool
}

func (t *template) instantiate(salt uint64) *fieldSpec {
	s := &fieldSpec{integer: t.integer, floor: t.floor}
	if t.gen != nil {
		s.gen = t.gen.salted(salt)
	}
	return s
}

// fieldMap parses {FIELD: SPEC, ...}; level is the entity level the map is
// for, so that a GPU-only field cannot be set on a MIG instance.
func (d *decoder) fieldMap(n *yaml.Node, path string, level fields.Level) (map[uint16]*template, error) {
	es, err := d.entries(n, path)
	if err != nil {
		return nil, err
	}
	out := make(map[uint16]*template, len(es))
	for _, e := range es {
		f, ok := d.catalog.Lookup(e.key)
		if !ok {
			return nil, d.errf(e.keyNode, path, "unknown field %q", e.key)
		}
		if !f.Levels.Has(level) {
			return nil, d.errf(e.keyNode, path, "field %s is not reported per %s", f.DCGMName, levelName(level))
		}
		if prev, dup := out[f.ID]; dup {
			return nil, d.errf(e.keyNode, path, "field %s given twice (also at line %d)", f.DCGMName, prev.keyNode.Line)
		}
		t, err := d.template(e.val, keyPath(path, e.key), f)
		if err != nil {
			return nil, err
		}
		t.keyNode = e.keyNode
		out[f.ID] = t
	}
	return out, nil
}

func levelName(l fields.Level) string {
	switch l {
	case fields.LevelGPUInstance:
		return "MIG instance"
	case fields.LevelNVLink:
		return "NVLink"
	case fields.LevelNVSwitch:
		return "NVSwitch"
	}
	return "GPU"
}

// generatorKeys are the keys that name a generator in a field spec.
func generatorKeys() []string {
	return []string{"constant", "ramp", "sine", "step", "noise", "counter", "sum"}
}

// template parses one field's SPEC.
func (d *decoder) template(n *yaml.Node, path string, f fields.Field) (*template, error) {
	t := &template{field: f, integer: f.Kind == fields.Bitmask}
	if resolve(n).Kind != yaml.MappingNode {
		g, err := d.generator(n, path)
		if err != nil {
			return nil, err
		}
		t.gen = g
		return t, nil
	}
	keys := append(generatorKeys(), "blank", "min", "max", "jitter", "integer")
	o, err := d.object(n, path, keys...)
	if err != nil {
		return nil, err
	}
	if o.has("blank") {
		if _, err := o.truth("blank"); err != nil {
			return nil, err
		}
		if len(o.entries) != 1 {
			return nil, d.errf(o.node, path, "blank: true cannot be combined with other keys")
		}
		return t, nil
	}
	g, isCounter, err := d.generatorObject(o)
	if err != nil {
		return nil, err
	}
	integer, err := o.boolean("integer")
	if err != nil {
		return nil, err
	}
	t.gen, t.integer, t.floor = g, t.integer || integer, isCounter
	if f.Type == fields.Counter && !g.monotonic() {
		return nil, d.errf(o.node, path, "%s is a counter: its spec must never decrease (constant, counter, or a rising step or ramp without repeat, no noise)", f.DCGMName)
	}
	return t, nil
}

// generator parses a number (a constant) or a generator mapping without the
// top-level-only keys (blank, integer).
func (d *decoder) generator(n *yaml.Node, path string) (generator, error) {
	if resolve(n).Kind != yaml.MappingNode {
		v, err := d.num(n, path)
		if err != nil {
			return nil, d.errf(resolve(n), path, "want a number or a mapping with one of %s, got %s", strings.Join(generatorKeys(), ", "), describe(resolve(n)))
		}
		return constant{v}, nil
	}
	o, err := d.object(n, path, append(generatorKeys(), "min", "max", "jitter")...)
	if err != nil {
		return nil, err
	}
	g, _, err := d.generatorObject(o)
	return g, err
}

// generatorObject reads the one generator key of o and its modifiers
// (jitter, min, max). isCounter reports a counter generator, which rounds
// down to stay monotonic.
func (d *decoder) generatorObject(o *object) (g generator, isCounter bool, err error) {
	var chosen *entry
	for _, k := range generatorKeys() {
		e := o.byKey[k]
		if e == nil {
			continue
		}
		if chosen != nil {
			return nil, false, d.errf(e.keyNode, o.path, "choose one generator, got %s and %s", chosen.key, e.key)
		}
		chosen = e
	}
	if chosen == nil {
		return nil, false, d.errf(o.node, o.path, "missing a generator (one of %s)", strings.Join(generatorKeys(), ", "))
	}
	if g, err = d.generatorKind(chosen.key, chosen.val, keyPath(o.path, chosen.key)); err != nil {
		return nil, false, err
	}
	if n, p := o.at("jitter"); n != nil {
		sd, err := d.num(n, p)
		if err != nil {
			return nil, false, err
		}
		if sd < 0 {
			return nil, false, d.errf(n, p, "jitter must not be negative")
		}
		g = &sum{parts: []generator{g, &noise{stddev: sd, seed: hashString(o.path), bucket: time.Second}}}
	}
	lo, err := o.num("min", math.Inf(-1))
	if err != nil {
		return nil, false, err
	}
	hi, err := o.num("max", math.Inf(1))
	if err != nil {
		return nil, false, err
	}
	if lo > hi {
		return nil, false, d.errf(o.node, o.path, "min %g is above max %g", lo, hi)
	}
	if o.has("min") || o.has("max") {
		g = &clamp{g: g, lo: lo, hi: hi}
	}
	return g, chosen.key == "counter", nil
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

func (d *decoder) generatorKind(kind string, n *yaml.Node, path string) (generator, error) {
	switch kind {
	case "constant":
		v, err := d.num(n, path)
		return constant{v}, err
	case "ramp":
		return d.ramp(n, path)
	case "sine":
		return d.sine(n, path)
	case "step":
		return d.step(n, path)
	case "noise":
		return d.noise(n, path)
	case "counter":
		return d.counter(n, path)
	default: // "sum"
		items, err := d.list(n, path)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return nil, d.errf(resolve(n), path, "sum needs at least one part")
		}
		s := &sum{}
		for i, item := range items {
			g, err := d.generator(item, indexPath(path, i))
			if err != nil {
				return nil, err
			}
			s.parts = append(s.parts, g)
		}
		return s, nil
	}
}

func (d *decoder) ramp(n *yaml.Node, path string) (generator, error) {
	o, err := d.object(n, path, "from", "to", "over", "at", "repeat")
	if err != nil {
		return nil, err
	}
	if err := o.require("from", "to", "over"); err != nil {
		return nil, err
	}
	g := &ramp{}
	if g.from, err = o.num("from", 0); err != nil {
		return nil, err
	}
	if g.to, err = o.num("to", 0); err != nil {
		return nil, err
	}
	if g.over, err = o.duration("over", false); err != nil {
		return nil, err
	}
	if g.over == 0 {
		v, p := o.at("over")
		return nil, d.errf(v, p, "must be positive")
	}
	if g.start, err = o.duration("at", false); err != nil {
		return nil, err
	}
	if g.repeat, err = o.boolean("repeat"); err != nil {
		return nil, err
	}
	return g, nil
}

func (d *decoder) sine(n *yaml.Node, path string) (generator, error) {
	o, err := d.object(n, path, "mean", "amplitude", "period", "phase")
	if err != nil {
		return nil, err
	}
	if err := o.require("mean", "amplitude", "period"); err != nil {
		return nil, err
	}
	g := &sine{}
	if g.mean, err = o.num("mean", 0); err != nil {
		return nil, err
	}
	if g.amplitude, err = o.num("amplitude", 0); err != nil {
		return nil, err
	}
	if g.period, err = o.duration("period", false); err != nil {
		return nil, err
	}
	if g.period == 0 {
		v, p := o.at("period")
		return nil, d.errf(v, p, "must be positive")
	}
	if g.phase, err = o.duration("phase", true); err != nil {
		return nil, err
	}
	return g, nil
}

func (d *decoder) step(n *yaml.Node, path string) (generator, error) {
	g := &step{}
	stepsNode, stepsPath := n, path
	if resolve(n).Kind == yaml.MappingNode {
		o, err := d.object(n, path, "steps", "repeat")
		if err != nil {
			return nil, err
		}
		if err := o.require("steps"); err != nil {
			return nil, err
		}
		if g.repeat, err = o.duration("repeat", false); err != nil {
			return nil, err
		}
		if v, p := o.at("repeat"); v != nil && g.repeat == 0 {
			return nil, d.errf(v, p, "must be positive")
		}
		stepsNode, stepsPath = o.at("steps")
	}
	items, err := d.list(stepsNode, stepsPath)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, d.errf(resolve(stepsNode), stepsPath, "needs at least one step")
	}
	for i, item := range items {
		p := indexPath(stepsPath, i)
		o, err := d.object(item, p, "at", "value")
		if err != nil {
			return nil, err
		}
		if err := o.require("at", "value"); err != nil {
			return nil, err
		}
		at, err := o.duration("at", false)
		if err != nil {
			return nil, err
		}
		if i > 0 && at <= g.times[i-1] {
			return nil, d.errf(o.node, p, "step at %s is not after the previous one (%s)", at, g.times[i-1])
		}
		if g.repeat > 0 && at >= g.repeat {
			return nil, d.errf(o.node, p, "step at %s is not within repeat %s", at, g.repeat)
		}
		v, err := o.num("value", 0)
		if err != nil {
			return nil, err
		}
		g.times = append(g.times, at)
		g.values = append(g.values, v)
	}
	return g, nil
}

func (d *decoder) noise(n *yaml.Node, path string) (generator, error) {
	o, err := d.object(n, path, "mean", "stddev", "seed", "bucket")
	if err != nil {
		return nil, err
	}
	if err := o.require("stddev"); err != nil {
		return nil, err
	}
	g := &noise{bucket: time.Second}
	if g.mean, err = o.num("mean", 0); err != nil {
		return nil, err
	}
	if g.stddev, err = o.num("stddev", 0); err != nil {
		return nil, err
	}
	if g.stddev < 0 {
		v, p := o.at("stddev")
		return nil, d.errf(v, p, "must not be negative")
	}
	seed, err := o.integer("seed", math.MinInt64, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	g.seed = uint64(seed)
	if o.has("bucket") {
		if g.bucket, err = o.duration("bucket", false); err != nil {
			return nil, err
		}
		if g.bucket == 0 {
			v, p := o.at("bucket")
			return nil, d.errf(v, p, "must be positive")
		}
	}
	return g, nil
}

func (d *decoder) counter(n *yaml.Node, path string) (generator, error) {
	o, err := d.object(n, path, "start", "rate")
	if err != nil {
		return nil, err
	}
	if err := o.require("rate"); err != nil {
		return nil, err
	}
	g := &counter{}
	if g.start, err = o.num("start", 0); err != nil {
		return nil, err
	}
	if g.rate, err = o.num("rate", 0); err != nil {
		return nil, err
	}
	if g.rate < 0 {
		v, p := o.at("rate")
		return nil, d.errf(v, p, "a counter's rate must not be negative")
	}
	return g, nil
}
