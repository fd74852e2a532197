package exposition

import (
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// TestDCGMP2PStatus: DCGM_EXP_P2P_STATUS as dcgm-exporter's
// p2p_status_collector.go (commit d5e5f510) writes it: one series per GPU
// and peer, link_status named from the raw value (Unknown past 6), the raw
// value, no series per MIG instance, none without a status; Prometheus
// naming never asks for it.
func TestDCGMP2PStatus(t *testing.T) {
	t.Parallel()
	k := Counters{P2PStatus: &ExporterFamily{Name: fields.P2PStatusName, Help: "P2P status", Type: fields.Gauge}}
	render := func(links []source.P2PLink) (map[[3]string]float64, string) {
		r := NewRenderer(Options{Naming: NamingDCGM})
		set, extra := r.WatchSet(k)
		if !r.WantsP2P() {
			t.Fatal("dcgm naming with DCGM_EXP_P2P_STATUS listed does not ask for the P2P status")
		}
		in := familiesInput(t, set)
		in.Extra, in.P2P = extra, links
		r.Derive(&in, k)
		text := string(r.Render(in).Text)
		got := map[[3]string]float64{}
		mf, ok := parseText(t, []byte(text))[fields.P2PStatusName]
		if !ok {
			return got, text
		}
		if mf.GetType().String() != "GAUGE" || mf.GetHelp() != "P2P status" {
			t.Errorf("type %s help %q, want the counters file row's", mf.GetType(), mf.GetHelp())
		}
		for _, m := range mf.Metric {
			l := labelMap(m)
			if l["GPU_I_ID"] != "" {
				t.Errorf("series on a MIG instance: %v", l)
			}
			got[[3]string{l["gpu"], l["peer_gpu"], l["link_status"]}] = m.GetGauge().GetValue()
		}
		return got, text
	}
	got, text := render([]source.P2PLink{{GPU: 0, Peer: 1, Status: 0}, {GPU: 1, Peer: 0, Status: 4}, {GPU: 0, Peer: 2, Status: 9}})
	want := map[[3]string]float64{{"0", "1", "OK"}: 0, {"1", "0", "DisabledByRegKey"}: 4, {"0", "2", "Unknown"}: 9}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for key, v := range want {
		if g, ok := got[key]; !ok || g != v {
			t.Errorf("%v = %v (present %v), want %v", key, g, ok, v)
		}
	}
	if !strings.Contains(text, `link_status="OK",peer_gpu="1"`) {
		t.Errorf("labels not in dcgm-exporter's order (link_status, peer_gpu):\n%s", text)
	}
	if got, _ := render([]source.P2PLink{}); len(got) != 0 {
		t.Errorf("empty status: %d series, want none", len(got))
	}
	if got, _ := render(nil); len(got) != 0 {
		t.Errorf("no status: %d series, want none", len(got))
	}
	if NewRenderer(Options{Naming: NamingPrometheus}).WantsP2P() {
		t.Error("Prometheus naming asks for the P2P status")
	}
	r := NewRenderer(Options{Naming: NamingDCGM})
	r.WatchSet(Counters{})
	if r.WantsP2P() {
		t.Error("dcgm naming asks for the P2P status without the counters row")
	}
}
