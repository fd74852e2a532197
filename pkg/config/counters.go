// Package config reads counters files: the list of DCGM fields to collect,
// in dcgm-exporter's CSV format ("DCGM_FI_DEV_GPU_UTIL, gauge, help"), so an
// existing dcgm-exporter counters file works unchanged.
package config

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// Counters is a parsed counters file. Each field keeps the file's spelling
// of its DCGM name (DCGMName), its type column (DCGMType) and its help column
// (DCGMHelp): dcgm naming prints them, as dcgm-exporter does. Prometheus
// naming uses the catalog's name, type and help whatever the file says.
type Counters struct {
	// Fields to collect, in file order, each once.
	Fields []fields.Field
	// Labels are fields listed with type "label", with Kind fields.Label:
	// in dcgm naming their values label every series, as in dcgm-exporter.
	// Prometheus naming ignores them.
	Labels []fields.Field
	// XIDErrorsCount and ClockEventsCount are dcgm-exporter's
	// DCGM_EXP_XID_ERRORS_COUNT and DCGM_EXP_CLOCK_EVENTS_COUNT rows; nil when
	// the file does not list them. Only dcgm naming exports them.
	XIDErrorsCount, ClockEventsCount *ExporterCounter
	// Skipped are rows naming something dcgm-exporter exports and
	// gpu-exporter does not; they are left out rather than failing the file.
	Skipped []Skipped
}

// ExporterCounter is a counters file row naming one of dcgm-exporter's own
// DCGM_EXP_* counters.
type ExporterCounter struct {
	// Name as the file spells it.
	Name string
	Type fields.Type
	Help string
}

// Skipped is a counters file row that was left out.
type Skipped struct {
	// Where is "file:line".
	Where  string
	Name   string
	Reason string
}

// LoadCounters reads and parses a counters file.
func LoadCounters(path string, cat *fields.Catalog) (*Counters, error) {
	data, err := os.ReadFile(path) //nolint:gosec // G304: the path is the operator's --collect.counters
	if err != nil {
		return nil, fmt.Errorf("counters file: %w", err)
	}
	return ParseCounters(path, bytes.NewReader(data), cat)
}

// ParseCounters parses a counters file read from r; name is used in errors.
// Lines are "FIELD, TYPE, HELP"; blank lines and lines starting with # are
// ignored. FIELD is any name the catalog knows (DCGM_FI_* names, their DCGM 4
// aliases, or exported names). TYPE is gauge, counter or label. HELP may
// contain commas.
func ParseCounters(name string, r io.Reader, cat *fields.Catalog) (*Counters, error) {
	out := &Counters{}
	seen := map[uint16]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff")
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		parts := strings.SplitN(text, ",", 3)
		if len(parts) < 2 {
			return nil, fmt.Errorf("counters file %s:%d: want \"FIELD, TYPE, HELP\", got %q", name, line, text)
		}
		r := row{
			name: strings.TrimSpace(parts[0]),
			typ:  strings.ToLower(strings.TrimSpace(parts[1])),
		}
		if len(parts) == 3 {
			r.help = strings.TrimSpace(parts[2])
		}
		where := fmt.Sprintf("%s:%d", name, line)
		if err := out.add(r, where, cat, seen, line); err != nil {
			return nil, fmt.Errorf("counters file %s: %w", where, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("counters file %s:%d: %w", name, line+1, err)
	}
	if len(out.Fields) == 0 {
		return nil, fmt.Errorf("counters file %s: no fields listed", name)
	}
	return out, nil
}

// row is one non-comment line of a counters file.
type row struct{ name, typ, help string }

// add files the row at where under Fields, Labels, the exporter counters or
// Skipped. seen maps field ids to the line that listed them.
func (c *Counters) add(r row, where string, cat *fields.Catalog, seen map[uint16]int, line int) error {
	if reason, ok := fields.NotExported(r.name); ok {
		c.Skipped = append(c.Skipped, Skipped{Where: where, Name: r.name, Reason: reason})
		return nil
	}
	for _, x := range []struct {
		name string
		dst  **ExporterCounter
	}{{fields.XIDErrorsCountName, &c.XIDErrorsCount}, {fields.ClockEventsCountName, &c.ClockEventsCount}} {
		if !strings.EqualFold(r.name, x.name) {
			continue
		}
		typ, err := metricType(r)
		if err != nil {
			return err
		}
		if *x.dst != nil {
			return fmt.Errorf("%s listed twice", x.name)
		}
		*x.dst = &ExporterCounter{Name: r.name, Type: typ, Help: r.help}
		return nil
	}
	f, ok := cat.Lookup(r.name)
	if !ok {
		if f, ok = cat.LookupLabel(r.name); !ok {
			return fmt.Errorf("unknown field %q", r.name)
		}
		if r.typ != "label" {
			return fmt.Errorf("field %q is a string field: list it with type label", r.name)
		}
	}
	if prev, dup := seen[f.ID]; dup {
		return fmt.Errorf("field %q already listed on line %d", r.name, prev)
	}
	seen[f.ID] = line
	if !strings.EqualFold(r.name, f.Name) {
		f.DCGMName = r.name // dcgm-exporter prints the file's spelling
	}
	f.DCGMHelp = r.help
	if r.typ == "label" {
		f.Kind = fields.Label
		c.Labels = append(c.Labels, f)
		return nil
	}
	typ, err := metricType(r)
	if err != nil {
		return err
	}
	f.DCGMType = typ
	c.Fields = append(c.Fields, f)
	return nil
}

// metricType parses the type column of a metric row.
func metricType(r row) (fields.Type, error) {
	switch r.typ {
	case "gauge":
		return fields.Gauge, nil
	case "counter":
		return fields.Counter, nil
	}
	return 0, fmt.Errorf("field %q: unknown type %q (want gauge, counter or label)", r.name, r.typ)
}

// Format writes set as a counters file that ParseCounters reads back, with
// each field's DCGM name, type and help (label fields as "label" rows).
func Format(w io.Writer, set []fields.Field) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# Fields gpu-exporter collects. Format: DCGM field, type (gauge, counter or label), help.")
	fmt.Fprintln(bw, "# dcgm-exporter counters files are read as they are. The type and help columns")
	fmt.Fprintln(bw, "# apply to --naming=dcgm, which exports DCGM's units; --naming=prometheus uses")
	fmt.Fprintln(bw, "# the catalog's names, base units and help.")
	for _, f := range set {
		typ := f.DCGMType.String()
		if f.Kind == fields.Label {
			typ = "label"
		}
		fmt.Fprintf(bw, "%s, %s, %s\n", f.DCGMName, typ, f.DCGMHelp)
	}
	return bw.Flush()
}
