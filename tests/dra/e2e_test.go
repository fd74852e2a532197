package dra

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/collector"
	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
	"github.com/gpu-exporter/gpu-exporter/pkg/resourceslices"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim/kubelet"
	"github.com/gpu-exporter/gpu-exporter/tests/kubeapi"
)

// node is the dra scenario's node (its claims' pool).
const node = "dra-node"

// exporter is the exporter's attribution path on the dra scenario: the
// simulated node's GPUs and kubelet, the ResourceSlice informer on token,
// the pod-resources client and the collector, wired as cmd/gpu-exporter
// wires them (podresources.Open with the store as its DRA lookup).
type exporter struct {
	store *resourceslices.Store
	reg   *prometheus.Registry
	coll  *collector.Collector
}

func startExporter(t *testing.T, srv *kubeapi.Server, token string, naming exposition.Naming) *exporter {
	t.Helper()
	scn, err := sim.LoadBuiltin("dra")
	if err != nil {
		t.Fatal(err)
	}
	src := sim.New(scn)
	t.Cleanup(func() { _ = src.Close() })
	kl, err := kubelet.Start(filepath.Join(t.TempDir(), "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kl.Stop)
	kl.FollowSim(src)
	logger := slog.New(slog.DiscardHandler)
	e := &exporter{reg: prometheus.NewRegistry()}
	ctx, cancel := context.WithCancel(context.Background())
	if e.store, err = resourceslices.Start(ctx, srv.Config(token), node, logger); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); e.store.Wait() })
	if err := e.store.Register(e.reg); err != nil {
		t.Fatal(err)
	}
	cfg := podresources.DefaultConfig()
	cfg.Socket, cfg.RefreshInterval, cfg.CallTimeout, cfg.DRA = kl.Path(), 50*time.Millisecond, 50*time.Millisecond, e.store
	client, err := podresources.New(cfg, logger, e.reg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { client.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; _ = client.Close() })
	e.coll, err = collector.New(collector.Config{Interval: time.Hour, Fields: fields.MustNew().Defaults(), Naming: naming}, src, client, logger, e.reg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// page collects once and returns the lines starting with one of prefixes
// of the GPU page and of the self-metrics (gauges only, written
// "name{labels} = value").
func (e *exporter) page(t *testing.T, prefixes ...string) []string {
	t.Helper()
	if err := e.coll.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	text := string(e.coll.Page().Body(exposition.FormatText, exposition.Identity))
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l := mf.GetName() + "{"
			for i, lp := range m.GetLabel() {
				if i > 0 {
					l += ","
				}
				l += lp.GetName() + `="` + lp.GetValue() + `"`
			}
			if g := m.GetGauge(); g != nil {
				text += l + "} = " + strconv.FormatFloat(g.GetValue(), 'g', -1, 64) + "\n"
			}
		}
	}
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(line, p) {
				out = append(out, line)
			}
		}
	}
	return out
}

func has(lines []string, parts ...string) bool {
	for _, l := range lines {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// With the chart's ServiceAccount and the node's ResourceSlices in a real
// API server, every claim of the dra scenario is attributed: whole GPUs,
// a claim two pods share, static MIG (by uuid), dynamic MIG and a +me
// profile (by parentUUID and placement start).
func TestEveryClaimAttributed(t *testing.T) {
	srv := kubeapi.Shared(t)
	sa := chartAccount(t, srv)
	srv.Create(t, kubeapi.ResourceSlices, draNodeSlices(node))
	e := startExporter(t, srv, srv.Token(t, chartNamespace, sa), exposition.NamingPrometheus)
	poll.Within(t, 15*time.Second, 50*time.Millisecond, "the ResourceSlice informer synced", func() bool {
		return e.store.State().Condition() == resourceslices.ConditionSynced
	})
	u := func(i int) string { return `uuid="` + gpuUUIDs[i] + `"` }
	want := [][]string{
		{u(0), `pod="train"`, `claim_name="train-gpu"`, `claim_device="gpu-0"`},
		{u(1), `pod="infer-a"`, `claim_name="shared-gpu"`, `claim_device="gpu-1"`},
		{u(1), `pod="infer-b"`, `claim_name="shared-gpu"`, `claim_device="gpu-1"`},
		{u(2), `gpu_instance="9"`, `pod="notebook"`, `claim_device="gpu-2-mig-1g10gb-19-0"`},
		{u(2), `gpu_instance="2"`, `pod="finetune"`, `claim_device="gpu-2-mig-3g40gb-9-4"`},
		{u(2), `gpu_instance="13"`, `pod="video"`, `claim_device="gpu-2-mig-1g10gb-me-20-1"`},
	}
	var lines []string
	poll.Within(t, 15*time.Second, 50*time.Millisecond, "every claim attributed", func() bool {
		lines = e.page(t, "gpu_dra_claim_info{", "gpu_exporter_podresources_unmatched_devices{", "gpu_exporter_resourceslices_")
		for _, w := range want {
			if !has(lines, append([]string{"gpu_dra_claim_info{"}, w...)...) {
				return false
			}
		}
		return true
	})
	if n := count(lines, "gpu_dra_claim_info{"); n != len(want) {
		t.Errorf("%d gpu_dra_claim_info series, want %d:\n%s", n, len(want), strings.Join(lines, "\n"))
	}
	for _, reason := range []string{"malformed", "unsupported_form", "unknown_gpu", "no_resourceslice"} {
		if !has(lines, `gpu_exporter_podresources_unmatched_devices{reason="`+reason+`"} = 0`) {
			t.Errorf("unmatched %s not 0:\n%s", reason, strings.Join(lines, "\n"))
		}
	}
	if !has(lines, `gpu_exporter_resourceslices_state{state="synced"} = 1`) || !has(lines, `gpu_exporter_resourceslices_devices{} = 7`) {
		t.Errorf("informer self-metrics:\n%s", strings.Join(lines, "\n"))
	}

	// dcgm naming: dcgm-exporter's dra_* labels on the holders' series.
	d := startExporter(t, srv, srv.Token(t, chartNamespace, sa), exposition.NamingDCGM)
	poll.Within(t, 15*time.Second, 50*time.Millisecond, "dra_* labels on the static MIG holder", func() bool {
		return has(d.page(t, "DCGM_FI_DEV_SM_CLOCK{"), `dra_claim_name="notebook-mig"`, `dra_claim_namespace="ml"`,
			`dra_device_name="gpu-2-mig-1g10gb-19-0"`, `dra_driver_name="gpu.nvidia.com"`,
			`dra_mig_device_uuid="`+staticMIG+`"`, `dra_mig_profile="1g.10gb"`, `dra_pool_name="dra-node"`, `pod="notebook"`)
	})
}

// A ServiceAccount without the chart's role gets 403, and the exporter
// degrades as docs/dra.md says: whole GPUs attributed by minor number, the
// MIG devices counted as no_resourceslice, the informer's state forbidden.
func TestWithoutRoleDegrades(t *testing.T) {
	srv := kubeapi.Shared(t)
	srv.CreateNamespace(t, "norole")
	srv.CreateServiceAccount(t, "norole", "exporter")
	e := startExporter(t, srv, srv.Token(t, "norole", "exporter"), exposition.NamingPrometheus)
	poll.Within(t, 15*time.Second, 50*time.Millisecond, "the informer forbidden", func() bool {
		return e.store.State().Condition() == resourceslices.ConditionForbidden
	})
	var lines []string
	poll.Within(t, 15*time.Second, 50*time.Millisecond, "whole GPUs attributed, MIG devices not", func() bool {
		lines = e.page(t, "gpu_dra_claim_info{", "gpu_exporter_podresources_unmatched_devices{", "gpu_exporter_resourceslices_state{")
		return count(lines, "gpu_dra_claim_info{") == 3 && has(lines, `unmatched_devices{reason="no_resourceslice"} = 3`)
	})
	for _, pod := range []string{"train", "infer-a", "infer-b"} {
		if !has(lines, "gpu_dra_claim_info{", `pod="`+pod+`"`) {
			t.Errorf("whole-GPU pod %s not attributed:\n%s", pod, strings.Join(lines, "\n"))
		}
	}
	if !has(lines, `gpu_exporter_resourceslices_state{state="forbidden"} = 1`) {
		t.Errorf("informer state:\n%s", strings.Join(lines, "\n"))
	}
}

func count(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}
