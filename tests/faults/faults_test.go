// Package faults is the fault matrix: each case injects one fault into a
// running exporter (simulator source, simulated kubelet over a real unix
// socket, the real collector and HTTP server on a loopback listener) and
// checks what an operator would observe on /metrics.
package faults

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpu-exporter/gpu-exporter/pkg/collector"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/server"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim/kubelet"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// clock is the simulated time the test moves.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time                   { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) set(t time.Time)                  { c.ns.Store(t.UnixNano()) }
func (c *clock) at(t0 time.Time, d time.Duration) { c.set(t0.Add(d)) }

// hangable wraps a source so a test can make Read block.
type hangable struct {
	source.Source
	gate atomic.Pointer[chan struct{}]
}

func (h *hangable) Read(ctx context.Context) (*source.Sample, error) {
	if g := h.gate.Load(); g != nil {
		<-*g // a hung backend ignores ctx, as a stuck cgo call would
	}
	return h.Source.Read(ctx)
}

// rig is one running exporter.
type rig struct {
	t       *testing.T
	t0      time.Time
	clock   *clock
	src     *hangable
	kubelet *kubelet.Server
	client  *podresources.Client
	coll    *collector.Collector
	url     string
	scn     *sim.Scenario
	simSrc  *sim.Source
}

func newRig(t *testing.T, timeout, writeTimeout time.Duration) *rig {
	t.Helper()
	scn, err := sim.Load(filepath.Join("testdata", "faults.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), clock: &clock{}, scn: scn}
	r.clock.set(r.t0)
	r.simSrc = sim.New(scn, sim.WithClock(r.clock.now), sim.WithStart(r.t0))
	r.src = &hangable{Source: r.simSrc}
	logger := slog.New(slog.DiscardHandler)
	reg := prometheus.NewRegistry()

	r.kubelet, err = kubelet.Start(filepath.Join(t.TempDir(), "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.kubelet.Stop)
	r.setPods(kubelet.FromSim(r.simSrc.Pods()))
	cfg := podresources.DefaultConfig()
	cfg.Socket = r.kubelet.Path()
	cfg.RefreshInterval = 20 * time.Millisecond
	cfg.CallTimeout = 20 * time.Millisecond
	cfg.MinBackoff = 10 * time.Millisecond
	cfg.MaxBackoff = 40 * time.Millisecond
	r.client, err = podresources.New(cfg, logger, reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.client.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; _ = r.client.Close() })

	r.coll, err = collector.New(collector.Config{Interval: time.Hour, Timeout: timeout, Fields: fields.MustNew().Defaults()}, r.src, r.client, logger, reg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{
		ListenAddresses: []string{"127.0.0.1:0"}, TelemetryPath: "/metrics",
		ReadHeaderTimeout: 5 * time.Second, WriteTimeout: writeTimeout, IdleTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10,
	}, r.coll, reg, reg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	r.url = "http://" + srv.Addrs()[0].String() + "/metrics"
	return r
}

func (r *rig) setPods(p []kubelet.Pod) { r.kubelet.SetPods(p) }

// collect runs one collection at simulated time d.
func (r *rig) collect(d time.Duration) error {
	r.clock.at(r.t0, d)
	return r.coll.Collect(context.Background())
}

// scrape fetches and parses /metrics; it fails the test on any error.
func (r *rig) scrape() map[string]*dto.MetricFamily {
	r.t.Helper()
	resp, err := http.Get(r.url)
	if err != nil {
		r.t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("scrape status %s", resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		r.t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// waitPods polls until the attribution holds want holders in total.
func (r *rig) waitPods(want int) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.client.Table().Len() != want {
		if time.Now().After(deadline) {
			r.t.Fatalf("attribution holds %d devices, want %d", r.client.Table().Len(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func gauge(fams map[string]*dto.MetricFamily, name string) float64 {
	fam := fams[name]
	if fam == nil || len(fam.Metric) == 0 {
		return -1
	}
	m := fam.Metric[0]
	return m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
}

// sum adds the values of every series of a family; -1 when it is absent.
func sum(fams map[string]*dto.MetricFamily, name string) float64 {
	fam := fams[name]
	if fam == nil || len(fam.Metric) == 0 {
		return -1
	}
	var v float64
	for _, m := range fam.Metric {
		v += m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
	}
	return v
}

func series(fams map[string]*dto.MetricFamily, name string) []map[string]string {
	var out []map[string]string
	for _, m := range fams[name].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		out = append(out, l)
	}
	return out
}

func gpusOf(fams map[string]*dto.MetricFamily, name string) string {
	var ids []string
	for _, l := range series(fams, name) {
		ids = append(ids, l["gpu"])
	}
	return strings.Join(ids, ",")
}

// TestFaultMatrix: one row per fault, each on its own exporter.
func TestFaultMatrix(t *testing.T) {
	t.Parallel()
	cases := []struct {
		fault string
		run   func(t *testing.T, r *rig)
	}{
		{"source outage drops GPU series, keeps serving, recovers", func(t *testing.T, r *rig) {
			if err := r.collect(50 * time.Second); err != nil {
				t.Fatal(err)
			}
			if err := r.collect(70 * time.Second); err == nil {
				t.Fatal("collection during the outage succeeded")
			}
			fams := r.scrape()
			if fams["gpu_temperature_celsius"] != nil {
				t.Error("stale GPU series served during the outage")
			}
			if gauge(fams, "gpu_exporter_source_up") != 0 {
				t.Error("gpu_exporter_source_up not 0 during the outage")
			}
			if err := r.collect(90 * time.Second); err != nil {
				t.Fatal(err)
			}
			if fams = r.scrape(); gpusOf(fams, "gpu_temperature_celsius") != "0,1,2,3" || gauge(fams, "gpu_exporter_source_up") != 1 {
				t.Error("did not recover after the outage")
			}
		}},
		{"hung source: collection times out, scrapes keep answering", func(t *testing.T, r *rig) {
			if err := r.collect(time.Second); err != nil {
				t.Fatal(err)
			}
			gate := make(chan struct{})
			r.src.gate.Store(&gate)
			start := time.Now()
			if err := r.collect(2 * time.Second); err == nil {
				t.Fatal("collection with a hung source succeeded")
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("collection took %s with a 200ms timeout", d)
			}
			for i := 0; i < 10; i++ {
				if fams := r.scrape(); gauge(fams, "gpu_exporter_source_up") != 0 {
					t.Fatal("source_up not 0 while hung")
				}
			}
			r.src.gate.Store(nil)
			close(gate)
			deadline := time.Now().Add(5 * time.Second)
			for r.collect(3*time.Second) != nil {
				if time.Now().After(deadline) {
					t.Fatal("no recovery after the hang ended")
				}
				time.Sleep(10 * time.Millisecond)
			}
		}},
		{"partial data: a GPU without a value is left out, the others served", func(t *testing.T, r *rig) {
			if err := r.collect(time.Second); err != nil {
				t.Fatal(err)
			}
			fams := r.scrape()
			if got := gpusOf(fams, "gpu_utilization_ratio"); got != "0,0,2,3" && got != "0,2,3" {
				// GPU 0 and 3 are held; GPU 1 has no utilization value.
				t.Errorf("utilization for GPUs %s, want all but GPU 1", got)
			}
			if got := gpusOf(fams, "gpu_temperature_celsius"); !strings.Contains(got, "1") {
				t.Errorf("GPU 1 lost its other fields: %s", got)
			}
		}},
		{"GPU removed and added at run time", func(t *testing.T, r *rig) {
			if err := r.collect(125 * time.Second); err != nil {
				t.Fatal(err)
			}
			if got := gpusOf(r.scrape(), "gpu_info"); got != "0,1,2" {
				t.Errorf("gpu_info GPUs after loss = %s, want 0,1,2", got)
			}
			if err := r.collect(160 * time.Second); err != nil {
				t.Fatal(err)
			}
			if got := gpusOf(r.scrape(), "gpu_info"); got != "0,1,2,3" {
				t.Errorf("gpu_info GPUs after return = %s, want 0,1,2,3", got)
			}
		}},
		{"kubelet socket removed then restarted", func(t *testing.T, r *rig) {
			r.waitPods(2)
			path := r.kubelet.Path()
			r.kubelet.Stop()
			deadline := time.Now().Add(10 * time.Second)
			for r.client.Up() {
				if time.Now().After(deadline) {
					t.Fatal("client still up after the kubelet went away")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := r.collect(time.Second); err != nil {
				t.Fatal(err)
			}
			fams := r.scrape()
			for _, l := range series(fams, "gpu_temperature_celsius") {
				if l["pod"] != "" {
					t.Fatalf("pod label kept while the kubelet is down: %v", l)
				}
			}
			if gauge(fams, "gpu_exporter_podresources_up") != 0 || len(series(fams, "gpu_temperature_celsius")) != 4 {
				t.Error("want podresources_up 0 and all 4 GPUs served without pod labels")
			}
			k, err := kubelet.Start(path)
			if err != nil {
				t.Fatal(err)
			}
			defer k.Stop()
			r.kubelet = k
			r.setPods(kubelet.FromSim(r.simSrc.Pods()))
			r.waitPods(2)
			if err := r.collect(2 * time.Second); err != nil {
				t.Fatal(err)
			}
			if held := series(r.scrape(), "gpu_pod_allocation_info"); len(held) != 2 {
				t.Errorf("after restart %d allocations, want 2", len(held))
			}
		}},
		{"kubelet hangs: no blocked scrape, attribution dropped", func(t *testing.T, r *rig) {
			r.waitPods(2)
			r.kubelet.SetHang(time.Hour)
			deadline := time.Now().Add(10 * time.Second)
			for r.client.Up() {
				if time.Now().After(deadline) {
					t.Fatal("client still up with a hung kubelet")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := r.collect(time.Second); err != nil {
				t.Fatal(err)
			}
			if fams := r.scrape(); fams["gpu_pod_allocation_info"] != nil {
				t.Error("allocations kept while the kubelet hangs")
			}
			r.kubelet.SetHang(0)
		}},
		{"malformed device ids are counted, not fatal", func(t *testing.T, r *rig) {
			r.setPods([]kubelet.Pod{{Namespace: "x", Name: "bad", Containers: []kubelet.Container{{Name: "c", Devices: []kubelet.Device{
				{Resource: "nvidia.com/gpu", IDs: []string{"GPU-not-a-uuid", "nvidia-zero", "MIG-GPU-x/1"}},
			}}}}})
			deadline := time.Now().Add(10 * time.Second)
			for {
				if err := r.collect(time.Second); err != nil {
					t.Fatal(err)
				}
				fams := r.scrape()
				if sum(fams, "gpu_exporter_podresources_unmatched_devices") == 3 {
					if len(series(fams, "gpu_temperature_celsius")) != 4 {
						t.Error("GPU series lost over malformed ids")
					}
					byReason := map[string]float64{}
					for _, m := range fams["gpu_exporter_podresources_unmatched_devices"].GetMetric() {
						for _, l := range m.GetLabel() {
							if l.GetName() == "reason" {
								byReason[l.GetValue()] = m.GetGauge().GetValue()
							}
						}
					}
					t.Logf("unmatched by reason: %v", byReason)
					if byReason["malformed"] != 3 || len(byReason) != 4 { // malformed, unknown_gpu, unsupported_form, no_resourceslice
						t.Errorf("unmatched devices by reason = %v, want the three ids malformed and every reason present", byReason)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("unmatched devices = %v, want 3", sum(fams, "gpu_exporter_podresources_unmatched_devices"))
				}
				time.Sleep(10 * time.Millisecond)
			}
		}},
		{"pods churning every refresh: labels follow, none stale", func(t *testing.T, r *rig) {
			inv, err := r.simSrc.Inventory(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 5; i++ {
				name := fmt.Sprintf("job-%d", i)
				r.setPods([]kubelet.Pod{{Namespace: "churn", Name: name, Containers: []kubelet.Container{{Name: "c", Devices: []kubelet.Device{
					{Resource: "nvidia.com/gpu", IDs: []string{inv.Entities[i%4].UUID}},
				}}}}})
				deadline := time.Now().Add(10 * time.Second)
				for {
					if err := r.collect(time.Duration(i+1) * time.Second); err != nil {
						t.Fatal(err)
					}
					held := series(r.scrape(), "gpu_pod_allocation_info")
					if len(held) == 1 && held[0]["pod"] == name {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("round %d: allocations %v, want only %s", i, held, name)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.fault, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newRig(t, 200*time.Millisecond, 5*time.Second))
		})
	}
}

// TestHostileClients: slow readers, clients that vanish mid-response and a
// burst of 1,000 parallel scrapes leave the server answering correctly.
func TestHostileClients(t *testing.T) {
	t.Parallel()
	// The write timeout frees stalled readers; it is long enough for 1,000
	// concurrent responses on two cores under the race detector.
	r := newRig(t, time.Second, 30*time.Second)
	if err := r.collect(time.Second); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(strings.TrimSuffix(r.url, "/metrics"), "http://")

	// Slow readers: read a few bytes, then stall while the others scrape.
	var slow []net.Conn
	for i := 0; i < 20; i++ {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		_, _ = bufio.NewReader(c).Peek(16)
		slow = append(slow, c)
	}
	// Clients that disconnect mid-response.
	for i := 0; i < 50; i++ {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
		buf := make([]byte, 100)
		_, _ = io.ReadFull(c, buf)
		_ = c.Close()
	}
	// 1,000 scrapes in parallel, each complete and parseable.
	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Value
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(r.url)
			if err != nil {
				firstErr.CompareAndSwap(nil, err.Error())
				failed.Add(1)
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte("gpu_temperature_celsius")) {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of 1000 parallel scrapes failed; first error: %v", n, firstErr.Load())
	}
	for _, c := range slow {
		_ = c.Close()
	}
	if fams := r.scrape(); len(series(fams, "gpu_temperature_celsius")) != 4 {
		t.Error("server degraded after hostile clients")
	}
}
