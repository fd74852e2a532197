//go:build cgo && linux

package dcgm

import (
	"context"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

var _ source.P2PReporter = (*Source)(nil)

// p2pStatus is the last NVLink P2P status DCGM reported, for the inventory
// it was read with.
type p2pStatus struct {
	inv   *inventory
	at    time.Time
	links []source.P2PLink
}

// P2PStatus returns the NVLink P2P status of every ordered pair of
// distinct GPUs (dcgmGetNvLinkP2PStatus through go-dcgm's
// GetNvLinkP2PStatus, which answers an empty status when DCGM says
// DCGM_ST_NOT_SUPPORTED). The status is topology: it is read at most once
// per Config.FabricInterval, and again when the inventory changes; in
// between the last answer stands (source.P2PReporter). A failed read is
// not kept, so the next call reads again.
func (s *Source) P2PStatus(ctx context.Context) ([]source.P2PLink, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ensure(ctx); err != nil {
		return nil, err
	}
	if c := s.p2p; c != nil && c.inv == s.inv && s.now().Sub(c.at) < s.cfg.FabricInterval {
		return c.links, nil
	}
	st, err := cgocall.Call(ctx, s.w, "GetNvLinkP2PStatus", godcgm.GetNvLinkP2PStatus)
	if err != nil {
		if connectionLost(err) {
			return nil, s.failed(err)
		}
		return nil, err
	}
	links := []source.P2PLink{}
	for i, row := range st.Gpus {
		for j, v := range row {
			if i != j {
				links = append(links, source.P2PLink{GPU: i, Peer: j, Status: int(v)})
			}
		}
	}
	s.p2p = &p2pStatus{inv: s.inv, at: s.now(), links: links}
	return links, nil
}
