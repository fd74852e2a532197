package rightsize

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"
)

// Formats are the output formats of Write.
var Formats = []string{"table", "json", "csv"}

// columns are the table and CSV columns, in order.
var columns = []string{"namespace", "workload", "type", "model", "current", "peak_mem_gb", "p95_mem_gb", "p95_activity",
	"gpu_hours", "idle_gpu_hours", "recommendation", "gpu_hours_freed_per_week", "confidence", "pattern", "coverage"}

// Write prints rows in format (one of Formats) for window. A row whose
// figures are not all finite numbers (rows need not come from Report) is
// printed without them and without its recommendation, so that no format
// fails or prints NaN as a figure.
func Write(w io.Writer, rows []Row, format string, window Window) error {
	rows = slices.Clone(rows)
	for i := range rows {
		rows[i].checkFinite()
	}
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	case "csv":
		cw := csv.NewWriter(w)
		header := append([]string{"cluster"}, columns...)
		if err := cw.Write(header); err != nil {
			return err
		}
		for _, r := range rows {
			rec := append([]string{r.Cluster}, r.cells(number)...)
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	case "table":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "NAMESPACE\tWORKLOAD\tTYPE\tMODEL\tCURRENT\tPEAK MEM GB\tP95 MEM GB\tP95 ACTIVITY\tGPU-H (%s)\tIDLE GPU-H\tRECOMMEND\tGPU-H FREED/WEEK\tCONFIDENCE\n", window.Name)
		for _, r := range rows {
			c := r.cells(func(f float64, prec int) string { return number(f, max(prec, 1)) })
			for i := range c {
				c[i] = printable(c[i])
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s (%s, %s of window)\n",
				c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12], c[13], c[14])
		}
		return tw.Flush()
	}
	return fmt.Errorf("output format %q: want table, json or csv", format)
}

// number formats f with prec decimals, or in exponent form when that
// would print more than a dozen digits (a recording of 1e308 bytes is
// finite but would fill a terminal).
func number(f float64, prec int) string {
	if math.Abs(f) >= 1e12 {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', prec, 64)
}

// cells are the row's values in columns order; num formats numbers with
// the decimals it is given.
func (r Row) cells(num func(f float64, prec int) string) []string {
	rec := r.Recommendation
	if r.Note != "" {
		rec = "- (" + r.Note + ")"
	}
	model := r.Model
	if model == "" {
		model = "-"
	}
	current := r.Current
	if current == "" {
		current = "-"
	}
	if len(r.OtherSizes) > 0 {
		current += " (+" + strings.Join(r.OtherSizes, ", ") + ")"
	}
	return []string{r.Namespace, r.Workload, r.WorkloadType, model, current,
		num(r.PeakMemoryBytes/1e9, 1), num(r.P95MemoryBytes/1e9, 1), num(r.P95Activity, 2),
		num(r.AllocatedGPUHours, 1), num(r.IdleGPUHours, 1), rec, num(r.FreedGPUHoursPerWeek, 1),
		r.Confidence, r.Pattern, strconv.FormatFloat(100*r.Coverage, 'f', 0, 64) + "%"}
}

// printable escapes, in Go's notation, what a terminal would not show as
// text: C0 and C1 controls (a newline or tab would break the table's
// rows and columns, ESC and CSI start escape sequences), DEL, other
// unprintable runes such as bidi overrides, and bytes that are not
// UTF-8. Label values are whatever the cluster's objects are named.
func printable(s string) string {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f
	}
	if plain {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\n', '\u009b'
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}
