package scrapeparse

import (
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// inputs are the strings the exporter takes from outside, in the order the
// fuzz target receives them: from DCGM or NVML (entity strings, driver
// version, string field values), the counters file (help text), the kubelet
// (namespace, pod, container), the Kubernetes API (pod UID, pod label
// value) and the host (hostname).
type inputs struct {
	model, uuid, device, pciBusID, migProfile, migUUID, driver string
	namespace, pod, container, podUID, labelValue              string
	help, strValue, hostname                                   string
}

// seeds are inputs every run checks: plain values, the escapes, and bytes
// that are not UTF-8 in each position (a Latin-1 degree sign in help text,
// as in a counters file saved as Latin-1, among them).
var seeds = []inputs{
	{"NVIDIA H100 80GB HBM3", "GPU-5f1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f", "nvidia0", "00000000:3B:00.0", "1g.10gb",
		"MIG-aaaaaaaa-1111-2222-3333-444444444444", "550.54.15", "ml", "trainer-0", "main", "0b6a7c1e-uid", "team-a",
		"GPU temperature (in C).", "1650123456789", "gpu-node-1"},
	{"NVIDIA\xffH100", "GPU-\xfe", "nvidia\x80", "00:3B\xc0\xaf", "3g\xed\xa0\x8020gb", "MIG-\xe2\x9c", "550\xff",
		"ns\xff", "pod\xb0", "c\xfe\xfd", "uid\xff", "v\xff", "GPU temperature (in \xb0C).", "serial\xff", "host\xff"},
	{`q"uo\te`, "new\nline", `\n`, `trailing\`, "\"", "\\\\", "\n",
		"ünï ✓", "😀", "\uFFFD", "\x00", "\t\r", "help with \\ and \n and \"quotes\"", "a\"b", "h\\"},
	{"", "", "", "", "", "", "", "", "", "", "", "", "", "", ""},
}

// FuzzPagesParse feeds arbitrary bytes into every string input and checks
// both namings' pages with Prometheus' own scrape parsers, for both formats
// the exporter serves. `make test` runs it on the seeds; `make fuzz`
// explores.
func FuzzPagesParse(f *testing.F) {
	for _, s := range seeds {
		f.Add(s.model, s.uuid, s.device, s.pciBusID, s.migProfile, s.migUUID, s.driver,
			s.namespace, s.pod, s.container, s.podUID, s.labelValue, s.help, s.strValue, s.hostname)
	}
	f.Fuzz(func(t *testing.T, model_, uuid, device, pciBusID, migProfile, migUUID, driver,
		namespace, pod, container, podUID, labelValue, help, strValue, hostname string) {
		checkInputs(t, inputs{model_, uuid, device, pciBusID, migProfile, migUUID, driver,
			namespace, pod, container, podUID, labelValue, help, strValue, hostname})
	})
}

// TestRandomInputsParse is the short seeded form of FuzzPagesParse that runs
// on every `go test`: pseudo-random bytes, half of them past ASCII, in every
// input at once.
func TestRandomInputsParse(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 1))
	const ascii = " \"\\\nAz09-_.:"
	str := func() string {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
			if rng.IntN(2) == 0 {
				b[i] = ascii[rng.IntN(len(ascii))]
			}
		}
		return string(b)
	}
	for range 300 {
		checkInputs(t, inputs{str(), str(), str(), str(), str(), str(), str(), str(), str(), str(), str(), str(), str(), str(), str()})
		if t.Failed() {
			return
		}
	}
}

// checkInputs renders a page from in in both namings and checks it.
func checkInputs(t *testing.T, in inputs) {
	t.Helper()
	set, input := buildInput(t, in)
	pages := map[exposition.Naming]*exposition.Page{
		exposition.NamingPrometheus: exposition.NewRenderer(exposition.Options{}).Render(input),
		exposition.NamingDCGM: exposition.NewRenderer(exposition.Options{
			Naming: exposition.NamingDCGM, DCGM: exposition.DCGMOptions{Hostname: in.hostname},
		}).Render(input),
	}
	for naming, page := range pages {
		for _, format := range []struct {
			contentType expfmt.Format
			body        []byte
		}{
			{expfmt.FmtText, page.Text},
			{expfmt.FmtOpenMetrics_1_0_0, append(append([]byte(nil), page.OpenMetrics...), "# EOF\n"...)},
		} {
			what := naming.String() + " naming, " + string(format.contentType)
			series, helps := scrape(t, what, string(format.contentType), format.body)
			if len(series) != page.Series {
				t.Errorf("%s: Prometheus reads %d series, the page has %d\n%s", what, len(series), page.Series, format.body)
			}
			checkLabels(t, what, series, wantLabels(naming, in))
			checkHelp(t, what, helps, set, naming, format.contentType, in.help)
		}
	}
}

// buildInput is one GPU with a MIG instance, both held by one container,
// an XID, a lost GPU, a health incident and a window counter: every place
// an input string reaches the page.
func buildInput(t *testing.T, in inputs) ([]fields.Field, exposition.Input) {
	t.Helper()
	cat := fields.MustNew()
	var set []fields.Field
	for _, name := range []string{"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_FB_USED"} {
		f, ok := cat.Lookup(name)
		if !ok {
			t.Fatalf("no catalog field %s", name)
		}
		f.Help, f.DCGMHelp = in.help, in.help
		set = append(set, f)
	}
	for _, name := range []string{"DCGM_FI_DEV_SERIAL", "DCGM_FI_DRIVER_VERSION"} {
		f, ok := cat.LookupLabel(name)
		if !ok {
			t.Fatalf("no label field %s", name)
		}
		set = append(set, f)
	}
	gpu := source.Entity{Kind: source.GPU, GPU: 0, UUID: in.uuid, Device: in.device, Model: in.model,
		PCIBusID: in.pciBusID, GPUInstance: -1, ComputeInstance: -1}
	mig := gpu
	mig.Kind, mig.GPUInstance, mig.MIGProfile, mig.MIGUUID = source.GPUInstance, 7, in.migProfile, in.migUUID
	inv := &source.Inventory{DriverVersion: in.driver, Entities: []source.Entity{gpu, mig}}
	s := source.NewSample(time.Unix(1700000000, 0), inv, set)
	for e := range inv.Entities {
		s.Set(e, 0, source.IntValue(45))
		s.Set(e, 1, source.IntValue(123456789))
		s.Set(e, 2, source.IntValue(0x24))
		s.Set(e, 3, source.IntValue(1024))
	}
	s.Set(0, 4, source.StringValue(in.strValue)) // serial; the driver version column stays blank
	h := &exposition.Holder{Namespace: in.namespace, Pod: in.pod, Container: in.container, PodUID: in.podUID,
		Labels: []exposition.Label{{Name: "label_team", Value: in.labelValue}}}
	return set, exposition.Input{
		Sample:   s,
		Holdings: []exposition.Holding{{Entity: 0, Holder: h, Shared: true}, {Entity: 1, Holder: h}},
		XIDs:     []exposition.XIDCount{{Entity: 0, XID: 79, Count: 2, LastSeen: time.Unix(1700000000, 0)}},
		Lost:     []source.LostGPU{{GPU: 1, UUID: in.uuid, Since: time.Unix(1700000000, 0)}},
		Health:   []source.HealthIncident{{GPU: 0, UUID: in.uuid, Subsystem: in.strValue, Status: source.HealthFail}},
		Windows: []exposition.WindowFamily{{Name: "DCGM_EXP_XID_ERRORS_COUNT", Help: in.help, Type: fields.Gauge,
			Label: exposition.WindowXID, Window: 5 * time.Minute,
			Counts: []exposition.WindowCount{{Entity: 0, Event: in.strValue, Count: 1}}}},
	}
}

// scrape parses body as Prometheus' scrape loop does: the parser chosen by
// the Content-Type, every entry read, every series' labels checked against
// the strictest (legacy) name validation. It returns the series' label sets
// and the HELP text by family name.
func scrape(t *testing.T, what, contentType string, body []byte) ([]labels.Labels, map[string]string) {
	t.Helper()
	p, err := textparse.New(body, contentType, labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil || p == nil {
		t.Fatalf("%s: no parser: %v", what, err)
	}
	var series []labels.Labels
	helps := map[string]string{}
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			return series, helps
		}
		if err != nil {
			t.Fatalf("%s: Prometheus rejects the page: %v\n%q", what, err, body)
		}
		switch entry {
		case textparse.EntryHelp:
			name, text := p.Help()
			if !utf8.Valid(text) {
				t.Errorf("%s: HELP of %s is not UTF-8: %q", what, name, text)
			}
			helps[string(name)] = string(text)
		case textparse.EntrySeries:
			var l labels.Labels
			p.Labels(&l)
			if !l.IsValid(model.LegacyValidation) {
				t.Errorf("%s: invalid metric or label name in %s", what, l)
			}
			series = append(series, l)
		}
	}
}

// wantLabels maps each label that carries an input to the value Prometheus
// must read back: the input with each run of bytes that is not UTF-8 as one
// U+FFFD.
func wantLabels(naming exposition.Naming, in inputs) map[string]string {
	want := map[string]string{
		"namespace": in.namespace, "pod": in.pod, "container": in.container, "pod_uid": in.podUID,
		"label_team": in.labelValue, "pci_bus_id": in.pciBusID,
	}
	if naming == exposition.NamingDCGM {
		want["UUID"], want["modelName"], want["GPU_I_PROFILE"] = in.uuid, in.model, in.migProfile
		want["DCGM_FI_DEV_SERIAL"], want["DCGM_FI_DRIVER_VERSION"], want["xid"] = in.strValue, in.driver, in.strValue
		if in.hostname != "" {
			want[exposition.HostnameLabel] = in.hostname
		}
	} else {
		want["uuid"], want["device"], want["model"], want["mig_profile"] = in.uuid, in.device, in.model, in.migProfile
		want["mig_uuid"], want["driver_version"], want["subsystem"] = in.migUUID, in.driver, in.strValue
	}
	for k, v := range want {
		want[k] = strings.ToValidUTF8(v, "\uFFFD")
	}
	return want
}

// checkLabels checks that every label carrying an input reads back as
// wanted, that each appears on the page at least once, and that no series
// appears twice.
func checkLabels(t *testing.T, what string, series []labels.Labels, want map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	sets := map[string]bool{}
	for _, l := range series {
		if key := l.String(); sets[key] {
			t.Errorf("%s: series %s appears twice", what, key)
		} else {
			sets[key] = true
		}
		l.Range(func(lb labels.Label) {
			w, ok := want[lb.Name]
			if !ok {
				return
			}
			seen[lb.Name] = true
			if lb.Value != w {
				t.Errorf("%s: %s label %s = %q, want %q", what, l.Get("__name__"), lb.Name, lb.Value, w)
			}
		})
	}
	for name, w := range want {
		// An empty value may leave its label out (an empty window event).
		if w != "" && !seen[name] {
			t.Errorf("%s: no series carries label %s", what, name)
		}
	}
}

// checkHelp checks that the catalog families' HELP reads back as the input,
// UTF-8.
func checkHelp(t *testing.T, what string, helps map[string]string, set []fields.Field, naming exposition.Naming, format expfmt.Format, help string) {
	t.Helper()
	want := strings.ToValidUTF8(help, "\uFFFD")
	if format == expfmt.FmtText && strings.Trim(want, " \t\x00") == "" {
		// Prometheus' text lexer reads HELP text made only of blanks and
		// NUL bytes as empty.
		want = ""
	}
	for _, f := range set {
		if f.Kind == fields.Label {
			continue
		}
		name, typ := f.Name, f.Type
		if naming == exposition.NamingDCGM {
			name, typ = f.DCGMName, f.DCGMType
		}
		if format == expfmt.FmtOpenMetrics_1_0_0 && typ == fields.Counter {
			name = strings.TrimSuffix(name, "_total")
		}
		got, ok := helps[name]
		if !ok {
			t.Errorf("%s: no HELP for %s", what, name)
			continue
		}
		if got != want {
			t.Errorf("%s: HELP of %s = %q, want %q", what, name, got, want)
		}
	}
}
