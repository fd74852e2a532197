package exposition

import (
	"maps"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// fabricInput is one GPU with two links (one up with a switch peer, one
// down), one NVSwitch with one port, the GPU held by a pod; every field
// reads 7.
func fabricInput(t *testing.T, set []fields.Field) Input {
	t.Helper()
	inv := &source.Inventory{Entities: []source.Entity{
		{Kind: source.GPU, GPU: 0, UUID: "GPU-a", Device: "nvidia0", Model: "H100", PCIBusID: "00000000:18:00.0"},
		{Kind: source.NVLink, GPU: 0, UUID: "GPU-a", Device: "nvidia0", Model: "H100", PCIBusID: "00000000:18:00.0", Link: 0, PeerType: source.PeerNVSwitch, Peer: "2"},
		{Kind: source.NVLink, GPU: 0, UUID: "GPU-a", Device: "nvidia0", Model: "H100", PCIBusID: "00000000:18:00.0", Link: 1},
		{Kind: source.NVSwitch, GPU: -1, ID: 2, UUID: "SW-2", PCIBusID: "00000000:05:00.0"},
		{Kind: source.NVLink, Parent: source.NVSwitch, GPU: -1, ID: 2, Link: 7, PeerType: source.PeerGPU, Peer: "0"},
	}}
	s := source.NewSample(testTime, inv, set)
	for e := range inv.Entities {
		for c := range set {
			s.Set(e, c, source.IntValue(7))
		}
	}
	s.LinkStates = []source.LinkState{source.LinkUnknown, source.LinkUp, source.LinkDown, source.LinkUnknown, source.LinkUp}
	h := &Holder{Namespace: "ml", Pod: "train", Container: "main"}
	return Input{Sample: s, Holdings: []Holding{{Entity: 0, Holder: h}, {Entity: 1, Holder: h}, {Entity: 2, Holder: h}, {Entity: 3}, {Entity: 4}}}
}

func TestFabricSeries(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	var set []fields.Field
	for _, id := range []uint16{843, 409, 858, 870} {
		f, ok := cat.ByID(id)
		if !ok {
			t.Fatalf("field %d not in the catalog", id)
		}
		set = append(set, f)
	}
	type series struct {
		family string
		labels map[string]string
		value  float64
	}
	cases := []struct {
		naming Naming
		want   []series
		absent []string
	}{
		{NamingPrometheus, []series{
			{"gpu_nvlink_up", map[string]string{"gpu": "0", "uuid": "GPU-a", "link": "0"}, 1},
			{"gpu_nvlink_up", map[string]string{"gpu": "0", "uuid": "GPU-a", "link": "1"}, 0},
			{"gpu_nvlink_peer_info", map[string]string{"gpu": "0", "link": "0", "peer_type": "nvswitch", "peer": "2"}, 1},
			{"nvswitch_info", map[string]string{"nvswitch": "2", "uuid": "SW-2", "pci_bus_id": "00000000:05:00.0"}, 1},
			// A GPU link carries the GPU's holder, so a slow link names its job.
			{"gpu_nvlink_transmit_bytes_total", map[string]string{"gpu": "0", "uuid": "GPU-a", "device": "nvidia0", "model": "H100", "link": "1",
				"namespace": "ml", "pod": "train", "container": "main"}, 7 << 10},
			{"gpu_nvlink_crc_flit_errors_total", map[string]string{"gpu": "0", "uuid": "GPU-a", "device": "nvidia0", "model": "H100",
				"namespace": "ml", "pod": "train", "container": "main"}, 7},
			{"nvswitch_temperature_celsius", map[string]string{"nvswitch": "2"}, 7},
			{"nvswitch_link_status", map[string]string{"nvswitch": "2", "link": "7"}, 7},
			// One allocation for the GPU, none for its held links.
			{"gpu_pod_allocation_info", map[string]string{"gpu": "0", "uuid": "GPU-a", "device": "nvidia0", "model": "H100",
				"namespace": "ml", "pod": "train", "container": "main", "shared": "false"}, 1},
		}, nil},
		{NamingDCGM, []series{
			{"DCGM_FI_DEV_NVLINK_TX_THROUGHPUT_TOTAL", map[string]string{"nvlink": "1", "gpu": "0", "gpu_uuid": "GPU-a", "pci_bus_id": "00000000:18:00.0",
				"device": "nvidia0", "model_name": "H100", "namespace": "ml", "pod": "train", "container": "main"}, 7},
			{"DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS", map[string]string{"nvswitch": "nvswitch2"}, 7},
			{"DCGM_FI_DEV_NVSWITCH_LINK_STATUS", map[string]string{"nvlink": "7", "nvswitch": "nvswitch2"}, 7},
		}, []string{"gpu_nvlink_up", "nvswitch_info", "gpu_nvlink_peer_info"}},
	}
	for _, tc := range cases {
		t.Run(tc.naming.String(), func(t *testing.T) {
			t.Parallel()
			r := NewRenderer(Options{Naming: tc.naming})
			ws, _ := r.WatchSet(Counters{Fields: set})
			page := r.Render(fabricInput(t, ws))
			fams := parseText(t, page.Text)
			for _, w := range tc.want {
				mf, ok := fams[w.family]
				if !ok {
					t.Errorf("no family %s", w.family)
					continue
				}
				found := false
				for _, m := range mf.Metric {
					if maps.Equal(labelMap(m), w.labels) {
						found = true
						if got := metricValue(m); got != w.value {
							t.Errorf("%s%v = %v, want %v", w.family, w.labels, got, w.value)
						}
					}
				}
				if !found {
					t.Errorf("no series %s%v", w.family, w.labels)
				}
			}
			if n := len(fams["gpu_pod_allocation_info"].GetMetric()); tc.naming == NamingPrometheus && n != 1 {
				t.Errorf("%d gpu_pod_allocation_info series, want 1 (the GPU's, not its links')", n)
			}
			for _, name := range tc.absent {
				if _, ok := fams[name]; ok {
					t.Errorf("family %s rendered in %s naming", name, tc.naming)
				}
			}
		})
	}
}
