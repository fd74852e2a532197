package fields

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

// dcgmNamesText is dcgm_names.txt: every field name DCGM's dcgm_fields.h and
// go-dcgm have used, with its id. It is the one table of field names: the
// catalog rows of table.go carry only their DCGMName, and every other name
// of their id comes from here.
//
//go:embed dcgm_names.txt
var dcgmNamesText string

// ourSpelling marks rows of dcgm_names.txt that only gpu-exporter used.
const ourSpelling = "gpu-exporter"

// fieldName is one row of dcgm_names.txt.
type fieldName struct {
	name string
	id   uint16
	// ours: a spelling only an earlier gpu-exporter used; accepted, not
	// listed among a field's aliases.
	ours bool
}

// parseNames reads dcgm_names.txt ("NAME ID [gpu-exporter]" lines, # comments).
func parseNames(text string) ([]fieldName, error) {
	var out []fieldName
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Fields(line)
		if len(cols) < 2 || len(cols) > 3 || (len(cols) == 3 && cols[2] != ourSpelling) {
			return nil, fmt.Errorf("field names dcgm_names.txt:%d: want \"NAME ID [%s]\", got %q", i+1, ourSpelling, line)
		}
		id, err := strconv.ParseUint(cols[1], 10, 16)
		if err != nil {
			return nil, fmt.Errorf("field names dcgm_names.txt:%d: id: %w", i+1, err)
		}
		out = append(out, fieldName{name: cols[0], id: uint16(id), ours: len(cols) == 3})
	}
	return out, nil
}

// nameKey is the case-insensitive key of a field name.
func nameKey(name string) string { return strings.ToUpper(strings.TrimSpace(name)) }

// attachNames gives each catalog row (metric and label fields) the names
// dcgm_names.txt lists for its id: lower-case dcgm_* names (go-dcgm's
// legacyDCGMFields, dcgm-exporter 1.x) become LegacyName, other DCGM names
// Aliases. It returns every name's id, for DCGMFieldID.
func attachNames(names []fieldName, rows, labels []Field) (map[string]uint16, error) {
	byID := make(map[uint16]*Field, len(rows)+len(labels))
	for _, set := range [][]Field{rows, labels} {
		for i := range set {
			byID[set[i].ID] = &set[i]
		}
	}
	known := make(map[string]uint16, len(names))
	for _, n := range names {
		key := nameKey(n.name)
		if id, dup := known[key]; dup && id != n.id {
			return nil, fmt.Errorf("field names: %q listed with ids %d and %d", n.name, id, n.id)
		}
		known[key] = n.id
		f, ok := byID[n.id]
		if !ok || n.ours || n.name == f.DCGMName {
			continue
		}
		if strings.HasPrefix(n.name, "dcgm_") && f.LegacyName == "" {
			f.LegacyName = n.name
			continue
		}
		f.Aliases = append(f.Aliases, n.name)
	}
	return known, nil
}

// DCGMFieldID returns the DCGM field id of name (any case) if a DCGM or
// go-dcgm release has used it, whether or not the catalog exports the field.
func (c *Catalog) DCGMFieldID(name string) (uint16, bool) {
	id, ok := c.known[nameKey(name)]
	return id, ok
}
