package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	uuid0 = "GPU-8248751a-ab35-8b7f-16f9-10fa415b4590"
	uuid1 = "GPU-9935bf4a-1f3a-9b01-eec8-7225075fae2d"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// dropLines removes the lines that match re.
func dropLines(s, re string) string {
	return regexp.MustCompile(`(?m)^.*`+re+`.*\n`).ReplaceAllString(s, "")
}

func TestCompare(t *testing.T) {
	t.Parallel()
	smi, page := fixture(t, "nvidia-smi-q-x.xml"), fixture(t, "metrics.txt")
	cases := []struct {
		name       string
		smi, page  func(string) string
		wantOK     bool
		mismatches []string // quantities or UUIDs named in MISMATCH lines
	}{
		{name: "fixtures match within tolerances", wantOK: true},
		{
			name: "temperature outside 3 °C",
			page: func(s string) string {
				return strings.Replace(s, `NVIDIA H100 80GB HBM3"} 66`, `NVIDIA H100 80GB HBM3"} 70`, 1)
			},
			mismatches: []string{uuid0 + " temperature_celsius"},
		},
		{
			name:       "memory total 2% off",
			page:       func(s string) string { return strings.Replace(s, "8.5520809984e+10", "8.38e+10", 1) },
			mismatches: []string{uuid0 + " memory_total_bytes"},
		},
		{
			name:       "model differs",
			smi:        func(s string) string { return strings.Replace(s, "NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", 1) },
			mismatches: []string{uuid0 + " model"},
		},
		{
			name:       "GPU missing from the exporter",
			page:       func(s string) string { return dropLines(s, uuid1) },
			mismatches: []string{uuid1 + ": listed by nvidia-smi"},
		},
		{
			name:       "UUID unknown to nvidia-smi",
			smi:        func(s string) string { return strings.Replace(s, uuid1, "GPU-00000000-0000-0000-0000-000000000000", 1) },
			mismatches: []string{uuid1 + ": exported, unknown", "GPU-00000000-0000-0000-0000-000000000000: listed by nvidia-smi"},
		},
		{
			name:       "MIG instance missing",
			page:       func(s string) string { return dropLines(s, `gpu_instance="2"`) },
			mismatches: []string{uuid1 + " mig_instances", uuid1 + " mig_devices"},
		},
		{
			// Issue 30: nvidia-smi lists one <mig_device> per compute
			// instance; GPU instance 2 split in two is two of them and one
			// GPU instance.
			name: "GPU instance split into two compute instances",
			smi: func(s string) string {
				return strings.Replace(s, "</mig_device>\n\t\t</mig_devices>", "</mig_device><mig_device><index>2</index><gpu_instance_id>2</gpu_instance_id><compute_instance_id>1</compute_instance_id></mig_device></mig_devices>", 1)
			},
			mismatches: []string{uuid1 + " mig_devices: nvidia-smi 3, exporter 2"},
		},
		{
			// Issue 30: "9 of 9 quantities match" then "MISMATCH", without
			// a reason, for a capture of one GPU of four (-i 0).
			name: "attached_gpus more than the GPUs listed",
			smi: func(s string) string {
				return regexp.MustCompile(`<attached_gpus>\d+</attached_gpus>`).ReplaceAllString(s, "<attached_gpus>4</attached_gpus>")
			},
			mismatches: []string{"nvidia-smi attached_gpus 4, but it lists 2 <gpu> elements"},
		},
		{
			name: "power exported where nvidia-smi has none",
			smi: func(s string) string {
				return strings.Replace(s, "<instant_power_draw>61.20 W</instant_power_draw>", "", 1)
			},
			wantOK:     true, // no number at all on the nvidia-smi side: power is not compared
			mismatches: nil,
		},
		{
			// Issue 30: GPU 0 in PCI order is /dev/nvidia1 on some nodes;
			// a device label written from the index names the wrong node.
			name: "minor numbers not in index order",
			smi: func(s string) string {
				s = strings.Replace(s, "<minor_number>0</minor_number>", "<minor_number>x</minor_number>", 1)
				s = strings.Replace(s, "<minor_number>1</minor_number>", "<minor_number>0</minor_number>", 1)
				return strings.Replace(s, "<minor_number>x</minor_number>", "<minor_number>1</minor_number>", 1)
			},
			mismatches: []string{uuid0 + " device: nvidia-smi nvidia1, exporter nvidia0", uuid1 + " device: nvidia-smi nvidia0, exporter nvidia1"},
		},
		{
			name:       "gpu label not the place in nvidia-smi's list",
			page:       func(s string) string { return strings.ReplaceAll(s, `gpu="1",uuid="`+uuid1, `gpu="3",uuid="`+uuid1) },
			mismatches: []string{uuid1 + " gpu_index: nvidia-smi 1, exporter 3"},
		},
		{
			name:       "utilization absent from the exporter",
			page:       func(s string) string { return dropLines(s, `^gpu_utilization_ratio\{`) },
			mismatches: []string{uuid0 + " utilization_ratio"},
		},
		{
			name: "clock not supported on both sides",
			smi: func(s string) string {
				return strings.Replace(s, "<mem_clock>2619 MHz</mem_clock>", "<mem_clock>N/A</mem_clock>", 1)
			},
			page:   func(s string) string { return dropLines(s, `gpu_memory_clock_hertz\{gpu="0"`) },
			wantOK: true,
		},
		{
			name: "clock N/A in nvidia-smi but exported",
			smi: func(s string) string {
				return strings.Replace(s, "<mem_clock>2619 MHz</mem_clock>", "<mem_clock>N/A</mem_clock>", 1)
			},
			mismatches: []string{uuid0 + " memory_clock_hertz"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, p := smi, page
			if tc.smi != nil {
				s = tc.smi(s)
			}
			if tc.page != nil {
				p = tc.page(p)
			}
			parsed, err := parseSMI([]byte(s))
			if err != nil {
				t.Fatal(err)
			}
			exp, err := parseMetrics(strings.NewReader(p))
			if err != nil {
				t.Fatal(err)
			}
			rep := compare(parsed, exp)
			var out bytes.Buffer
			rep.WriteText(&out)
			if rep.OK != tc.wantOK {
				t.Errorf("OK = %v, want %v\n%s", rep.OK, tc.wantOK, out.String())
			}
			if !rep.OK && !strings.Contains(out.String(), "MISMATCH (") {
				t.Errorf("MISMATCH without its reasons:\n%s", out.String())
			}
			got := 0
			for _, line := range strings.Split(out.String(), "\n") {
				if strings.HasPrefix(line, "MISMATCH ") {
					got++
				}
			}
			if got != len(tc.mismatches) {
				t.Errorf("%d MISMATCH lines, want %d\n%s", got, len(tc.mismatches), out.String())
			}
			for _, m := range tc.mismatches {
				if !strings.Contains(out.String(), "MISMATCH "+m) {
					t.Errorf("no MISMATCH %q in\n%s", m, out.String())
				}
			}
		})
	}
}

func TestQuantity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, unit string
		want     float64
		ok       bool
	}{
		{"81559 MiB", "MiB", 81559, true},
		{" 33 C ", "C", 33, true},
		{"70.45 W", "W", 70.45, true},
		{"93 %", "%", 93, true},
		{"N/A", "W", 0, false},
		{"[N/A]", "W", 0, false},
		{"[Not Supported]", "MHz", 0, false},
		{"1980 MHz", "W", 0, false},
		{"", "C", 0, false},
	} {
		got, ok := quantity(tc.in, tc.unit)
		if got != tc.want || ok != tc.ok {
			t.Errorf("quantity(%q, %q) = %v, %v; want %v, %v", tc.in, tc.unit, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRunWritesReportAndExitCode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	smi := filepath.Join("testdata", "nvidia-smi-q-x.xml")
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte(strings.Replace(fixture(t, "metrics.txt"), `HBM3"} 66`, `HBM3"} 90`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	notXML := filepath.Join(dir, "smi.txt")
	if err := os.WriteFile(notXML, []byte("GPU 0: H100"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, smi, metrics string
		want               int
		wantOK             bool
	}{
		{"match", smi, filepath.Join("testdata", "metrics.txt"), 0, true},
		{"mismatch", smi, bad, 1, false},
		{"not XML", notXML, bad, 2, false},
		{"no page", smi, filepath.Join(dir, "absent"), 2, false},
	} {
		report := filepath.Join(dir, tc.name+".json")
		var stdout, stderr bytes.Buffer
		if code := run(tc.smi, tc.metrics, report, "nvml", &stdout, &stderr); code != tc.want {
			t.Errorf("%s: exit %d, want %d\n%s%s", tc.name, code, tc.want, stdout.String(), stderr.String())
		}
		if tc.want == 2 {
			continue
		}
		data, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		var rep Report
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.OK != tc.wantOK || rep.Source != "nvml" || rep.SMIGPUs != 2 || rep.ExporterGPUs != 2 || rep.DriverVersion != "570.86.15" {
			t.Errorf("%s: report %+v", tc.name, rep)
		}
	}
}
