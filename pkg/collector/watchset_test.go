package collector

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// In dcgm naming the collector watches the label fields and, for the clock
// events window, the bitmask even when the counters do not list it; neither
// is exported as a series.
func TestDCGMNamingWatchSet(t *testing.T) {
	t.Parallel()
	src := newFakeSource(2)
	cat := fields.MustNew()
	driver, _ := cat.LookupLabel("DCGM_FI_DRIVER_VERSION")
	serial, _ := cat.LookupLabel("DCGM_FI_DEV_SERIAL")
	serial.Kind = fields.Number // the collector marks label fields itself
	c, err := New(Config{
		Interval: time.Hour, Fields: testFields(t), Labels: []fields.Field{driver, serial},
		XIDErrorsCount:   &exposition.WindowCounter{Name: fields.XIDErrorsCountName, Help: "x", Type: fields.Counter, Window: time.Minute},
		ClockEventsCount: &exposition.WindowCounter{Name: fields.ClockEventsCountName, Help: "c", Type: fields.Counter, Window: time.Minute},
		Naming:           exposition.NamingDCGM, DCGM: exposition.DCGMOptions{Hostname: "h"},
	}, src, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	src.update(func(f *fakeSource) { f.xids = []source.XIDEvent{{Entity: 1, XID: 79}} })
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	var ids []uint16
	for _, f := range src.set {
		ids = append(ids, f.ID)
		if (f.ID == 1 || f.ID == 53) != (f.Kind == fields.Label) {
			t.Errorf("field %d watched with kind %d", f.ID, f.Kind)
		}
	}
	if want := []uint16{203, 150, 1, 53, fields.ClockEventReasonsID}; !slicesEqual(ids, want) {
		t.Errorf("watched %v, want %v", ids, want)
	}
	text := string(c.Page().Text)
	for _, want := range []string{
		`DCGM_FI_DEV_GPU_UTIL{gpu="0",`, `DCGM_FI_DRIVER_VERSION="2"`, `DCGM_FI_DEV_SERIAL="3"`,
		`DCGM_EXP_XID_ERRORS_COUNT{gpu="1",`, `window_size_in_ms="60000",xid="79"} 1`,
		`DCGM_EXP_CLOCK_EVENTS_COUNT{gpu="0",`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{") || strings.Contains(text, "gpu_xid_errors_total") {
		t.Errorf("the window dependency or Prometheus naming's XID counter was exported:\n%s", text)
	}

	// SetCounters drops the dependency once the bitmask is listed itself.
	f, _ := cat.ByID(fields.ClockEventReasonsID)
	if err := c.SetCounters(exposition.Counters{Fields: []fields.Field{f}, ClockEventsCount: &exposition.WindowCounter{Name: "C", Window: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(src.set) != 1 || !bytes.Contains(c.Page().Text, []byte("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{")) {
		t.Errorf("watched %d fields; bitmask exported: %v", len(src.set), bytes.Contains(c.Page().Text, []byte("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{")))
	}
	for _, bad := range []exposition.Counters{{}, {Fields: testFields(t), XIDErrorsCount: &exposition.WindowCounter{Name: "X"}}} {
		if err := c.SetCounters(bad); err == nil {
			t.Errorf("SetCounters(%+v) accepted", bad)
		}
	}
}

func slicesEqual(a, b []uint16) bool {
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

func TestGPUFilter(t *testing.T) {
	t.Parallel()
	src := newFakeSource(3)
	src.inv.Entities = append(src.inv.Entities, source.Entity{Kind: source.GPUInstance, GPU: 2, UUID: src.inv.Entities[2].UUID, GPUInstance: 1, MIGProfile: "7g.80gb"})
	reg := prometheus.NewRegistry()
	c, err := New(Config{Interval: time.Hour, Fields: testFields(t), GPUs: []int{0, 2}}, src, nil, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	src.update(func(f *fakeSource) {
		f.xids = []source.XIDEvent{{Entity: 1, XID: 13}, {Entity: 2, XID: 79}}
	})
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	text := string(c.Page().Text)
	for _, want := range []string{
		`gpu_utilization_ratio{gpu="0",`, `gpu_utilization_ratio{gpu="2",`, `gpu_info{gpu="2",`,
		`gpu_mig_instance_info{gpu="2",`, `xid="79"} 1`,
		// the source's values follow their entity: GPU 2 is row 2 at the source
		`gpu_temperature_celsius{gpu="2",uuid="` + src.inv.Entities[2].UUID + `",device="nvidia2",model="NVIDIA H100 80GB HBM3"} 21`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %s:\n%s", want, text)
		}
	}
	if strings.Contains(text, `gpu="1"`) || strings.Contains(text, `xid="13"`) {
		t.Errorf("GPU 1 exported although not selected:\n%s", text)
	}
	if _, err := New(Config{Interval: time.Hour, Fields: testFields(t), GPUs: []int{-1}}, src, nil, slog.New(slog.DiscardHandler), prometheus.NewRegistry()); err == nil {
		t.Error("negative GPU index accepted")
	}
}
