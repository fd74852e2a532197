package source

import "context"

// P2PLink is the NVLink peer-to-peer status DCGM reports from one GPU to a
// peer (dcgmGetNvLinkP2PStatus): Status is the raw
// dcgmNvLinkGpuP2PStatus_t (dcgm_structs.h: 0 OK, 1 chipset not
// supported, 2 GPU not supported, 3 topology not supported, 4 disabled by
// regkey, 5 not supported, 6 unknown).
type P2PLink struct {
	GPU, Peer int
	Status    int
}

// P2PReporter is implemented by sources that tell the NVLink P2P status of
// GPU pairs (DCGM). The status is topology: sources read it rarely and
// answer from the last read in between. An empty result means the source
// reports no pair (DCGM says P2P status is not supported).
type P2PReporter interface {
	P2PStatus(ctx context.Context) ([]P2PLink, error)
}
