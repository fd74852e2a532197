//go:build cgo && linux

package nvml

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// linkInfo is one NVLink of a GPU: its index, the far end's PCI bus id and
// device type (nvmlDeviceGetNvLinkRemotePciInfo,
// nvmlDeviceGetNvLinkRemoteDeviceType), and its row in the inventory.
type linkInfo struct {
	index      int
	remoteBus  string
	remoteType nvml.IntNvLinkDeviceType
	typeKnown  bool
	row        int
	entity     source.Entity
}

// scanLinks lists the NVLinks of a GPU: the link indices below
// NVML_NVLINK_MAX_LINKS whose state NVML reports (nvmlDeviceGetNvLinkState
// answers NOT_SUPPORTED for a GPU without NVLink, INVALID_ARGUMENT for an
// index it does not have, nvml.h). NOT_SUPPORTED is an answer for one
// index: DCGM asks every index and marks only that link not supported
// (DcgmCacheManager::UpdateNvLinkLinkState), so the scan goes on. Any other
// failure (nvml.h in NVIDIA/go-nvml lists ERROR_UNKNOWN "on any unexpected
// error" for this call) says nothing about whether the link exists:
// the index is returned in failed, to be asked again at the next fabric
// read. A lost GPU fails.
func scanLinks(uuid string, dev nvml.Device) (links []linkInfo, failed []linkFailure, err error) {
	for l := range nvml.NVLINK_MAX_LINKS {
		li, ok, f, err := scanLink(uuid, dev, l)
		switch {
		case err != nil:
			return nil, nil, err
		case f != nvml.SUCCESS:
			failed = append(failed, linkFailure{link: l, what: "GetNvLinkState", ret: f})
		case ok:
			links = append(links, li)
		}
	}
	return links, failed, nil
}

// scanLink asks NVML for link l of a GPU: ok says it is a link; failed is
// the state query's return when it failed with a real error (not an answer
// that the link does not exist, see noSuchLink).
func scanLink(uuid string, dev nvml.Device, l int) (li linkInfo, ok bool, failed nvml.Return, err error) {
	_, ret := dev.GetNvLinkState(l)
	switch {
	case ret == nvml.SUCCESS:
	case ret == nvml.ERROR_GPU_IS_LOST:
		return li, false, nvml.SUCCESS, lostError{uuid: uuid}
	case noSuchLink(ret):
		return li, false, nvml.SUCCESS, nil
	default:
		return li, false, ret, nil
	}
	li.index = l
	if pci, ret := dev.GetNvLinkRemotePciInfo(l); ret == nvml.SUCCESS {
		li.remoteBus = busID(pci)
	}
	if t, ret := dev.GetNvLinkRemoteDeviceType(l); ret == nvml.SUCCESS {
		li.remoteType, li.typeKnown = t, true
	}
	return li, true, nvml.SUCCESS, nil
}

// retryFailedLinks asks again the links of a GPU whose state query failed
// at the last scan, and only those: a link that answers joins links (in
// index order; the slice of the previous scan is not changed), one that
// still fails stays in failed.
func retryFailedLinks(uuid string, dev nvml.Device, links []linkInfo, before []linkFailure) ([]linkInfo, []linkFailure, error) {
	links = slices.Clone(links)
	var failed []linkFailure
	for _, b := range before {
		li, ok, f, err := scanLink(uuid, dev, b.link)
		switch {
		case err != nil:
			return nil, nil, err
		case f != nvml.SUCCESS:
			failed = append(failed, linkFailure{link: b.link, what: b.what, ret: f})
		case ok:
			links = append(links, li)
		}
	}
	slices.SortFunc(links, func(a, b linkInfo) int { return a.index - b.index })
	return links, failed, nil
}

// linkEntities gives each link its entity: the GPU's identity, the link
// index, and its peer: a GPU of the inventory (by its PCI bus id) or an
// NVSwitch, which NVML names by its PCI bus id.
func linkEntities(gpus []*gpuInfo) {
	byBus := map[string]int{}
	for _, g := range gpus {
		byBus[strings.ToUpper(g.entity.PCIBusID)] = g.entity.GPU
	}
	for _, g := range gpus {
		for j := range g.links {
			l := &g.links[j]
			e := g.entity
			e.Kind, e.Link, e.MemoryBytes = source.NVLink, l.index, 0
			peer, isGPU := byBus[strings.ToUpper(l.remoteBus)]
			switch {
			case isGPU && l.remoteBus != "":
				e.PeerType, e.Peer = source.PeerGPU, strconv.Itoa(peer)
			case l.typeKnown && l.remoteType == nvml.NVLINK_DEVICE_TYPE_SWITCH && l.remoteBus != "":
				e.PeerType, e.Peer = source.PeerNVSwitch, l.remoteBus
			}
			l.entity = e
		}
	}
}

// linkCounters are the NVLink error counters NVML reads per link
// (nvmlDeviceGetNvLinkErrorCounter), by the DCGM field that counts them.
func linkCounters() []struct {
	id      uint16
	counter nvml.NvLinkErrorCounter
} {
	return []struct {
		id      uint16
		counter nvml.NvLinkErrorCounter
	}{
		{409, nvml.NVLINK_ERROR_DL_CRC_FLIT},
		{419, nvml.NVLINK_ERROR_DL_CRC_DATA},
		{429, nvml.NVLINK_ERROR_DL_REPLAY},
		{439, nvml.NVLINK_ERROR_DL_RECOVERY},
	}
}

// linkStep reads one error counter of a link into column col.
type linkStep struct {
	counter nvml.NvLinkErrorCounter
	col     int
}

// planLinks adds the per-link reads of set to p; colAt gives a field's
// column at a level, or -1.
func planLinks(p *plan, colAt func(uint16, fields.Level) int, given map[uint16]bool) {
	for _, c := range linkCounters() {
		if col := colAt(c.id, fields.LevelNVLink); col >= 0 {
			p.link = append(p.link, linkStep{counter: c.counter, col: col})
			given[c.id] = true
		}
	}
}

// linkFailure is a link call that failed for one link of a GPU (not a
// "no such link" answer, see noSuchLink); its value reads Blank.
type linkFailure struct {
	link int
	what string
	ret  nvml.Return
}

// noSuchLink reports whether a link call's answer means the link (or the
// counter) does not exist on this GPU rather than a failed read: nvml.h
// documents NOT_SUPPORTED for nvmlDeviceGetNvLinkState and
// nvmlDeviceGetNvLinkErrorCounter "if the device doesn't support this
// feature" and INVALID_ARGUMENT "if device, link, or counter is invalid"
// (a link index beyond the device's links).
func noSuchLink(ret nvml.Return) bool {
	return ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT
}

// readLinks reads the state and error counters of a GPU's links; it
// returns false if the GPU is lost. Calls that failed are in
// res.linkFailures, answers that say the link or counter does not exist
// in res.failures.
func (res *gpuResult) readLinks(g *gpuInfo, p *plan, sample *source.Sample) bool {
	n := len(sample.Fields)
	for _, l := range g.links {
		st, ret := g.dev.GetNvLinkState(l.index)
		switch ret {
		case nvml.SUCCESS:
			// NVML_FEATURE_ENABLED: the link is active.
			state := source.LinkDown
			if st == nvml.FEATURE_ENABLED {
				state = source.LinkUp
			}
			if l.row < len(sample.LinkStates) {
				sample.LinkStates[l.row] = state
			}
		case nvml.ERROR_GPU_IS_LOST:
			return false
		default:
			res.linkFailed(l.index, "GetNvLinkState", ret)
		}
		row := sample.Values[l.row*n : (l.row+1)*n]
		for _, s := range p.link {
			v, ret := g.dev.GetNvLinkErrorCounter(l.index, s.counter)
			switch ret {
			case nvml.SUCCESS:
				row[s.col] = source.IntValue(int64(v))
			case nvml.ERROR_GPU_IS_LOST:
				return false
			default:
				res.linkFailed(l.index, "GetNvLinkErrorCounter", ret)
			}
		}
	}
	return true
}

// linkFailed records a link call that did not succeed: a failure of the
// fabric read, or a "no such link" answer.
func (res *gpuResult) linkFailed(link int, what string, ret nvml.Return) {
	if noSuchLink(ret) {
		res.failures = append(res.failures, failure{what, ret})
		return
	}
	res.linkFailures = append(res.linkFailures, linkFailure{link, what, ret})
}

// fabricManagerStatus reads the fabric manager's state for a GPU
// (nvmlDeviceGetGpuFabricInfo) as DCGM reports it
// (DcgmCacheManager::GetFMStatusFromStruct): the state as a
// dcgmFabricManagerStatus_t, COMPLETED split into success (3) and failure
// (4); the error is 0 on success and, on failure, NVML's return code
// (DCGM translates it to its own code), Blank otherwise.
func fabricManagerStatus(d nvml.Device, _ features, out []source.Value) nvml.Return {
	info, ret := d.GetGpuFabricInfo()
	if ret != nvml.SUCCESS {
		return ret
	}
	switch info.State {
	case nvml.GPU_FABRIC_STATE_NOT_SUPPORTED, nvml.GPU_FABRIC_STATE_NOT_STARTED, nvml.GPU_FABRIC_STATE_IN_PROGRESS:
		out[0] = source.IntValue(int64(info.State)) // the same numbers as dcgmFabricManagerStatus_t
	case nvml.GPU_FABRIC_STATE_COMPLETED:
		if nvml.Return(info.Status) == nvml.SUCCESS {
			out[0], out[1] = source.IntValue(3), source.IntValue(0)
		} else {
			out[0], out[1] = source.IntValue(4), source.IntValue(int64(info.Status))
		}
	default:
		out[0] = source.IntValue(5) // DcgmFMStatusUnrecognized
	}
	return nvml.SUCCESS
}

// hasLinks reports whether some GPU has NVLinks.
func hasLinks(gpus []*gpuInfo) bool {
	for _, g := range gpus {
		if len(g.links) > 0 {
			return true
		}
	}
	return false
}

// fabricRead is the last read of the fabric: the values of the fabric
// columns of every row and the link states, on the inventory they were
// read on. Between two reads, samples repeat it, as the DCGM source
// repeats its link and switch reads and DCGM updates fabric watches once
// per --collect.nvlink-interval: 8 GPUs of 18 links cost about 720 NVML
// calls per read.
type fabricRead struct {
	inv    *source.Inventory // nil: nothing read yet
	at     time.Time
	values []source.Value // row-major, by row then fabric column
	states []source.LinkState
}

// due reports whether the fabric must be read now: nothing read yet, a new
// inventory (new rows), or interval passed since the last read.
func (f *fabricRead) due(inv *source.Inventory, now time.Time, interval time.Duration) bool {
	return f.inv == nil || f.inv != inv || now.Sub(f.at) >= interval
}

// keep remembers what a fabric read put into sample.
func (f *fabricRead) keep(sample *source.Sample, cols []int) {
	f.inv, f.at = sample.Inventory, sample.Time
	f.values = f.values[:0]
	for r := range sample.Inventory.Entities {
		for _, c := range cols {
			f.values = append(f.values, sample.At(r, c))
		}
	}
	f.states = append(f.states[:0], sample.LinkStates...)
}

// repeat puts the last fabric read into sample, which is on the same
// inventory (due says so).
func (f *fabricRead) repeat(sample *source.Sample, cols []int) {
	i := 0
	for r := range sample.Inventory.Entities {
		for _, c := range cols {
			sample.Set(r, c, f.values[i])
			i++
		}
	}
	if sample.LinkStates != nil {
		copy(sample.LinkStates, f.states)
	}
}

// linkReadsFailed logs the failed link calls of one GPU's fabric read, at
// most one line a minute per call (logthrottle), naming the GPU and link.
func (s *Source) linkReadsFailed(g *gpuInfo, fs []linkFailure) {
	for _, f := range fs {
		s.logs.Warn("nvml/nvlink-"+f.what, "nvml NVLink read failed; the link's value is not reported until a read works",
			"gpu", g.index, "uuid", g.entity.UUID, "link", f.link, "call", f.what, "err", f.ret.Error(), "failed_calls", len(fs))
	}
}

// linkScansFailed logs the links of a GPU whose state query failed when
// the links were listed, at most one line a minute per link (logthrottle):
// they are not in the inventory until the query works.
func (s *Source) linkScansFailed(g *gpuInfo) {
	for _, f := range g.failedLinks {
		s.logs.Warn("nvml/nvlink-scan-"+strconv.Itoa(g.index)+"-"+strconv.Itoa(f.link), "nvml NVLink state query failed; the link is left out of the inventory until it answers",
			"gpu", g.index, "uuid", g.entity.UUID, "link", f.link, "call", f.what, "err", f.ret.Error())
	}
}

// fabricRead counts a fabric read in which some link call failed once in
// sample.FabricErrors (gpu_exporter_collection_errors_total{stage="fabric"}),
// as the DCGM source counts its one failed link status call per fabric
// read: the count grows by one per --collect.nvlink-interval while links
// fail, however many links or GPUs fail. Reads in between repeat the
// fabric read and count nothing.
func (s *Source) fabricRead(sample *source.Sample, linksFailed bool) {
	switch {
	case linksFailed:
		sample.FabricErrors++
		s.nvlinkFailing = true
	case s.nvlinkFailing:
		s.nvlinkFailing = false
		s.log.Info("nvml NVLink reads work again")
	}
}
