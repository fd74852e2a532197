package config

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// Every field name dcgm-exporter's shipped counters files have listed, in
// any release, loads as a counters-file row: it names a catalog row (metric
// or label), one of dcgm-exporter's own counters we implement, or a row the
// explicit not-exported list skips with its reason. None may fall through
// to the generic "not in the catalog" skip or fail the file.
func TestDCGMExporterFieldNamesLoad(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	names := readNames(t, "testdata/dcgm-exporter-field-names.txt")
	if len(names) < 100 {
		t.Fatalf("%d names in the fixture, want the whole list", len(names))
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// The second row keeps the file loadable when name is skipped.
			c, err := ParseCounters("names.csv", strings.NewReader(name+", gauge, help\nDCGM_FI_DEV_ROW_REMAP_PENDING, gauge, p\n"), cat)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case len(c.Fields) > 0 && c.Fields[0].DCGMName == name || len(c.Labels) == 1:
			case c.XIDErrorsCount != nil || c.ClockEventsCount != nil || c.GPUHealthStatus != nil || c.P2PStatus != nil:
			case len(c.Skipped) == 1 && c.Skipped[0].Name == name:
				if reason, ok := fields.NotExported(name); !ok || c.Skipped[0].Reason != reason {
					t.Errorf("skipped with %q, want a reason from the explicit not-exported list", c.Skipped[0].Reason)
				}
			default:
				t.Errorf("neither loaded nor skipped: %+v", c)
			}
		})
	}
}

// A file in the shape of dcgm-exporter's 1.x-compatibility-metrics.csv,
// which lists two fields twice, loads: each field once, the first row's
// spelling, type and help kept, and a warning that names both lines.
func TestDuplicateRowsKeepFirst(t *testing.T) {
	t.Parallel()
	c, err := LoadCounters("testdata/duplicate-fields.csv", fields.MustNew())
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint16
	for _, f := range c.Fields {
		ids = append(ids, f.ID)
	}
	if want := []uint16{100, 150, 1009, 1010, 202, 1001}; !equalIDs(ids, want) {
		t.Errorf("fields %v, want %v", ids, want)
	}
	tx := c.Fields[2]
	if tx.DCGMName != "dcgm_fi_prof_pcie_tx_bytes" || tx.DCGMHelp != "PCIe bytes sent (first row)" || tx.DCGMType != fields.Counter {
		t.Errorf("kept %s/%s/%q, want the first row", tx.DCGMName, tx.DCGMType, tx.DCGMHelp)
	}
	want := []Warning{
		{Where: "testdata/duplicate-fields.csv:16", Name: "dcgm_fi_prof_pcie_tx_bytes", Message: "testdata/duplicate-fields.csv:10"},
		{Where: "testdata/duplicate-fields.csv:17", Name: "DCGM_FI_PROF_PCIE_RX_BYTES", Message: "testdata/duplicate-fields.csv:11"},
	}
	checkWarnings(t, c.Warnings, want)
}

// Rows dcgm-exporter accepts that cannot be read as written load with a
// warning naming the line, instead of failing the file.
func TestRowsDCGMExporterAcceptsLoad(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	cases := []struct {
		name, in string
		check    func(*testing.T, *CountersFile)
		warnings []Warning
	}{
		{"exporter counter twice", "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_EXP_XID_ERRORS_COUNT, counter, a\nDCGM_EXP_XID_ERRORS_COUNT, gauge, b\n",
			func(t *testing.T, c *CountersFile) {
				if x := c.XIDErrorsCount; x == nil || x.Help != "a" || x.Type != fields.Counter {
					t.Errorf("XID count = %+v, want the first row", x)
				}
			}, []Warning{{Where: "c.csv:3", Name: "DCGM_EXP_XID_ERRORS_COUNT", Message: "c.csv:2"}}},
		{"label twice by alias", "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DRIVER_VERSION, label, a\nDCGM_FI_SYSTEM_DRIVER_VERSION, label, b\n",
			func(t *testing.T, c *CountersFile) {
				if len(c.Labels) != 1 || c.Labels[0].DCGMName != "DCGM_FI_DRIVER_VERSION" {
					t.Errorf("labels = %+v", c.Labels)
				}
			}, []Warning{{Where: "c.csv:3", Name: "DCGM_FI_SYSTEM_DRIVER_VERSION", Message: "c.csv:2"}}},
		{"field twice by DCGM 4.6 name", "DCGM_FI_DEV_GPU_TEMP, gauge, a\nDCGM_FI_DEV_GPU_TEMP_CELSIUS, counter, b\n",
			func(t *testing.T, c *CountersFile) {
				if len(c.Fields) != 1 || c.Fields[0].DCGMHelp != "a" || c.Fields[0].DCGMType != fields.Gauge {
					t.Errorf("fields = %+v", c.Fields)
				}
			}, []Warning{{Where: "c.csv:2", Name: "DCGM_FI_DEV_GPU_TEMP_CELSIUS", Message: "c.csv:1"}}},
		{"histogram and summary", "DCGM_FI_DEV_GPU_TEMP, histogram, t\nDCGM_FI_DEV_PCIE_REPLAY_COUNTER, summary, r\n",
			func(t *testing.T, c *CountersFile) {
				if len(c.Fields) != 2 || c.Fields[0].DCGMType != fields.Gauge || c.Fields[1].DCGMType != fields.Counter {
					t.Errorf("fields = %+v, want the catalog's types", c.Fields)
				}
			}, []Warning{{Where: "c.csv:1", Name: "DCGM_FI_DEV_GPU_TEMP", Message: "histogram"}, {Where: "c.csv:2", Name: "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", Message: "summary"}}},
		{"string field as gauge", "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_SERIAL, gauge, s\n",
			func(t *testing.T, c *CountersFile) {
				if len(c.Labels) != 1 || c.Labels[0].ID != 53 || c.Labels[0].Kind != fields.Label {
					t.Errorf("labels = %+v, want the serial as a label", c.Labels)
				}
			}, []Warning{{Where: "c.csv:2", Name: "DCGM_FI_DEV_SERIAL", Message: "label row"}}},
		{"exporter counter as label", "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_EXP_CLOCK_EVENTS_COUNT, label, a\n",
			func(t *testing.T, c *CountersFile) {
				if x := c.ClockEventsCount; x == nil || x.Type != fields.Gauge {
					t.Errorf("clock events = %+v, want a gauge", x)
				}
			}, []Warning{{Where: "c.csv:2", Name: "DCGM_EXP_CLOCK_EVENTS_COUNT", Message: "label"}}},
		{"DCGM field outside the catalog", "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_PCIE_LINK_GEN, gauge, g\ndcgm_fi_dev_nvlink_crc_flit_error_count_l0, counter, f\n",
			func(t *testing.T, c *CountersFile) {
				if len(c.Fields) != 1 || len(c.Skipped) != 2 || c.Skipped[0].Where != "c.csv:2" || !strings.Contains(c.Skipped[0].Reason, "DCGM field 237 ") ||
					!strings.Contains(c.Skipped[1].Reason, "DCGM field 400 ") {
					t.Errorf("fields %d, skipped %+v; want the two rows skipped with their ids", len(c.Fields), c.Skipped)
				}
			}, nil},
		{"quoted columns", "\"DCGM_FI_DEV_GPU_TEMP\",gauge,\"GPU temperature, in \"\"C\"\"\"\n",
			func(t *testing.T, c *CountersFile) {
				if len(c.Fields) != 1 || c.Fields[0].DCGMHelp != `GPU temperature, in "C"` {
					t.Errorf("fields = %+v", c.Fields)
				}
			}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseCounters("c.csv", strings.NewReader(tc.in), cat)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
			checkWarnings(t, c.Warnings, tc.warnings)
		})
	}
}

// A Latin-1 help column ("(in \xb0C)", as a file saved by an old editor
// holds) and any other byte that is not UTF-8 are replaced where the text
// enters, so no invalid byte can reach a HELP line or an error message.
func TestInvalidUTF8Replaced(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	c, err := ParseCounters("latin1.csv", strings.NewReader("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in \xb0C).\nDCGM_FI_DEV_SERIAL, label, serial \xff\xfe\n"), cat)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Fields[0].DCGMHelp; got != "GPU temperature (in \uFFFDC)." {
		t.Errorf("help = %q, want the byte replaced by U+FFFD", got)
	}
	if got := c.Labels[0].DCGMHelp; !utf8.ValidString(got) {
		t.Errorf("label help %q is not UTF-8", got)
	}
	_, err = ParseCounters("latin1.csv", strings.NewReader("DCGM_FI_DEV_GPU_\xb0TEMP, gauge, t\n"), cat)
	if err == nil || !utf8.ValidString(err.Error()) || !strings.Contains(err.Error(), "latin1.csv:1") {
		t.Errorf("error = %q, want a UTF-8 error naming the line", err)
	}
}

// checkWarnings compares warnings with want by location and name, and
// checks that each message contains want's Message.
func checkWarnings(t *testing.T, got, want []Warning) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("warnings = %+v, want %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Where != w.Where || g.Name != w.Name || !strings.Contains(g.Message, w.Message) {
			t.Errorf("warning %d = %+v, want %s %s with %q in the message", i, g, w.Where, w.Name, w.Message)
		}
	}
}

func equalIDs(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// readNames reads a list of names, one per line, # comments.
func readNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
