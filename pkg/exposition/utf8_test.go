package exposition

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Label values and HELP text are UTF-8 on the page whatever the input: each
// run of bytes that is not UTF-8 becomes one U+FFFD, as
// strings.ToValidUTF8 writes it, and the escapes still apply around it.
func TestEscapeReplacesInvalidUTF8(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		// label is the escaped label value; helpText and helpOM the escaped
		// HELP text of the two formats.
		label, helpText, helpOM string
	}{
		{"ascii", `a"b\c` + "\n", `a\"b\\c\n`, `a"b\\c\n`, `a\"b\\c\n`},
		{"valid multi-byte", "ünï ✓ \uFFFD 😀", "ünï ✓ \uFFFD 😀", "ünï ✓ \uFFFD 😀", "ünï ✓ \uFFFD 😀"},
		{"one bad byte", "NVIDIA\xffH100", "NVIDIA\uFFFDH100", "NVIDIA\uFFFDH100", "NVIDIA\uFFFDH100"},
		{"latin-1 degree sign", "(in \xb0C)", "(in \uFFFDC)", "(in \uFFFDC)", "(in \uFFFDC)"},
		{"run of bad bytes", "a\xff\xfe\xfdb", "a\uFFFDb", "a\uFFFDb", "a\uFFFDb"},
		{"only bad bytes", "\x80\x80", "\uFFFD", "\uFFFD", "\uFFFD"},
		{"truncated at end", "x\xe2\x9c", "x\uFFFD", "x\uFFFD", "x\uFFFD"},
		{"surrogate half", "\xed\xa0\x80z", "\uFFFDz", "\uFFFDz", "\uFFFDz"},
		{"overlong slash", "\xc0\xaf", "\uFFFD", "\uFFFD", "\uFFFD"},
		{"bad bytes around escapes", "\xff\"\xfe\\\xfd\n\xfc", "\uFFFD\\\"\uFFFD\\\\\uFFFD\\n\uFFFD", "\uFFFD\"\uFFFD\\\\\uFFFD\\n\uFFFD", "\uFFFD\\\"\uFFFD\\\\\uFFFD\\n\uFFFD"},
		{"bad byte before valid rune", "\xff✓", "\uFFFD✓", "\uFFFD✓", "\uFFFD✓"},
		{"empty", "", "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for what, got := range map[string]struct{ got, want string }{
				"label":     {string(appendLabelValue([]byte("x="), tc.in)), "x=" + tc.label},
				"help text": {string(appendHelp(nil, tc.in, false)), tc.helpText},
				"help om":   {string(appendHelp(nil, tc.in, true)), tc.helpOM},
			} {
				if got.got != got.want {
					t.Errorf("%s of %q = %q, want %q", what, tc.in, got.got, got.want)
				}
				if !utf8.ValidString(got.got) {
					t.Errorf("%s of %q is not UTF-8: %q", what, tc.in, got.got)
				}
			}
		})
	}
}

// Every string an input can set reaches the page as UTF-8, in both namings
// and both formats, and the pages still parse.
func TestInvalidUTF8InputsRenderAsUTF8(t *testing.T) {
	t.Parallel()
	const bad, good = "NVIDIA\xffH100", "NVIDIA\uFFFDH100"
	cat := fields.MustNew()
	serial, _ := cat.LookupLabel("DCGM_FI_DEV_SERIAL")
	temp := mustField(t, "DCGM_FI_DEV_GPU_TEMP")
	temp.Help = "Temperature " + bad
	temp.DCGMHelp = "GPU temperature (in \xb0C)."
	set := []fields.Field{temp, serial}
	s := testSample(t, 1, set)
	s.Inventory.DriverVersion = bad
	e := &s.Inventory.Entities[0]
	e.Model, e.UUID, e.Device, e.PCIBusID = bad, bad, bad, bad
	mig := *e
	mig.Kind, mig.GPUInstance, mig.MIGProfile, mig.MIGUUID = source.GPUInstance, 1, bad, bad
	s.Inventory.Entities = append(s.Inventory.Entities, mig)
	s.Values = append(s.Values, source.IntValue(40), source.Value{})
	s.Set(0, 1, source.StringValue(bad))
	h := &Holder{Namespace: bad, Pod: bad, Container: bad, PodUID: bad, Labels: []Label{{Name: "label_app", Value: bad}}}
	in := Input{
		Sample:   s,
		Holdings: []Holding{{Entity: 0, Holder: h}, {Entity: 1, Holder: h, Shared: true}},
		XIDs:     []XIDCount{{Entity: 0, XID: 79, Count: 1, LastSeen: testTime}},
		Lost:     []source.LostGPU{{GPU: 3, UUID: bad, Since: testTime}},
		Health:   []source.HealthIncident{{GPU: 0, UUID: bad, Subsystem: bad, Status: source.HealthWarn}},
		Windows:  []WindowFamily{{Name: "DCGM_EXP_XID_ERRORS_COUNT", Help: bad, Type: fields.Gauge, Label: WindowXID, Counts: []WindowCount{{Entity: 0, Event: bad, Count: 1}}}},
	}
	for _, r := range []*Renderer{NewRenderer(Options{}), dcgmRenderer(DCGMOptions{Hostname: bad})} {
		p := r.Render(in)
		for format, b := range map[string][]byte{"text": p.Text, "openmetrics": p.OpenMetrics} {
			if !utf8.Valid(b) {
				t.Errorf("%s naming, %s: page is not UTF-8:\n%q", r.opts.Naming, format, b)
			}
			if strings.Contains(string(b), "\xff") || !strings.Contains(string(b), good) {
				t.Errorf("%s naming, %s: want %q where %q was given:\n%s", r.opts.Naming, format, good, bad, b)
			}
		}
		parseText(t, p.Text)
		parseOpenMetrics(t, p.OpenMetrics)
	}
}

// BenchmarkAppendLabelValue measures escaping one label value: the common
// ASCII case, escapes, valid multi-byte text and invalid bytes.
func BenchmarkAppendLabelValue(b *testing.B) {
	for name, v := range map[string]string{
		"ascii":     "NVIDIA H100 80GB HBM3",
		"uuid":      "GPU-5f1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f",
		"escapes":   `a "quoted" \path` + "\nline",
		"multibyte": "ünïcødé ✓ GPU-名前",
		"invalid":   "NVIDIA\xffH100 80GB\xb0HBM3",
	} {
		b.Run(name, func(b *testing.B) {
			buf := make([]byte, 0, 128)
			b.SetBytes(int64(len(v)))
			for b.Loop() {
				buf = appendLabelValue(buf[:0], v)
			}
		})
	}
}
