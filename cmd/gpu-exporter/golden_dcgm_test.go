package main

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpu-exporter/gpu-exporter/pkg/collector"
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// TestDemoGoldenDCGM renders the demo scenario in dcgm naming, for each
// --naming.dcgm-release, with dcgm naming's built-in set (which adds the
// DCGM_FI_DRIVER_VERSION label) and both window counters, at fixed
// simulated times, and compares it with
// testdata/demo-dcgm-<release>-*.golden. The expfmt parser then checks
// names, labels and that values are DCGM's raw values. promtool check
// metrics is not run: it rejects dcgm-exporter's upper-case names by design.
func TestDemoGoldenDCGM(t *testing.T) {
	t.Parallel()
	for _, r := range exposition.DCGMReleases {
		t.Run(r.Name, func(t *testing.T) {
			t.Parallel()
			rig := newDemoRig(t)
			ctx := t.Context()
			set, labelFields := fields.MustNew().DCGMDefaults()
			coll, err := collector.New(collector.Config{
				Interval: time.Hour, Fields: set, Labels: labelFields,
				XIDErrorsCount:   &exposition.WindowCounter{Name: fields.XIDErrorsCountName, Help: "XID errors in the window.", Type: fields.Counter, Window: 5 * time.Minute},
				ClockEventsCount: &exposition.WindowCounter{Name: fields.ClockEventsCountName, Help: "Clock event samples in the window.", Type: fields.Counter, Window: 5 * time.Minute},
				Naming:           exposition.NamingDCGM,
				DCGM:             releaseOptions(t, r.Name),
			}, rig.src, rig.table, rig.logger, prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			for _, at := range []time.Duration{0, 90 * time.Second} {
				rig.now.Store(rig.t0.Add(at))
				if err := coll.Collect(ctx); err != nil {
					t.Fatal(err)
				}
				page := coll.Page().Text
				compareGolden(t, filepath.Join("testdata", "demo-dcgm-"+r.Name+"-"+strconv.Itoa(int(at.Seconds()))+"s.golden"), page)
				sample, err := rig.src.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				fams := parseDCGMPage(t, page)
				checkRawValues(t, fams, sample)
				checkDCGMLabels(t, fams, r.HostnameLabel)
				checkWindows(t, fams, at)
			}
		})
	}
}

// releaseOptions is what --naming=dcgm --naming.dcgm-release=release
// sets, with gpu-node-1 for the host name.
func releaseOptions(t *testing.T, release string) exposition.DCGMOptions {
	t.Helper()
	o := exposition.NamingOptions{Name: "dcgm", Release: release, XIDCountWindow: time.Minute, ClockEventsCountWindow: time.Minute}
	o.DCGM.HostnameLabel = ""
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	return o.DCGMFor(func() string { return "gpu-node-1" })
}

func parseDCGMPage(t *testing.T, page []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("page does not parse: %v", err)
	}
	for name := range fams {
		if len(name) < 5 || name[:5] != "DCGM_" {
			t.Errorf("family %s: dcgm naming exports DCGM_* families only", name)
		}
	}
	return fams
}

// checkRawValues compares every field series with the unscaled source value
// of its GPU: DCGM's MHz, MiB, %, mJ, and the clock event bitmask as is.
func checkRawValues(t *testing.T, fams map[string]*dto.MetricFamily, s *source.Sample) {
	t.Helper()
	byUUID := map[string]int{}
	for i, e := range s.Inventory.Entities {
		if e.Kind == source.GPU {
			byUUID[e.UUID] = i
		}
	}
	checked := 0
	for col, f := range s.Fields {
		fam := fams[f.DCGMName]
		if fam != nil && fam.GetType().String() != map[fields.Type]string{fields.Gauge: "GAUGE", fields.Counter: "COUNTER"}[f.DCGMType] {
			t.Errorf("%s: TYPE %s, want %s as dcgm-exporter declares it", f.DCGMName, fam.GetType(), f.DCGMType)
		}
		for _, m := range fam.GetMetric() {
			l := labels(m)
			e, ok := byUUID[l["UUID"]]
			if !ok {
				t.Fatalf("%s: series for unknown UUID %q", f.DCGMName, l["UUID"])
			}
			raw, ok := s.At(e, col).Number()
			if !ok {
				t.Errorf("%s{UUID=%q}: exported although the source value is blank", f.DCGMName, l["UUID"])
				continue
			}
			if got := m.GetGauge().GetValue() + m.GetCounter().GetValue(); got != raw {
				t.Errorf("%s%v = %v, want the raw value %v", f.DCGMName, l, got, raw)
			}
			checked++
		}
	}
	if checked < 8*25 {
		t.Errorf("checked only %d series", checked)
	}
	if fams["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"] == nil || fams["DCGM_FI_DEV_SM_CLOCK"] == nil || fams["DCGM_FI_DEV_FB_USED"] == nil {
		t.Error("bitmask, clock or memory family missing")
	}
}

// checkDCGMLabels checks dcgm-exporter's labels on every field series,
// with host the hostname label's spelling.
func checkDCGMLabels(t *testing.T, fams map[string]*dto.MetricFamily, host string) {
	t.Helper()
	for name, fam := range fams {
		for _, m := range fam.GetMetric() {
			l := labels(m)
			for _, k := range []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", host, "DCGM_FI_DRIVER_VERSION"} {
				if l[k] == "" {
					t.Fatalf("%s%v lacks %s", name, l, k)
				}
			}
			if l["device"] != "nvidia"+l["gpu"] || l[host] != "gpu-node-1" || l["DCGM_FI_DRIVER_VERSION"] != "550.54.15" {
				t.Errorf("%s%v: wrong device, %s or driver version", name, l, host)
			}
			other := map[string]string{exposition.HostnameLabel: exposition.HostnameLabelLower, exposition.HostnameLabelLower: exposition.HostnameLabel}[host]
			for _, k := range []string{"uuid", "model", other, "pod_name"} {
				if _, has := l[k]; has {
					t.Errorf("%s%v has label %s", name, l, k)
				}
			}
			held := l["pod"] != ""
			if held != (l["namespace"] != "") || held != (l["container"] != "") {
				t.Errorf("%s%v: partial attribution", name, l)
			}
			if l["gpu"] == "6" && held {
				t.Errorf("%s%v: the free GPU carries pod labels", name, l)
			}
			if l["gpu"] == "0" && (l["namespace"] != "ml" || l["pod"] != "trainer-0") {
				t.Errorf("%s%v: GPU 0 not attributed to ml/trainer-0", name, l)
			}
			_, hasCode := l["err_code"]
			if hasCode != (name == "DCGM_FI_DEV_XID_ERRORS") {
				t.Errorf("%s%v: err_code belongs to DCGM_FI_DEV_XID_ERRORS only", name, l)
			}
			if hasCode && l["err_code"] != strconv.FormatFloat(m.GetGauge().GetValue(), 'f', -1, 64) {
				t.Errorf("%s%v: err_code differs from the value", name, l)
			}
		}
	}
}

// checkWindows checks the window counters: XID 79 of GPU 7 (at 1m) counts
// from then on, GPUs without XIDs have a zero series without an xid label,
// and GPU 4's thermal events are counted per collection.
func checkWindows(t *testing.T, fams map[string]*dto.MetricFamily, at time.Duration) {
	t.Helper()
	xids := fams[fields.XIDErrorsCountName].GetMetric()
	if len(xids) != 8 {
		t.Fatalf("%d XID count series, want one per GPU", len(xids))
	}
	for _, m := range xids {
		l := labels(m)
		want, wantXID := 0.0, ""
		if l["gpu"] == "7" && at >= time.Minute {
			want, wantXID = 1, "48"
		}
		if got := m.GetCounter().GetValue(); got != want || l["xid"] != wantXID || l["window_size_in_ms"] != "300000" {
			t.Errorf("XID count %v = %v, want %v with xid %q", l, got, want, wantXID)
		}
		if l["gpu"] == "7" && l["err_msg"] != "" {
			t.Error("err_msg leaked onto the window counter")
		}
	}
	collections := 1.0
	if at > 0 {
		collections = 2
	}
	var thermal float64
	for _, m := range fams[fields.ClockEventsCountName].GetMetric() {
		l := labels(m)
		if l["gpu"] == "4" && l["clock_event"] == "sw_thermal" {
			thermal = m.GetCounter().GetValue()
		}
	}
	if thermal != collections {
		t.Errorf("GPU 4 sw_thermal samples = %v, want %v (one per collection in the window)", thermal, collections)
	}
}

// TestMIGGoldenDCGM renders the MIG scenario in dcgm naming with dcgm
// naming's built-in set, for each --naming.dcgm-release, and compares it with
// testdata/mig-dcgm-<release>-0s.golden.
// dcgm-exporter (default -d f) watches only the GPU instances of a MIG GPU
// and DCGM answers GPU-level fields on an instance with its GPU's value, so
// no series of a MIG GPU lacks GPU_I_ID, and every family of a MIG GPU has
// one series per instance.
func TestMIGGoldenDCGM(t *testing.T) {
	t.Parallel()
	for _, r := range exposition.DCGMReleases {
		t.Run(r.Name, func(t *testing.T) {
			t.Parallel()
			rig := newSimRig(t, "mig")
			set, labelFields := fields.MustNew().DCGMDefaults()
			coll, err := collector.New(collector.Config{
				Interval: time.Hour, Fields: set, Labels: labelFields,
				Naming: exposition.NamingDCGM,
				DCGM:   releaseOptions(t, r.Name),
			}, rig.src, rig.table, rig.logger, prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			if err := coll.Collect(t.Context()); err != nil {
				t.Fatal(err)
			}
			page := coll.Page().Text
			compareGolden(t, filepath.Join("testdata", "mig-dcgm-"+r.Name+"-0s.golden"), page)
			sample, err := rig.src.Read(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			migGPUs := map[string]int{} // UUID -> instances
			for _, e := range sample.Inventory.Entities {
				if e.Kind == source.GPUInstance {
					migGPUs[e.UUID]++
				}
			}
			if len(migGPUs) == 0 {
				t.Fatal("the mig scenario has no GPU instance")
			}
			for name, fam := range parseDCGMPage(t, page) {
				perGPU := map[string]int{}
				for _, m := range fam.GetMetric() {
					l := map[string]string{}
					for _, p := range m.GetLabel() {
						l[p.GetName()] = p.GetValue()
					}
					if _, mig := migGPUs[l["UUID"]]; !mig {
						continue
					}
					if l[r.HostnameLabel] != "gpu-node-1" {
						t.Errorf("%s%v: no %s label", name, l, r.HostnameLabel)
					}
					if l["GPU_I_ID"] == "" {
						t.Errorf("%s: series of MIG GPU %s without GPU_I_ID", name, l["UUID"])
					}
					perGPU[l["UUID"]+"/"+l["GPU_I_ID"]]++
				}
				if name == "DCGM_FI_DEV_GPU_TEMP" || name == "DCGM_FI_DEV_POWER_USAGE" {
					n := 0
					for _, c := range migGPUs {
						n += c
					}
					if len(perGPU) != n {
						t.Errorf("%s: %d MIG instance series, want one per instance (%d)", name, len(perGPU), n)
					}
				}
			}
		})
	}
}
