// Package fields is the catalog of GPU fields the exporter knows: for each
// DCGM field id, the name it is exported under, its Prometheus type, the
// scale that turns DCGM's unit into a base unit, its help text and the
// entity levels that carry it. Every other package reads this table; adding a
// metric is one row here plus its test.
package fields

import (
	"fmt"
	"math"
	"strings"
)

// Type is the Prometheus metric type of an exported field.
type Type uint8

// Metric types.
const (
	Gauge Type = iota
	Counter
)

// String returns the type as written on a # TYPE line.
func (t Type) String() string {
	if t == Counter {
		return "counter"
	}
	return "gauge"
}

// Level is a set of entity levels a field can be read at.
type Level uint8

// Entity levels. A field may apply to several (a bit set).
const (
	LevelGPU Level = 1 << iota
	LevelGPUInstance
	LevelNVLink
	LevelNVSwitch
)

// Has reports whether l includes level x.
func (l Level) Has(x Level) bool { return l&x != 0 }

// Kind says how a raw value becomes series.
type Kind uint8

// Kinds of fields.
const (
	// Number: one series whose value is the raw value times Scale.
	Number Kind = iota
	// Bitmask: one 0/1 series per known bit, labelled reason=<bit name>.
	// In dcgm naming the raw integer is exported instead, as dcgm-exporter
	// does.
	Bitmask
	// Label: never a series; in dcgm naming the value labels every series
	// of its entity, as a counters file "label" row does in dcgm-exporter.
	Label
)

// Reason names one bit of a bitmask field.
type Reason struct {
	Bit  uint64
	Name string
	// DCGMName is the clock_event label value dcgm-exporter's
	// DCGM_EXP_CLOCK_EVENTS_COUNT gives the bit.
	DCGMName string
}

// Field is one row of the catalog.
type Field struct {
	// ID is the DCGM field id (dcgm_fields.h).
	ID uint16
	// DCGMName is the DCGM_FI_* name dcgm-exporter exports, which is also the
	// name used in counters files.
	DCGMName string
	// Aliases are the other DCGM_FI_* names DCGM and go-dcgm releases gave
	// the same id (DCGM 4.6's base-unit renames, older spellings). New fills
	// them from dcgm_names.txt; table rows leave them empty.
	Aliases []string
	// LegacyName is the dcgm-exporter 1.x name of the field ("dcgm_sm_clock"),
	// from go-dcgm's legacy names, which dcgm-exporter's 1.x-compatibility
	// counters file lists; empty when it had none. New fills it from
	// dcgm_names.txt.
	LegacyName string
	// Name is the Prometheus-conventional exported name, with _total on counters.
	Name string
	// Type is the Prometheus type of Name.
	Type Type
	// DCGMType is the type dcgm-exporter declares for DCGMName.
	DCGMType Type
	// DCGMHelp is the HELP text of DCGMName in dcgm naming, in DCGM's native
	// unit. A counters file's help column replaces it.
	DCGMHelp string
	// DCGMDefault marks fields dcgm-exporter's default counters file
	// collects; dcgm naming's built-in set adds them to the default set.
	DCGMDefault bool
	// Scale multiplies DCGM's native value into the base unit of Name.
	Scale float64
	// Unit is the base unit of Name (empty for dimensionless values).
	Unit string
	// Help is the HELP text of Name.
	Help string
	// Levels are the entity levels that can carry the field.
	Levels Level
	// Profiling marks DCGM profiling (DCP) fields, which need a supported
	// metric group on the GPU.
	Profiling bool
	// Default marks fields in the built-in counters set.
	Default bool
	// Fabric marks NVLink, NVSwitch and fabric manager fields. Sources read
	// them on the fabric's own interval (--collect.nvlink-interval), in a
	// watch of their own, since links multiply their series; nodes without
	// an NVLink fabric leave them blank.
	Fabric bool
	// Kind says how values become series.
	Kind Kind
	// Reasons name the bits of a Bitmask field, in exposition order.
	Reasons []Reason
}

// Scaled converts a raw DCGM value into the base unit of Name. Scales below
// one are applied as a division by their (integral) reciprocal, so that 95 %
// becomes exactly 0.95 rather than 95 × 0.01 = 0.9500000000000001.
func (f *Field) Scaled(raw float64) float64 {
	switch {
	case f.Scale == 1:
		return raw
	case f.Scale < 1:
		return raw / math.Round(1/f.Scale)
	default:
		return raw * f.Scale
	}
}

// DCGMUnit returns the unit of the raw value DCGM reports, which dcgm naming
// exports unscaled: "MHz", "MiB", "KiB", "%", "mJ", "ns", or Unit when DCGM already
// reports the base unit.
func (f *Field) DCGMUnit() string {
	switch {
	case f.Scale == percent:
		return "%"
	case f.Scale == mebibytes:
		return "MiB"
	case f.Scale == kibibytes:
		return "KiB"
	case f.Scale == megahertz:
		return "MHz"
	case f.Scale == millijoul:
		return "mJ"
	case f.Scale == nanosec:
		return "ns"
	}
	return f.Unit
}

// Base returns Name without the _total suffix of counters, the family name
// OpenMetrics uses on # TYPE and # HELP lines.
func (f *Field) Base() string {
	if f.Type == Counter {
		return strings.TrimSuffix(f.Name, "_total")
	}
	return f.Name
}

// Catalog is an immutable, indexed view of the field table.
type Catalog struct {
	fields  []Field
	byID    map[uint16]int
	byName  map[string]int
	labels  []Field
	byLabel map[string]int
	// known maps every DCGM field name (upper case) to its id.
	known map[string]uint16
}

// New returns the catalog built from the field table and the names of
// dcgm_names.txt. It fails only if they are inconsistent (duplicate ids or
// names), which a test guards.
func New() (*Catalog, error) {
	rows := table()
	for i := range rows {
		if rows[i].DCGMHelp == "" {
			rows[i].DCGMHelp = rows[i].Help // same unit in both namings
		}
	}
	labels := labelTable()
	names, err := parseNames(dcgmNamesText)
	if err != nil {
		return nil, err
	}
	known, err := attachNames(names, rows, labels)
	if err != nil {
		return nil, err
	}
	c := &Catalog{fields: rows, byID: make(map[uint16]int, len(rows)), byName: make(map[string]int, 4*len(rows)), known: known}
	for i := range rows {
		f := &rows[i]
		if _, dup := c.byID[f.ID]; dup {
			return nil, fmt.Errorf("field catalog: duplicate field id %d (%s)", f.ID, f.DCGMName)
		}
		c.byID[f.ID] = i
		if err := c.addNames(c.byName, i, f.ID, f.DCGMName, f.Name); err != nil {
			return nil, err
		}
	}
	c.labels = labels
	c.byLabel = make(map[string]int, 2*len(c.labels))
	labelByID := make(map[uint16]int, len(c.labels))
	for i := range c.labels {
		f := &c.labels[i]
		if _, dup := c.byID[f.ID]; dup {
			return nil, fmt.Errorf("field catalog: label field id %d (%s) is also a metric field", f.ID, f.DCGMName)
		}
		if _, dup := labelByID[f.ID]; dup {
			return nil, fmt.Errorf("field catalog: duplicate label field id %d (%s)", f.ID, f.DCGMName)
		}
		labelByID[f.ID] = i
		if err := c.addNames(c.byLabel, i, f.ID, f.DCGMName); err != nil {
			return nil, err
		}
	}
	// Every name dcgm_names.txt gives a catalog id finds its row.
	for _, n := range names {
		if i, ok := c.byID[n.id]; ok {
			if err := c.addNames(c.byName, i, n.id, n.name); err != nil {
				return nil, err
			}
		} else if i, ok := labelByID[n.id]; ok {
			if err := c.addNames(c.byLabel, i, n.id, n.name); err != nil {
				return nil, err
			}
		}
	}
	for key := range c.byLabel {
		if _, dup := c.byName[key]; dup {
			return nil, fmt.Errorf("field catalog: label field name %q is also a metric field name", key)
		}
	}
	return c, nil
}

// addNames files names under row i (field id id) of index, refusing a name
// another row already has.
func (c *Catalog) addNames(index map[string]int, i int, id uint16, names ...string) error {
	for _, n := range names {
		key := nameKey(n)
		if j, dup := index[key]; dup && j != i {
			return fmt.Errorf("field catalog: name %q of field id %d is already another field's name", n, id)
		}
		index[key] = i
	}
	return nil
}

// MustNew is New for callers that hold the table to be consistent (tests
// prove it is); it panics otherwise.
func MustNew() *Catalog {
	c, err := New()
	if err != nil {
		panic(err)
	}
	return c
}

// All returns every field, in catalog order. The slice is a copy.
func (c *Catalog) All() []Field {
	return append([]Field(nil), c.fields...)
}

// ByID returns the field with DCGM id id.
func (c *Catalog) ByID(id uint16) (Field, bool) {
	i, ok := c.byID[id]
	if !ok {
		return Field{}, false
	}
	return c.fields[i], true
}

// Lookup finds a field by its DCGM_FI_* name, one of its aliases, or its
// exported Prometheus name; case does not matter.
func (c *Catalog) Lookup(name string) (Field, bool) {
	i, ok := c.byName[nameKey(name)]
	if !ok {
		return Field{}, false
	}
	return c.fields[i], true
}

// LookupLabel finds a label field (a DCGM string field such as the driver
// version, which counters files may list only as a "label" row) by its
// DCGM_FI_* name or an alias; case does not matter.
func (c *Catalog) LookupLabel(name string) (Field, bool) {
	i, ok := c.byLabel[nameKey(name)]
	if !ok {
		return Field{}, false
	}
	return c.labels[i], true
}

// Labels returns every label field. The slice is a copy.
func (c *Catalog) Labels() []Field {
	return append([]Field(nil), c.labels...)
}

// DCGMDefaults returns dcgm naming's built-in set: the default set plus the
// fields dcgm-exporter's default counters file collects, in catalog order,
// and the label fields that file lists.
func (c *Catalog) DCGMDefaults() (set, labels []Field) {
	for _, f := range c.fields {
		if f.Default || f.DCGMDefault {
			set = append(set, f)
		}
	}
	for _, f := range c.labels {
		if f.DCGMDefault {
			labels = append(labels, f)
		}
	}
	return set, labels
}

// Defaults returns the built-in counters set, in catalog order.
func (c *Catalog) Defaults() []Field {
	var out []Field
	for _, f := range c.fields {
		if f.Default {
			out = append(out, f)
		}
	}
	return out
}
