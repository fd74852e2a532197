//go:build cgo && linux

package dcgm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	godcgm "github.com/NVIDIA/go-dcgm/pkg/dcgm"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// Fields of NVSwitches and their ports read once per inventory load, as
// live data (dcgm_fields.h; DCGM's field table keeps 866-869 at the switch
// level and 871-876 at the link level).
const (
	fieldSwitchPCIDomain   = 866
	fieldSwitchPCIBus      = 867
	fieldSwitchPCIDevice   = 868
	fieldSwitchPCIFunction = 869
	// fieldPortRemoteType is the kind of device at a port's far end
	// (DCGM_FI_DEV_NVSWITCH_LINK_TYPE: "NSCQ: GPU=1, Switch=2; NVSDM:
	// CA=1, Switch=2, GPU=5").
	fieldPortRemoteType   = 871
	fieldPortRemoteDomain = 872
	fieldPortRemoteBus    = 873
	fieldPortRemoteDevice = 874
	fieldPortRemoteFunc   = 875
	// fieldPortRemoteLink is the link index at the far end.
	fieldPortRemoteLink = 876
)

var switchFields = []godcgm.Short{fieldSwitchPCIDomain, fieldSwitchPCIBus, fieldSwitchPCIDevice, fieldSwitchPCIFunction}

var portFields = []godcgm.Short{fieldPortRemoteType, fieldPortRemoteDomain, fieldPortRemoteBus, fieldPortRemoteDevice,
	fieldPortRemoteFunc, fieldPortRemoteLink}

// fabricTopology is the NVLink fabric DCGM reports: the NVSwitches
// (dcgmGetEntityGroupEntities(DCGM_FE_SWITCH)) and the links of GPUs and
// switches in a state other than not supported (dcgmGetNvLinkLinkStatus),
// with their states.
type fabricTopology struct {
	switches []uint
	links    []godcgm.NvLinkStatus
	at       time.Time
	// failedReads counts the dcgmGetNvLinkLinkStatus calls that failed in
	// a row since the last that worked. While it is above 0, links are
	// those of the last call that worked, kept so that the links stay in
	// the inventory (their fields are still read). Their states stand for
	// one failed read, as the HPC job table stands for one failed refresh,
	// so that one transient failure neither makes gpu_nvlink_up absent nor
	// restarts the `for:` of an alert on it; from the second, they are out
	// of date and none is reported (linkStates).
	failedReads int
}

// fingerprint names the fabric's entities, not the links' states: a link
// going down changes its state, not the inventory.
func (f *fabricTopology) fingerprint() string {
	var b strings.Builder
	for _, id := range f.switches {
		fmt.Fprintf(&b, "s%d,", id)
	}
	for _, l := range f.links {
		fmt.Fprintf(&b, "l%d:%d:%d,", l.ParentType, l.ParentId, l.Index)
	}
	return b.String()
}

// loadFabric asks DCGM for the NVSwitches and link states, at most once
// per Config.FabricInterval; in between it returns the last answer. A DCGM
// without NVSwitch support (no NvSwitch module, no NVLink) has an empty
// fabric, logged once. A failed link status call keeps the links of the
// last one that worked, their states stale (see linkStatusFailed), and a
// failed switch list the switches of the last one: links and switches
// leave the inventory only when a call that works no longer lists them.
func (s *Source) loadFabric(ctx context.Context) (*fabricTopology, error) {
	if s.fabric != nil && s.now().Sub(s.fabric.at) < s.cfg.FabricInterval {
		return s.fabric, nil
	}
	f := &fabricTopology{at: s.now()}
	var ce *cgocall.CallError
	switches, err := cgocall.Call(ctx, s.w, "GetEntityGroupEntities", func() ([]uint, error) {
		return godcgm.GetEntityGroupEntities(godcgm.FE_SWITCH)
	})
	switch {
	case errors.As(err, &ce):
		return nil, err
	case err != nil && s.fabric != nil && len(s.fabric.switches) > 0:
		// DCGM listed switches before: not a node without NVSwitch. The
		// switches stay, and so do their ports (links are kept only on
		// a listed switch).
		s.fabricErrors++
		s.switchesFailing = true
		s.logs.Warn("dcgm/switches", "dcgm NVSwitch list failed; the switches stay until it works",
			"err", err, "switches", len(s.fabric.switches))
		f.switches = s.fabric.switches
	case err != nil:
		if s.first("switches") {
			s.log.Info("dcgm lists no NVSwitches", "err", err)
		}
	default:
		if s.switchesFailing {
			s.switchesFailing = false
			s.log.Info("dcgm NVSwitch list works again", "switches", len(switches))
		}
		f.switches = slices.Sorted(slices.Values(switches))
	}
	links, err := cgocall.Call(ctx, s.w, "GetNvLinkLinkStatus", godcgm.GetNvLinkLinkStatus)
	switch {
	case errors.As(err, &ce):
		return nil, err
	case err != nil:
		links, f.failedReads = s.linkStatusFailed(err)
	case s.nvlinkFailing:
		s.nvlinkFailing = false
		s.log.Info("dcgm NVLink status works again", "links", len(links))
	}
	for _, l := range links {
		if l.State == godcgm.LS_NOT_SUPPORTED {
			continue
		}
		if l.ParentType == godcgm.FE_SWITCH && !slices.Contains(f.switches, l.ParentId) {
			continue
		}
		f.links = append(f.links, l)
	}
	s.fabric = f
	return f, nil
}

// linkStatusFailed handles a dcgmGetNvLinkLinkStatus that failed without
// losing the connection. The failure is counted
// (gpu_exporter_collection_errors_total{stage="fabric"}) and logged at
// most once a minute. It returns the links of the last fabric, which stay
// in the inventory so that their series do not flap for one interval;
// their states are stale (DCGM did not tell them now), and a state the
// source cannot tell is not exported, as the design never presents an old
// value as fresh. Without an earlier fabric there is nothing to keep.
func (s *Source) linkStatusFailed(err error) (kept []godcgm.NvLinkStatus, failedReads int) {
	s.fabricErrors++
	s.nvlinkFailing = true
	if s.fabric == nil || len(s.fabric.links) == 0 {
		s.logs.Warn("dcgm/nvlink-status", "dcgm NVLink status unavailable; NVLinks not reported", "err", err)
		return nil, 0
	}
	s.logs.Warn("dcgm/nvlink-status", "dcgm NVLink status read failed; the links stay, their last states for one more fabric interval",
		"err", err, "links", len(s.fabric.links))
	return s.fabric.links, s.fabric.failedReads + 1
}

// linkState translates DCGM's link state (dcgm_structs.h
// dcgmNvLinkLinkState_t).
func linkState(st godcgm.Link_State) source.LinkState {
	switch st {
	case godcgm.LS_UP:
		return source.LinkUp
	case godcgm.LS_DOWN:
		return source.LinkDown
	case godcgm.LS_DISABLED:
		return source.LinkDisabled
	}
	return source.LinkUnknown
}

// appendFabric adds the links of the inventory's GPUs, then the NVSwitches,
// then their ports, with the far end of each link when the switches' port
// fields tell it.
func (s *Source) appendFabric(ctx context.Context, inv *inventory, f *fabricTopology) error {
	if f == nil || len(f.links) == 0 && len(f.switches) == 0 {
		return nil
	}
	gpuRow := map[uint]int{}
	byBus := map[string]uint{}
	for row, e := range inv.inv.Entities {
		if e.Kind == source.GPU {
			gpuRow[uint(e.GPU)] = row
			byBus[normalBus(e.PCIBusID)] = uint(e.GPU)
		}
	}
	var pairs []godcgm.GroupEntityPair
	for _, id := range f.switches {
		pairs = append(pairs, godcgm.GroupEntityPair{EntityGroupId: godcgm.FE_SWITCH, EntityId: id})
	}
	for _, l := range f.links {
		if l.ParentType == godcgm.FE_SWITCH {
			pairs = append(pairs, godcgm.GroupEntityPair{EntityGroupId: godcgm.FE_LINK, EntityId: linkID(groupSwitch, int(l.Index), l.ParentId)})
		}
	}
	attrs, err := s.fabricAttributes(ctx, pairs)
	if err != nil {
		return err
	}
	// The far end of each switch port, and so of each GPU link.
	type end struct {
		gpu  uint
		link int
	}
	portPeer := map[uint64]string{}
	gpuLinkPeer := map[end]string{}
	for _, l := range f.links {
		if l.ParentType != godcgm.FE_SWITCH {
			continue
		}
		ref := entityRef{groupLink, linkID(groupSwitch, int(l.Index), l.ParentId)}
		kind, ok := attrs.integer(ref, fieldPortRemoteType)
		if !ok || kind != 1 && kind != 5 { // a GPU, in NSCQ's or NVSDM's numbering
			continue
		}
		bus := pciBus(attrs, ref, fieldPortRemoteDomain)
		gpu, ok := byBus[bus]
		if !ok {
			continue
		}
		portPeer[ref.key()] = strconv.FormatUint(uint64(gpu), 10)
		if remote, ok := attrs.integer(ref, fieldPortRemoteLink); ok {
			gpuLinkPeer[end{gpu, int(remote)}] = strconv.FormatUint(uint64(l.ParentId), 10)
		}
	}
	for _, l := range f.links {
		row, ok := gpuRow[l.ParentId]
		if l.ParentType != godcgm.FE_GPU || !ok {
			continue // a switch port, or a GPU not in the inventory
		}
		e := inv.inv.Entities[row]
		e.Kind, e.Link, e.MemoryBytes = source.NVLink, int(l.Index), 0
		if sw, ok := gpuLinkPeer[end{l.ParentId, int(l.Index)}]; ok {
			e.PeerType, e.Peer = source.PeerNVSwitch, sw
		}
		inv.inv.Entities = append(inv.inv.Entities, e)
		inv.refs = append(inv.refs, entityRef{groupLink, linkID(groupGPU, int(l.Index), l.ParentId)})
	}
	for _, id := range f.switches {
		ref := entityRef{groupSwitch, id}
		inv.inv.Entities = append(inv.inv.Entities, source.Entity{Kind: source.NVSwitch, GPU: -1, ID: int(id), PCIBusID: pciBus(attrs, ref, fieldSwitchPCIDomain)})
		inv.refs = append(inv.refs, ref)
	}
	for _, l := range f.links {
		if l.ParentType != godcgm.FE_SWITCH {
			continue
		}
		ref := entityRef{groupLink, linkID(groupSwitch, int(l.Index), l.ParentId)}
		e := source.Entity{Kind: source.NVLink, Parent: source.NVSwitch, GPU: -1, ID: int(l.ParentId), Link: int(l.Index)}
		if gpu, ok := portPeer[ref.key()]; ok {
			e.PeerType, e.Peer = source.PeerGPU, gpu
		}
		inv.inv.Entities = append(inv.inv.Entities, e)
		inv.refs = append(inv.refs, ref)
	}
	return nil
}

// fabricAttributes reads the switch and port fields of pairs as live data.
// A DCGM that cannot answer them leaves the switches without PCI address
// and the links without peers, logged once.
func (s *Source) fabricAttributes(ctx context.Context, pairs []godcgm.GroupEntityPair) (attributes, error) {
	attrs := attributes{}
	if len(pairs) == 0 {
		return attrs, nil
	}
	ids := append(slices.Clone(switchFields), portFields...)
	vals, err := cgocall.Call(ctx, s.w, "EntitiesGetLatestValues", func() ([]godcgm.FieldValue_v2, error) {
		return godcgm.EntitiesGetLatestValues(pairs, ids, godcgm.DCGM_FV_FLAG_LIVE_DATA)
	})
	var ce *cgocall.CallError
	switch {
	case errors.As(err, &ce):
		return nil, err
	case err != nil:
		if s.first("fabric-attributes") {
			s.log.Warn("dcgm NVSwitch attributes unavailable; switches without PCI address, links without peers", "err", err)
		}
		return attrs, nil
	}
	attrs.add(vals)
	return attrs, nil
}

// pciBus formats the PCI address held in four fields from first on
// (domain, bus, device, function) as DCGM formats GPUs' bus ids; "" when one
// is missing.
func pciBus(a attributes, r entityRef, first uint16) string {
	var p [4]int64
	for i := range p {
		n, ok := a.integer(r, first+uint16(i))
		if !ok || n < 0 {
			return ""
		}
		p[i] = n
	}
	return fmt.Sprintf("%08X:%02X:%02X.%X", p[0], p[1], p[2], p[3])
}

// normalBus makes PCI bus ids comparable: upper case, domain of 8 digits.
func normalBus(id string) string {
	id = strings.ToUpper(strings.TrimSpace(id))
	if dom, rest, ok := strings.Cut(id, ":"); ok && len(dom) < 8 && strings.Count(id, ":") == 2 {
		id = strings.Repeat("0", 8-len(dom)) + dom + ":" + rest
	}
	return id
}

// linkStates returns the state of each NVLink row of the inventory, from
// the last link status DCGM gave; none once two reads in a row failed.
func (s *Source) linkStates() []source.LinkState {
	if s.fabric == nil || len(s.fabric.links) == 0 || s.fabric.failedReads > 1 {
		return nil
	}
	byRef := make(map[uint64]source.LinkState, len(s.fabric.links))
	for _, l := range s.fabric.links {
		group := uint(groupGPU)
		if l.ParentType == godcgm.FE_SWITCH {
			group = groupSwitch
		}
		byRef[entityRef{groupLink, linkID(group, int(l.Index), l.ParentId)}.key()] = linkState(l.State)
	}
	out := make([]source.LinkState, len(s.inv.inv.Entities))
	for row, e := range s.inv.inv.Entities {
		if e.Kind == source.NVLink {
			out[row] = byRef[s.inv.refs[row].key()]
		}
	}
	return out
}
