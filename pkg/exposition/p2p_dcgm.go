package exposition

import (
	"strconv"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// Labels of DCGM_EXP_P2P_STATUS (dcgm-exporter's
// internal/pkg/collector/const.go, PeerGPULabel and LinkStatusLabel, commit
// d5e5f510a1b6b393f39a43293ccd9dc985defc79).
const (
	p2pPeerLabel   = "peer_gpu"
	p2pStatusLabel = "link_status"
)

// p2pStatusName is the link_status of a dcgmNvLinkGpuP2PStatus_t value, as
// dcgm-exporter's p2pStatusToString names it
// (internal/pkg/collector/p2p_status_collector.go and const.go, commit
// d5e5f510a1b6b393f39a43293ccd9dc985defc79): a value past 6 is Unknown.
func p2pStatusName(v int) string {
	switch v {
	case 0:
		return "OK"
	case 1:
		return "ChipsetNotSupported"
	case 2:
		return "GPUNotSupported"
	case 3:
		return "TopologyNotSupported"
	case 4:
		return "DisabledByRegKey"
	case 5:
		return "NotSupported"
	}
	return "Unknown"
}

// p2pStatusFamily is DCGM_EXP_P2P_STATUS; the counters file row that turns
// it on gives its header (pageWriter.p2p).
var p2pStatusFamily = Family{
	Name: fields.P2PStatusName, Type: fields.Gauge, Naming: NamingDCGM, FromCounters: true,
	Help: "Per GPU (never per MIG instance) and peer GPU `" + p2pPeerLabel + "` (every other GPU DCGM reports), " +
		"DCGM's NVLink P2P status (dcgmNvLinkGpuP2PStatus_t): 0 `OK`, 1 `ChipsetNotSupported`, 2 `GPUNotSupported`, " +
		"3 `TopologyNotSupported`, 4 `DisabledByRegKey`, 5 `NotSupported`, 6 `Unknown`, named by `" + p2pStatusLabel + "`. " +
		"Read once per fabric interval and when the GPUs change; DCGM source only. " +
		"Absent while the read fails and where DCGM does not support it.",
	Labels: []string{EntityLabels, p2pStatusLabel, p2pPeerLabel, HolderLabels},
	render: func(p *pageWriter, in Input, _ family) {
		if p.p2p != nil {
			p.renderP2PStatus(in, p.p2p)
		}
	},
}

// renderP2PStatus writes DCGM_EXP_P2P_STATUS as dcgm-exporter's
// p2pStatusCollector does (p2p_status_collector.go, commit
// d5e5f510a1b6b393f39a43293ccd9dc985defc79): for every holding on a GPU
// entity, one series per peer GPU the status lists, the raw status as its
// value, with the GPU's labels only (its collector reads FE_GPU entities,
// so never a MIG instance). in.P2P nil (no status: the source does not
// tell it, or the read failed) leaves the family out, as dcgm-exporter's
// collector returns an error then.
func (p *pageWriter) renderP2PStatus(in Input, f *ExporterFamily) {
	if in.P2P == nil {
		return
	}
	fam := family{name: f.Name, help: f.Help, typ: f.Type}
	for i, e := range gpuHoldings(in) {
		for _, x := range in.P2P {
			if x.GPU != e.GPU {
				continue
			}
			// dcgm-exporter sorts these labels by name: link_status before
			// peer_gpu.
			p.intSeries(&fam, i, p2pStatusLabel, p2pStatusName(x.Status), p2pPeerLabel, strconv.Itoa(x.Peer), int64(x.Status))
		}
	}
}
