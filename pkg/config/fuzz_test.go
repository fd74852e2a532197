package config

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// FuzzParseCounters: any input parses or fails with an error naming the
// file; never panics; names and help texts are UTF-8; a parsed set formats
// and parses back to the same ids.
func FuzzParseCounters(f *testing.F) {
	f.Add("DCGM_FI_DEV_GPU_UTIL, gauge, util\n")
	f.Add("# c\n\nDCGM_FI_DEV_FB_USED,counter,x,y,z\nDCGM_FI_DEV_GPU_TEMP, label, t\n")
	f.Add("\ufeffgpu_power_watts, GAUGE, p\r\n")
	f.Add("DCGM_FI_DEV_GPU_UTIL\n")
	f.Add(",,,\n")
	f.Add("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in \xb0C)\ndcgm_gpu_temp, histogram, again\n")
	cat := fields.MustNew()
	f.Fuzz(func(t *testing.T, in string) {
		c, err := ParseCounters("fuzz.csv", strings.NewReader(in), cat)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, f := range append(c.Fields, c.Labels...) {
			if !utf8.ValidString(f.DCGMName) || !utf8.ValidString(f.DCGMHelp) {
				t.Fatalf("field %d: name %q or help %q is not UTF-8", f.ID, f.DCGMName, f.DCGMHelp)
			}
		}
		var b bytes.Buffer
		if err := Format(&b, c.Fields); err != nil {
			t.Fatal(err)
		}
		again, err := ParseCounters("again", &b, cat)
		if err != nil {
			t.Fatalf("formatted set does not parse: %v\n%s", err, b.String())
		}
		if len(again.Fields) != len(c.Fields) {
			t.Fatalf("round trip kept %d of %d fields", len(again.Fields), len(c.Fields))
		}
		for i := range c.Fields {
			if again.Fields[i].ID != c.Fields[i].ID {
				t.Fatalf("field %d: id %d became %d", i, c.Fields[i].ID, again.Fields[i].ID)
			}
		}
	})
}
