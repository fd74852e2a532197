package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

var update = flag.Bool("update", false, "rewrite generated files")

func TestParseCounters(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	in := "\ufeff# comment\n\nDCGM_FI_DEV_SM_CLOCK,  gauge, SM clock frequency (in MHz).\n" +
		"DCGM_FI_DEV_GPU_UTIL_RATIO, gauge, GPU utilization, in percent.\n" +
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, Energy\n" +
		"DCGM_FI_DRIVER_VERSION_X_NOT_A_FIELD_IS_COMMENTED, gauge, x\n"
	if _, err := ParseCounters("in.csv", strings.NewReader(in), cat); err == nil || !strings.Contains(err.Error(), "in.csv:6") {
		t.Fatalf("want error at in.csv:6, got %v", err)
	}
	in = strings.Replace(in, "DCGM_FI_DRIVER_VERSION_X", "# DCGM_FI_DRIVER_VERSION_X", 1) + "DCGM_FI_DEV_GPU_TEMP, label, as label\n"
	c, err := ParseCounters("in.csv", strings.NewReader(in), cat)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint16
	for _, f := range c.Fields {
		ids = append(ids, f.ID)
	}
	if len(ids) != 3 || ids[0] != 100 || ids[1] != 203 || ids[2] != 156 {
		t.Errorf("fields = %v, want [100 203 156] in file order", ids)
	}
	if len(c.Labels) != 1 || c.Labels[0].ID != 150 {
		t.Errorf("labels = %v, want the temperature field", c.Labels)
	}
}

func TestParseCountersErrors(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	cases := []struct{ name, in, want string }{
		{"unknown field", "DCGM_FI_NOPE, gauge, x\n", `c.csv:1: unknown field "DCGM_FI_NOPE"`},
		{"bad type", "\nDCGM_FI_DEV_GPU_TEMP, histogramm, x\n", `c.csv:2: field "DCGM_FI_DEV_GPU_TEMP": unknown type "histogramm"`},
		{"missing type", "DCGM_FI_DEV_GPU_TEMP\n", `c.csv:1: want "FIELD, TYPE, HELP"`},
		{"duplicate by alias", "DCGM_FI_DEV_GPU_TEMP, gauge, a\nDCGM_FI_DEV_GPU_TEMP_CELSIUS, gauge, b\n", "c.csv:2: field \"DCGM_FI_DEV_GPU_TEMP_CELSIUS\" already listed on line 1"},
		{"empty", "# nothing\n", "c.csv: no fields listed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseCounters("c.csv", strings.NewReader(tc.in), cat)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadCountersMissingFile(t *testing.T) {
	t.Parallel()
	_, err := LoadCounters(filepath.Join(t.TempDir(), "nope.csv"), fields.MustNew())
	if err == nil || !strings.Contains(err.Error(), "nope.csv") {
		t.Errorf("error = %v, want it to name the file", err)
	}
}

func TestFormatRoundTrips(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	var b bytes.Buffer
	if err := Format(&b, cat.All()); err != nil {
		t.Fatal(err)
	}
	c, err := ParseCounters("formatted", &b, cat)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Fields) != len(cat.All()) {
		t.Errorf("round trip kept %d of %d fields", len(c.Fields), len(cat.All()))
	}
}

// The shipped default counters file lists exactly the catalog's default set
// (go test ./pkg/config -update regenerates it).
func TestShippedDefaultCountersMatchCatalog(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	var want bytes.Buffer
	if err := Format(&want, cat.Defaults()); err != nil {
		t.Fatal(err)
	}
	const path = "../../etc/default-counters.csv"
	if *update {
		if err := os.WriteFile(path, want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Error("etc/default-counters.csv is stale: run go test ./pkg/config -update")
	}
}
