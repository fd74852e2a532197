package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pageFor writes the /metrics page a correct exporter shows for a capture:
// every GPU with the quantities nvidia-smi reports, a row per GPU instance
// and a gpu_mig_device_info per <mig_device>. Its gpu label is the GPU's
// place in the list (the NVML index), its device label nvidia<minor>, or
// nvidia<index> where minor_number is N/A (as pkg/source/nvml falls back).
func pageFor(s *SMI) string {
	return pageWith(s, func(i int, g *SMIGPU) (int, int) {
		if m, ok := minor(g); ok {
			return i, m
		}
		return i, i
	})
}

// minor is a GPU's minor number, false where nvidia-smi has none (N/A).
func minor(g *SMIGPU) (int, bool) {
	m, err := strconv.Atoi(strings.TrimSpace(g.MinorNumber))
	return m, err == nil
}

// pageWith writes pageFor's page with the gpu and device numbers that ids
// gives each GPU.
func pageWith(s *SMI, ids func(i int, g *SMIGPU) (gpu, dev int)) string {
	lines := map[string][]string{}
	add := func(fam, format string, args ...any) {
		lines[fam] = append(lines[fam], fam+fmt.Sprintf(format, args...))
	}
	num := func(text, unit string, scale float64) (string, bool) {
		v, ok := quantity(text, unit)
		return strconv.FormatFloat(v*scale, 'g', -1, 64), ok
	}
	for i := range s.GPUs {
		g := &s.GPUs[i]
		idx, dev := ids(i, g)
		l := fmt.Sprintf(`gpu="%d",uuid="%s",device="nvidia%d",model="%s"`, idx, g.UUID, dev, g.ProductName)
		add(famInfo, "{%s,driver_version=%q} 1", l, s.DriverVersion)
		for _, q := range []struct {
			fam, text, unit string
			scale           float64
		}{
			{famMemTotal, g.FBMemory.Total, "MiB", 1 << 20}, {famMemUsed, g.FBMemory.Used, "MiB", 1 << 20},
			{famTemp, g.Temperature.GPU, "C", 1}, {famSMClock, g.Clocks.SM, "MHz", 1e6}, {famMemClock, g.Clocks.Mem, "MHz", 1e6},
			{famUtilization, g.Utilization.GPU, "%", 0.01},
		} {
			if v, ok := num(q.text, q.unit, q.scale); ok {
				add(q.fam, "{%s} %s", l, v)
			}
		}
		if w, ok := g.watts(); ok {
			add(famPower, "{%s} %g", l, w)
		}
		seen := map[string]bool{}
		for _, d := range g.MIGDevices.Devices {
			mig := fmt.Sprintf(`%s,gpu_instance="%s",mig_profile="x"`, l, d.GPUInstance)
			if !seen[d.GPUInstance] {
				seen[d.GPUInstance] = true
				add(famMemTotal, "{%s} 1", mig)
			}
			add(famMIGDevice, "{%s,compute_instance=%q} 1", mig, d.ComputeInstance)
		}
	}
	var b strings.Builder
	for _, fam := range []string{famInfo, famMemTotal, famMemUsed, famTemp, famPower, famSMClock, famMemClock, famUtilization, famMIGDevice} {
		if len(lines[fam]) > 0 {
			fmt.Fprintf(&b, "# TYPE %s gauge\n%s\n", fam, strings.Join(lines[fam], "\n"))
		}
	}
	return b.String()
}

// TestCaptures runs the comparison over every real capture under
// testdata/captures (each file cites its source): the capture parses, a
// page that agrees with it matches (or, for a capture listing fewer GPUs
// than attached_gpus, fails naming that alone), and a page that lost one
// MIG device or one GPU, or labels GPUs whose minor numbers are out of
// index order by their index, fails with a MISMATCH line that names what
// differed. Adding a capture is adding a file.
func TestCaptures(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "captures", "*.xml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(data, []byte("Source:")) {
				t.Error("capture does not cite its source")
			}
			smi, err := parseSMI(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(smi.GPUs) == 0 || smi.DriverVersion == "" || smi.AttachedGPUs < len(smi.GPUs) {
				t.Fatalf("parsed %d GPUs (attached_gpus %d), driver %q", len(smi.GPUs), smi.AttachedGPUs, smi.DriverVersion)
			}
			check := func(page string, wantOK bool, want ...string) {
				t.Helper()
				exp, err := parseMetrics(strings.NewReader(page))
				if err != nil {
					t.Fatal(err)
				}
				rep := compare(smi, exp)
				var out bytes.Buffer
				rep.WriteText(&out)
				if rep.OK != wantOK {
					t.Errorf("OK = %v, want %v\n%s", rep.OK, wantOK, out.String())
				}
				for _, w := range want {
					if !strings.Contains(out.String(), "MISMATCH "+w) {
						t.Errorf("no MISMATCH %q in\n%s", w, out.String())
					}
				}
			}
			page := pageFor(smi)
			if partial := smi.AttachedGPUs != len(smi.GPUs); partial {
				// A capture of some of the node's GPUs (-i): every GPU
				// listed matches, and the comparison fails naming the
				// GPUs it could not see.
				check(page, false, fmt.Sprintf("nvidia-smi attached_gpus %d, but it lists %d <gpu> elements", smi.AttachedGPUs, len(smi.GPUs)))
				exp, _ := parseMetrics(strings.NewReader(page))
				if rep := compare(smi, exp); len(rep.reasons()) != 1 {
					t.Errorf("partial capture: reasons %q, want the attached_gpus one only", rep.reasons())
				}
			} else {
				check(page, true)
			}
			g := smi.GPUs[0]
			const other = "GPU-00000000-0000-0000-0000-000000000000"
			check(strings.ReplaceAll(page, g.UUID, other), false, g.UUID+": listed by nvidia-smi", other+": exported, unknown")
			// A node whose minor numbers are not in index order (issue
			// 30): a page that writes device from the index, or orders
			// GPUs by minor number, names the wrong GPU. (In a partial
			// capture the place in the list is not the index.)
			var byIndex, byMinor []string
			for i := range smi.GPUs {
				if m, ok := minor(&smi.GPUs[i]); ok && m != i {
					byIndex = append(byIndex, smi.GPUs[i].UUID+" device")
					byMinor = append(byMinor, smi.GPUs[i].UUID+" gpu_index")
				}
			}
			if len(byIndex) > 0 && smi.AttachedGPUs == len(smi.GPUs) {
				check(pageWith(smi, func(i int, _ *SMIGPU) (int, int) { return i, i }), false, byIndex...)
				check(pageWith(smi, func(i int, g *SMIGPU) (int, int) {
					if m, ok := minor(g); ok {
						return m, m
					}
					return i, i
				}), false, byMinor...)
			}
			if n := len(g.MIGDevices.Devices); n > 0 {
				last := g.MIGDevices.Devices[n-1]
				check(dropLines(page, famMIGDevice+`\{.*gpu_instance="`+last.GPUInstance+`"`), false, g.UUID+" mig_devices")
			}
		})
	}
}
