// Command compare checks a gpu-exporter /metrics page against the driver's
// own view, `nvidia-smi -q -x`, GPU by GPU: count, UUIDs, index, device
// node (minor number), model, memory total and used, temperature, power,
// clocks, utilization and MIG mode, live values within stated tolerances. It writes a JSON report and exits
// 1 on a mismatch. tests/hardware/run.sh runs it on a GPU machine.
//
// Usage: go run ./tests/hardware -smi nvidia-smi.xml -metrics metrics.txt -report report.json [-source nvml]
package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func main() {
	smiFile := flag.String("smi", "", "output of `nvidia-smi -q -x`")
	metricsFile := flag.String("metrics", "", "a /metrics page of gpu-exporter (text format, --naming=prometheus)")
	reportFile := flag.String("report", "", "where to write the JSON report (empty: stdout only)")
	src := flag.String("source", "", "the exporter's --source, recorded in the report")
	flag.Parse()
	os.Exit(run(*smiFile, *metricsFile, *reportFile, *src, os.Stdout, os.Stderr))
}

func run(smiFile, metricsFile, reportFile, src string, stdout, stderr io.Writer) int {
	smiData, err := os.ReadFile(smiFile)
	if err != nil {
		fmt.Fprintf(stderr, "compare: -smi: %v\n", err)
		return 2
	}
	page, err := os.Open(metricsFile)
	if err != nil {
		fmt.Fprintf(stderr, "compare: -metrics: %v\n", err)
		return 2
	}
	defer page.Close()
	smi, err := parseSMI(smiData)
	if err != nil {
		fmt.Fprintf(stderr, "compare: %s: %v\n", smiFile, err)
		return 2
	}
	exp, err := parseMetrics(page)
	if err != nil {
		fmt.Fprintf(stderr, "compare: %s: %v\n", metricsFile, err)
		return 2
	}
	rep := compare(smi, exp)
	rep.Source = src
	rep.WriteText(stdout)
	if reportFile != "" {
		data, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(reportFile, append(data, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "compare: -report: %v\n", err)
			return 2
		}
	}
	if !rep.OK {
		return 1
	}
	return 0
}

// SMI is the part of `nvidia-smi -q -x` compared here. Element names are
// those of NVIDIA's nvsmi_device_v12.dtd (driver 535 and later); power is
// read from gpu_power_readings (power_draw, or instant_power_draw and
// average_power_draw in later drivers) or, before driver 535, from
// power_readings.
type SMI struct {
	DriverVersion string   `xml:"driver_version"`
	AttachedGPUs  int      `xml:"attached_gpus"`
	GPUs          []SMIGPU `xml:"gpu"`
}

// SMIGPU is one <gpu> element.
type SMIGPU struct {
	BusID       string `xml:"id,attr"`
	ProductName string `xml:"product_name"`
	UUID        string `xml:"uuid"`
	MinorNumber string `xml:"minor_number"`
	MIGMode     struct {
		Current string `xml:"current_mig"`
	} `xml:"mig_mode"`
	// MIGDevices lists one <mig_device> per MIG device, that is per
	// compute instance: a GPU instance split into two compute instances is
	// two elements with the same gpu_instance_id.
	MIGDevices struct {
		Devices []struct {
			Index           string `xml:"index"`
			GPUInstance     string `xml:"gpu_instance_id"`
			ComputeInstance string `xml:"compute_instance_id"`
		} `xml:"mig_device"`
	} `xml:"mig_devices"`
	FBMemory struct {
		Total string `xml:"total"`
		Used  string `xml:"used"`
	} `xml:"fb_memory_usage"`
	Utilization struct {
		GPU string `xml:"gpu_util"`
	} `xml:"utilization"`
	Temperature struct {
		GPU string `xml:"gpu_temp"`
	} `xml:"temperature"`
	Power       powerReadings `xml:"gpu_power_readings"`
	LegacyPower powerReadings `xml:"power_readings"`
	Clocks      struct {
		Graphics string `xml:"graphics_clock"`
		SM       string `xml:"sm_clock"`
		Mem      string `xml:"mem_clock"`
	} `xml:"clocks"`
}

type powerReadings struct {
	Draw        string `xml:"power_draw"`
	InstantDraw string `xml:"instant_power_draw"`
	AverageDraw string `xml:"average_power_draw"`
}

// watts returns the first power reading that is a number.
func (g *SMIGPU) watts() (float64, bool) {
	for _, s := range []string{g.Power.AverageDraw, g.Power.Draw, g.Power.InstantDraw, g.LegacyPower.AverageDraw, g.LegacyPower.Draw, g.LegacyPower.InstantDraw} {
		if v, ok := quantity(s, "W"); ok {
			return v, true
		}
	}
	return 0, false
}

func parseSMI(data []byte) (*SMI, error) {
	var s SMI
	if err := xml.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("not nvidia-smi -q -x output: %w", err)
	}
	return &s, nil
}

// quantity reads "81559 MiB", "33 C", "70.45 W", "1980 MHz", "12 %": a
// number and the unit expected. "N/A", "[N/A]", "[Not Supported]" and
// other text are no value.
func quantity(s, unit string) (float64, bool) {
	num, u, ok := strings.Cut(strings.TrimSpace(s), " ")
	if !ok || u != unit {
		return 0, false
	}
	v, err := strconv.ParseFloat(num, 64)
	return v, err == nil
}

// gpuInstances counts the distinct GPU instances of the <mig_device>s.
func (g *SMIGPU) gpuInstances() int {
	seen := map[string]bool{}
	for _, d := range g.MIGDevices.Devices {
		seen[strings.TrimSpace(d.GPUInstance)] = true
	}
	return len(seen)
}

// ExporterGPU is one GPU as the /metrics page shows it.
type ExporterGPU struct {
	UUID, Model, DriverVersion string
	// Index is the gpu label (the NVML index), Device the device label
	// (nvidia<minor>, docs/metrics.md), both from gpu_info.
	Index, Device string
	Values        map[string]float64
	// MIGInstances counts the GPU instances (rows with a gpu_instance
	// label), MIGDevices the MIG devices (gpu_mig_device_info series, one
	// per compute instance).
	MIGInstances, MIGDevices int
}

// Families read from the page (docs/metrics.md, --naming=prometheus).
const (
	famInfo        = "gpu_info"
	famMemTotal    = "gpu_memory_total_bytes"
	famMemUsed     = "gpu_memory_used_bytes"
	famTemp        = "gpu_temperature_celsius"
	famPower       = "gpu_power_watts"
	famSMClock     = "gpu_sm_clock_hertz"
	famMemClock    = "gpu_memory_clock_hertz"
	famUtilization = "gpu_utilization_ratio"
	famMIGDevice   = "gpu_mig_device_info"
)

// parseMetrics reads the per-GPU families of a text-format page. A series
// with a gpu_instance label is a MIG instance; it is counted, not compared.
func parseMetrics(r io.Reader) (map[string]*ExporterGPU, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	info, ok := fams[famInfo]
	if !ok {
		return nil, errors.New("no " + famInfo + " family: is this a gpu-exporter page with --naming=prometheus?")
	}
	gpus := map[string]*ExporterGPU{}
	for _, m := range info.GetMetric() {
		l := labels(m)
		gpus[l["uuid"]] = &ExporterGPU{UUID: l["uuid"], Model: l["model"], DriverVersion: l["driver_version"], Index: l["gpu"], Device: l["device"], Values: map[string]float64{}}
	}
	for _, name := range []string{famMemTotal, famMemUsed, famTemp, famPower, famSMClock, famMemClock, famUtilization} {
		for _, m := range fams[name].GetMetric() {
			l := labels(m)
			g := gpus[l["uuid"]]
			if g == nil {
				continue
			}
			if _, mig := l["gpu_instance"]; mig {
				if name == famMemTotal {
					g.MIGInstances++
				}
				continue
			}
			g.Values[name] = m.GetGauge().GetValue()
		}
	}
	for _, m := range fams[famMIGDevice].GetMetric() {
		if g := gpus[labels(m)["uuid"]]; g != nil {
			g.MIGDevices++
		}
	}
	return gpus, nil
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// Report is the comparison's result.
type Report struct {
	Source        string `json:"source,omitempty"`
	DriverVersion string `json:"driver_version"`
	SMIGPUs       int    `json:"nvidia_smi_gpus"`
	ExporterGPUs  int    `json:"exporter_gpus"`
	// Missing are UUIDs nvidia-smi lists and the exporter does not; Extra
	// the other way round.
	Missing []string    `json:"missing,omitempty"`
	Extra   []string    `json:"extra,omitempty"`
	GPUs    []GPUReport `json:"gpus"`
	// Problems name every difference not tied to one GPU's quantity (an
	// nvidia-smi output listing fewer <gpu> than its attached_gpus).
	Problems []string `json:"problems,omitempty"`
	OK       bool     `json:"ok"`
}

// GPUReport compares one GPU.
type GPUReport struct {
	UUID   string  `json:"uuid"`
	Model  string  `json:"model"`
	Checks []Check `json:"checks"`
}

// Check is one quantity on both sides.
type Check struct {
	Quantity  string  `json:"quantity"`
	SMI       string  `json:"nvidia_smi"`
	Exporter  string  `json:"exporter"`
	Tolerance string  `json:"tolerance"`
	OK        bool    `json:"ok"`
	Diff      float64 `json:"diff,omitempty"`
}

// tolerance bounds the difference of a live value read at two moments:
// the larger of an absolute and a relative bound.
type tolerance struct {
	abs, rel float64
	text     string
}

// Tolerances, chosen for values read up to a collection interval apart.
// Memory total: exact to 1 MiB plus 1% (DCGM and NVML report framebuffer
// totals that can differ by the reserved area on some drivers).
var (
	tolMemTotal = tolerance{abs: 1 << 20, rel: 0.01, text: "1 MiB or 1%"}
	tolMemUsed  = tolerance{abs: 512 << 20, rel: 0.05, text: "512 MiB or 5%"}
	tolTemp     = tolerance{abs: 3, text: "3 °C"}
	tolPower    = tolerance{abs: 15, rel: 0.15, text: "15 W or 15%"}
	tolClock    = tolerance{abs: 100e6, rel: 0.10, text: "100 MHz or 10%"}
	tolUtil     = tolerance{abs: 0.25, text: "25 points"}
)

func (t tolerance) ok(a, b float64) bool {
	return math.Abs(a-b) <= max(t.abs, t.rel*math.Max(math.Abs(a), math.Abs(b)))
}

// compare matches GPUs by UUID and compares each quantity.
func compare(smi *SMI, exp map[string]*ExporterGPU) *Report {
	rep := &Report{DriverVersion: smi.DriverVersion, SMIGPUs: len(smi.GPUs), ExporterGPUs: len(exp), OK: true}
	seen := map[string]bool{}
	// A GPU's place in the list is its index only where the list is whole
	// (not `nvidia-smi -q -x -i 2`).
	complete := smi.AttachedGPUs == 0 || smi.AttachedGPUs == len(smi.GPUs)
	for i := range smi.GPUs {
		g := &smi.GPUs[i]
		seen[g.UUID] = true
		e, ok := exp[g.UUID]
		if !ok {
			rep.Missing = append(rep.Missing, g.UUID)
			rep.OK = false
			continue
		}
		gr := GPUReport{UUID: g.UUID, Model: g.ProductName}
		gr.add(stringCheck("model", g.ProductName, e.Model))
		if smi.DriverVersion != "" && e.DriverVersion != "" {
			gr.add(stringCheck("driver_version", smi.DriverVersion, e.DriverVersion))
		}
		// nvidia-smi lists GPUs in NVML index order (PCI bus id order),
		// and the device node is /dev/nvidia<minor>: the two differ on
		// some nodes (issue 30's A100 node; the L4 capture of
		// testdata/captures, whose GPU 0 is nvidia1), where a device
		// label written from the index names the wrong GPU.
		if e.Index != "" && complete {
			gr.add(stringCheck("gpu_index", strconv.Itoa(i), e.Index))
		}
		if minor, err := strconv.Atoi(strings.TrimSpace(g.MinorNumber)); err == nil && e.Device != "" {
			// minor_number is N/A on Windows: nothing to compare there.
			gr.add(stringCheck("device", "nvidia"+strconv.Itoa(minor), e.Device))
		}
		mib := func(s string) (float64, bool) {
			v, ok := quantity(s, "MiB")
			return v * (1 << 20), ok
		}
		mhz := func(s string) (float64, bool) {
			v, ok := quantity(s, "MHz")
			return v * 1e6, ok
		}
		unit := func(u string, scale float64) func(string) (float64, bool) {
			return func(s string) (float64, bool) {
				v, ok := quantity(s, u)
				return v * scale, ok
			}
		}
		migOn := strings.EqualFold(g.MIGMode.Current, "Enabled")
		gr.add(numCheck("memory_total_bytes", g.FBMemory.Total, mib, e, famMemTotal, tolMemTotal))
		gr.add(numCheck("memory_used_bytes", g.FBMemory.Used, mib, e, famMemUsed, tolMemUsed))
		gr.add(numCheck("temperature_celsius", g.Temperature.GPU, unit("C", 1), e, famTemp, tolTemp))
		if w, ok := g.watts(); ok {
			gr.add(numCheck("power_watts", strconv.FormatFloat(w, 'f', -1, 64)+" W", unit("W", 1), e, famPower, tolPower))
		}
		gr.add(numCheck("sm_clock_hertz", g.Clocks.SM, mhz, e, famSMClock, tolClock))
		gr.add(numCheck("memory_clock_hertz", g.Clocks.Mem, mhz, e, famMemClock, tolClock))
		if !migOn {
			// Under MIG, whole-GPU utilization is not reported (DESIGN.md).
			gr.add(numCheck("utilization_ratio", g.Utilization.GPU, unit("%", 0.01), e, famUtilization, tolUtil))
		}
		if migOn {
			// nvidia-smi lists one <mig_device> per compute instance; the
			// exporter one row per GPU instance and one
			// gpu_mig_device_info per compute instance (docs/mig.md).
			gis, devs := g.gpuInstances(), len(g.MIGDevices.Devices)
			gr.add(Check{Quantity: "mig_instances", SMI: strconv.Itoa(gis), Exporter: strconv.Itoa(e.MIGInstances), Tolerance: "exact", OK: gis == e.MIGInstances})
			gr.add(Check{Quantity: "mig_devices", SMI: strconv.Itoa(devs), Exporter: strconv.Itoa(e.MIGDevices), Tolerance: "exact", OK: devs == e.MIGDevices})
		}
		for _, c := range gr.Checks {
			rep.OK = rep.OK && c.OK
		}
		rep.GPUs = append(rep.GPUs, gr)
	}
	for uuid := range exp {
		if !seen[uuid] {
			rep.Extra = append(rep.Extra, uuid)
			rep.OK = false
		}
	}
	slices.Sort(rep.Extra)
	if smi.AttachedGPUs != 0 && smi.AttachedGPUs != len(smi.GPUs) {
		// As `nvidia-smi -q -x -i 0` writes on a node of several GPUs: the
		// comparison needs the output of every GPU.
		rep.Problems = append(rep.Problems, fmt.Sprintf("nvidia-smi attached_gpus %d, but it lists %d <gpu> elements: capture with nvidia-smi -q -x, without -i", smi.AttachedGPUs, len(smi.GPUs)))
		rep.OK = false
	}
	return rep
}

func (g *GPUReport) add(c Check) {
	if c.Quantity != "" {
		g.Checks = append(g.Checks, c)
	}
}

func stringCheck(q, smi, exp string) Check {
	return Check{Quantity: q, SMI: smi, Exporter: exp, Tolerance: "exact", OK: smi == exp}
}

// numCheck compares a quantity nvidia-smi reports as text with the
// exporter's value. Where nvidia-smi has no value (N/A, Not Supported) the
// exporter must have none either; where it has one, the exporter must
// report one within tol.
func numCheck(q, smiText string, read func(string) (float64, bool), e *ExporterGPU, fam string, tol tolerance) Check {
	c := Check{Quantity: q, SMI: strings.TrimSpace(smiText), Tolerance: tol.text}
	sv, sok := read(smiText)
	ev, eok := e.Values[fam]
	if eok {
		c.Exporter = strconv.FormatFloat(ev, 'g', -1, 64)
	} else {
		c.Exporter = "absent"
	}
	switch {
	case !sok && !eok:
		c.OK = true
	case !sok || !eok:
		c.OK = false
	default:
		c.Diff = ev - sv
		c.OK = tol.ok(sv, ev)
	}
	return c
}

// WriteText prints one line per GPU and one per failed check.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "nvidia-smi: %d GPUs, driver %s; exporter (%s): %d GPUs\n", r.SMIGPUs, r.DriverVersion, r.Source, r.ExporterGPUs)
	for _, u := range r.Missing {
		fmt.Fprintf(w, "MISMATCH %s: listed by nvidia-smi, absent from the exporter\n", u)
	}
	for _, u := range r.Extra {
		fmt.Fprintf(w, "MISMATCH %s: exported, unknown to nvidia-smi\n", u)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "MISMATCH %s\n", p)
	}
	for _, g := range r.GPUs {
		bad := 0
		for _, c := range g.Checks {
			if !c.OK {
				bad++
				fmt.Fprintf(w, "MISMATCH %s %s: nvidia-smi %s, exporter %s (tolerance %s)\n", g.UUID, c.Quantity, c.SMI, c.Exporter, c.Tolerance)
			}
		}
		fmt.Fprintf(w, "%s %s: %d of %d quantities match\n", g.UUID, g.Model, len(g.Checks)-bad, len(g.Checks))
	}
	if r.OK {
		fmt.Fprintln(w, "hardware check: match")
	} else {
		fmt.Fprintf(w, "hardware check: MISMATCH (%s)\n", strings.Join(r.reasons(), "; "))
	}
}

// reasons names every difference, so that no MISMATCH goes without one.
func (r *Report) reasons() []string {
	var out []string
	if n := len(r.Missing); n > 0 {
		out = append(out, fmt.Sprintf("%d GPUs absent from the exporter", n))
	}
	if n := len(r.Extra); n > 0 {
		out = append(out, fmt.Sprintf("%d GPUs unknown to nvidia-smi", n))
	}
	out = append(out, r.Problems...)
	for _, g := range r.GPUs {
		for _, c := range g.Checks {
			if !c.OK {
				out = append(out, g.UUID+" "+c.Quantity)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, "no reason recorded: a bug of the comparison")
	}
	return out
}
