// Package config reads counters files: the list of DCGM fields to collect,
// in dcgm-exporter's CSV format ("DCGM_FI_DEV_GPU_UTIL, gauge, help"), so an
// existing dcgm-exporter counters file works unchanged.
package config

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// CountersFile is a parsed counters file (what exposition.Counters, the
// set to collect, is made from). Each field keeps the file's spelling
// of its DCGM name (DCGMName), its type column (DCGMType) and its help column
// (DCGMHelp): dcgm naming prints them, as dcgm-exporter does. Prometheus
// naming uses the catalog's name, type and help whatever the file says.
type CountersFile struct {
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
	// GPUHealthStatus is the DCGM_EXP_GPU_HEALTH_STATUS row; nil when the
	// file does not list it. Only dcgm naming exports it.
	GPUHealthStatus *ExporterCounter
	// P2PStatus is the DCGM_EXP_P2P_STATUS row; nil when the file does not
	// list it. Only dcgm naming exports it.
	P2PStatus *ExporterCounter
	// Skipped are rows naming something dcgm-exporter exports and
	// gpu-exporter does not; they are left out rather than failing the file.
	Skipped []Skipped
	// Warnings are rows dcgm-exporter accepts that were read with a
	// change: a field listed again (the first row is kept), a type that
	// cannot describe one sample (histogram, summary).
	Warnings []Warning
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

// Warning is a counters file row accepted with a change.
type Warning struct {
	// Where is "file:line".
	Where   string
	Name    string
	Message string
}

// LoadCounters reads and parses a counters file. The path must be a regular
// file; the read is bounded by ReadTimeout (LoadCountersContext also stops
// when its context is done).
func LoadCounters(path string, cat *fields.Catalog) (*CountersFile, error) {
	return LoadCountersContext(context.Background(), path, cat)
}

// ParseCounters parses a counters file read from r; name is used in errors.
// Lines are "FIELD, TYPE, HELP"; blank lines and lines starting with # are
// ignored. FIELD is any name the catalog knows (DCGM_FI_* names, every
// alias a DCGM or go-dcgm release used, or exported names). TYPE is gauge,
// counter or label. HELP may contain commas. Every file dcgm-exporter
// accepts loads: a field listed twice keeps its first row, a DCGM field the
// catalog lacks is skipped, and histogram or summary types are read as the
// catalog's type, each with a Warning or Skipped entry naming the line.
// Bytes that are not UTF-8 (a Latin-1 "\xb0C" in a help column) are
// replaced with U+FFFD here, where the text enters.
func ParseCounters(name string, r io.Reader, cat *fields.Catalog) (*CountersFile, error) {
	out := &CountersFile{}
	seen := map[seenKey]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(strings.ToValidUTF8(sc.Text(), "\uFFFD"))
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
			name: csvField(parts[0]),
			typ:  strings.ToLower(csvField(parts[1])),
		}
		if len(parts) == 3 {
			r.help = csvField(parts[2])
		}
		at := location{file: name, line: line}
		if err := out.add(r, at, cat, seen); err != nil {
			return nil, fmt.Errorf("counters file %s: %w", at, err)
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

// seenKey names what a row lists, to find a second row for it: a field id,
// or one of dcgm-exporter's own counters (id 0, name set).
type seenKey struct {
	id       uint16
	exporter string
}

// csvField is a trimmed column, unquoted if the file quotes it as CSV does
// ("a, b" with "" for a quote): dcgm-exporter reads counters files with
// encoding/csv (internal/pkg/counters/counter_config.go, ReadCSVFile).
func csvField(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return s
}

// location is a line of a counters file.
type location struct {
	file string
	line int
}

// String returns "file:line".
func (l location) String() string { return fmt.Sprintf("%s:%d", l.file, l.line) }

// add files the row at under Fields, Labels, the exporter counters, Skipped
// or Warnings. seen maps what earlier rows listed to their line.
func (c *CountersFile) add(r row, at location, cat *fields.Catalog, seen map[seenKey]int) error {
	where := at.String()
	if reason, ok := fields.NotExported(r.name); ok {
		c.Skipped = append(c.Skipped, Skipped{Where: where, Name: r.name, Reason: reason})
		return nil
	}
	for _, x := range []struct {
		name string
		dst  **ExporterCounter
	}{
		{fields.XIDErrorsCountName, &c.XIDErrorsCount},
		{fields.ClockEventsCountName, &c.ClockEventsCount},
		{fields.GPUHealthStatusName, &c.GPUHealthStatus},
		{fields.P2PStatusName, &c.P2PStatus},
	} {
		if !strings.EqualFold(r.name, x.name) {
			continue
		}
		typ, err := c.metricType(r, at, fields.Gauge)
		if err != nil {
			return err
		}
		if c.repeated(seen, seenKey{exporter: x.name}, r, at) {
			return nil
		}
		*x.dst = &ExporterCounter{Name: r.name, Type: typ, Help: r.help}
		return nil
	}
	f, ok := cat.Lookup(r.name)
	if !ok {
		if f, ok = cat.LookupLabel(r.name); !ok {
			if id, known := cat.DCGMFieldID(r.name); known {
				// dcgm-exporter accepts any name go-dcgm's GetFieldID knows.
				c.Skipped = append(c.Skipped, Skipped{Where: where, Name: r.name,
					Reason: fmt.Sprintf("DCGM field %d is not in gpu-exporter's field catalog", id)})
				return nil
			}
			return fmt.Errorf("unknown field %q", r.name)
		}
		if r.typ != "label" {
			if _, err := c.metricType(r, at, fields.Gauge); err != nil {
				return err
			}
			// dcgm-exporter would print the string as a sample value,
			// which no scraper parses; a label row is what it can be.
			c.Warnings = append(c.Warnings, Warning{Where: where, Name: r.name,
				Message: fmt.Sprintf("string field listed with type %s; read as a label row", r.typ)})
			r.typ = "label"
		}
	}
	if c.repeated(seen, seenKey{id: f.ID}, r, at) {
		return nil
	}
	if !strings.EqualFold(r.name, f.Name) {
		f.DCGMName = r.name // dcgm-exporter prints the file's spelling
	}
	f.DCGMHelp = r.help
	if r.typ == "label" {
		f.Kind = fields.Label
		c.Labels = append(c.Labels, f)
		return nil
	}
	typ, err := c.metricType(r, at, f.DCGMType)
	if err != nil {
		return err
	}
	f.DCGMType = typ
	c.Fields = append(c.Fields, f)
	return nil
}

// repeated reports whether an earlier row listed k, and if so files a
// warning naming both lines. The first row wins, as in dcgm-exporter: it
// keeps every row, but its collector takes a field's name, type and help
// from the first counter with that field id (findCounterField in
// internal/pkg/collector/gpu_collector.go), and its tests accept
// DCGM_EXP_* counters listed more than once. Its shipped
// 1.x-compatibility-metrics.csv lists DCGM_FI_PROF_PCIE_TX_BYTES and
// DCGM_FI_PROF_PCIE_RX_BYTES twice (dcgm_fi_prof_pcie_tx_bytes, ...).
func (c *CountersFile) repeated(seen map[seenKey]int, k seenKey, r row, at location) bool {
	prev, dup := seen[k]
	if !dup {
		seen[k] = at.line
		return false
	}
	first := location{file: at.file, line: prev}
	c.Warnings = append(c.Warnings, Warning{Where: at.String(), Name: r.name,
		Message: fmt.Sprintf("field already listed at %s; the first row is kept, as dcgm-exporter does", first)})
	return true
}

// metricType parses the type column of a metric row. histogram, summary
// and, for a DCGM_EXP_* counter, label, which dcgm-exporter accepts
// (promMetricType in internal/pkg/counters/variables.go) but which cannot
// describe one sample, become fallback with a warning.
func (c *CountersFile) metricType(r row, at location, fallback fields.Type) (fields.Type, error) {
	switch r.typ {
	case "gauge":
		return fields.Gauge, nil
	case "counter":
		return fields.Counter, nil
	case "histogram", "summary", "label":
		c.Warnings = append(c.Warnings, Warning{Where: at.String(), Name: r.name,
			Message: fmt.Sprintf("type %s cannot describe this value; read as %s", r.typ, fallback)})
		return fallback, nil
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
