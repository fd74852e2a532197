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
	Bitmask
)

// Reason names one bit of a bitmask field.
type Reason struct {
	Bit  uint64
	Name string
}

// Field is one row of the catalog.
type Field struct {
	// ID is the DCGM field id (dcgm_fields.h).
	ID uint16
	// DCGMName is the DCGM_FI_* name dcgm-exporter exports, which is also the
	// name used in counters files.
	DCGMName string
	// Aliases are other DCGM_FI_* spellings of the same id (DCGM 4 renames).
	Aliases []string
	// Name is the Prometheus-conventional exported name, with _total on counters.
	Name string
	// Type is the Prometheus type of Name.
	Type Type
	// DCGMType is the type dcgm-exporter declares for DCGMName.
	DCGMType Type
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
	fields []Field
	byID   map[uint16]int
	byName map[string]int
}

// New returns the catalog built from the field table. It fails only if the
// table itself is inconsistent (duplicate ids or names), which a test guards.
func New() (*Catalog, error) {
	rows := table()
	c := &Catalog{fields: rows, byID: make(map[uint16]int, len(rows)), byName: make(map[string]int, 3*len(rows))}
	for i := range rows {
		f := &rows[i]
		if _, dup := c.byID[f.ID]; dup {
			return nil, fmt.Errorf("field catalog: duplicate field id %d (%s)", f.ID, f.DCGMName)
		}
		c.byID[f.ID] = i
		names := append([]string{f.DCGMName, f.Name}, f.Aliases...)
		for _, n := range names {
			key := strings.ToUpper(n)
			if j, dup := c.byName[key]; dup && j != i {
				return nil, fmt.Errorf("field catalog: name %q used by field ids %d and %d", n, rows[j].ID, f.ID)
			}
			c.byName[key] = i
		}
	}
	return c, nil
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
	i, ok := c.byName[strings.ToUpper(strings.TrimSpace(name))]
	if !ok {
		return Field{}, false
	}
	return c.fields[i], true
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
