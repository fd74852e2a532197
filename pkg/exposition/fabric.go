package exposition

import (
	"strconv"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// The NVLink and NVSwitch families Prometheus naming adds besides the
// catalog's fields: switch facts, link state and the fabric's topology;
// once each, whatever the holders.
var (
	// nvswitchInfoFamily is nvswitch_info: every NVSwitch.
	nvswitchInfoFamily = Family{
		Name: "nvswitch_info", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "Static facts about an NVSwitch (uuid empty where the source does not give it); always 1.",
		Labels: []string{"nvswitch", "uuid", "pci_bus_id"},
		render: func(p *pageWriter, in Input, f family) {
			inv := in.Sample.Inventory
			b := p.buf[:0]
			for i := range inv.Entities {
				e := &inv.Entities[i]
				if e.Kind != source.NVSwitch {
					continue
				}
				b = appendLabel(b[:0], true, "nvswitch", strconv.Itoa(e.ID))
				b = appendLabel(b, false, "uuid", e.UUID)
				b = appendLabel(b, false, "pci_bus_id", e.PCIBusID)
				p.line(&f, b, "", "", 1)
			}
			p.buf = b
		},
	}
	// nvlinkUpFamily is gpu_nvlink_up: every GPU link in a known state.
	nvlinkUpFamily = Family{
		Name: "gpu_nvlink_up", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "Whether an NVLink of the GPU is up: 1 active, 0 down. Disabled links, and links whose state the source cannot read, have no series.",
		Labels: []string{"gpu", "uuid", "link"},
		render: func(p *pageWriter, in Input, f family) {
			s := in.Sample
			inv := s.Inventory
			b := p.buf[:0]
			for i := range inv.Entities {
				e := &inv.Entities[i]
				if e.Kind != source.NVLink || e.Parent != source.GPU {
					continue
				}
				v := 0.0
				switch s.LinkState(i) {
				case source.LinkUp:
					v = 1
				case source.LinkDown:
				default:
					continue
				}
				b = appendLabel(b[:0], true, "gpu", strconv.Itoa(e.GPU))
				b = appendLabel(b, false, "uuid", e.UUID)
				b = appendLabel(b, false, "link", strconv.Itoa(e.Link))
				p.line(&f, b, "", "", v)
			}
			p.buf = b
		},
	}
	// nvlinkPeerFamily is gpu_nvlink_peer_info: every GPU link with a
	// known peer.
	nvlinkPeerFamily = Family{
		Name: "gpu_nvlink_peer_info", Type: fields.Gauge, Naming: NamingPrometheus,
		Help:   "The far end of an NVLink of the GPU: peer_type \"gpu\" (peer is the GPU index) or \"nvswitch\" (peer is the switch id; the NVML source, which has no switch ids, gives its PCI bus id); always 1. Links whose peer the source cannot tell have no series.",
		Labels: []string{"gpu", "link", "peer_type", "peer"},
		render: func(p *pageWriter, in Input, f family) {
			inv := in.Sample.Inventory
			b := p.buf[:0]
			for i := range inv.Entities {
				e := &inv.Entities[i]
				if e.Kind != source.NVLink || e.Parent != source.GPU || e.PeerType == "" {
					continue
				}
				b = appendLabel(b[:0], true, "gpu", strconv.Itoa(e.GPU))
				b = appendLabel(b, false, "link", strconv.Itoa(e.Link))
				b = appendLabel(b, false, "peer_type", e.PeerType)
				b = appendLabel(b, false, "peer", e.Peer)
				p.line(&f, b, "", "", 1)
			}
			p.buf = b
		},
	}
)
