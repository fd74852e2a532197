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

// Counters is a parsed counters file.
type Counters struct {
	// Fields to collect, in file order, each once.
	Fields []fields.Field
	// Labels are fields listed with type "label": dcgm-exporter turns them
	// into labels on every series; they are kept for the compatibility mode.
	Labels []fields.Field
}

// LoadCounters reads and parses a counters file.
func LoadCounters(path string, cat *fields.Catalog) (*Counters, error) {
	data, err := os.ReadFile(path)
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
		fieldName := strings.TrimSpace(parts[0])
		typ := strings.ToLower(strings.TrimSpace(parts[1]))
		f, ok := cat.Lookup(fieldName)
		if !ok {
			return nil, fmt.Errorf("counters file %s:%d: unknown field %q", name, line, fieldName)
		}
		if prev, dup := seen[f.ID]; dup {
			return nil, fmt.Errorf("counters file %s:%d: field %q already listed on line %d", name, line, fieldName, prev)
		}
		seen[f.ID] = line
		switch typ {
		case "gauge", "counter":
			out.Fields = append(out.Fields, f)
		case "label":
			out.Labels = append(out.Labels, f)
		default:
			return nil, fmt.Errorf("counters file %s:%d: field %q: unknown type %q (want gauge, counter or label)", name, line, fieldName, typ)
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

// Format writes set as a counters file that ParseCounters reads back.
func Format(w io.Writer, set []fields.Field) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# Fields gpu-exporter collects. Format: DCGM field, type (gauge, counter or label), help.")
	fmt.Fprintln(bw, "# dcgm-exporter counters files are read as they are.")
	for _, f := range set {
		fmt.Fprintf(bw, "%s, %s, %s\n", f.DCGMName, f.DCGMType, f.Help)
	}
	return bw.Flush()
}
