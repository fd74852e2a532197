//go:build cgo && linux

package nvml

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// gpuInfo is one GPU of the inventory: its handle, static facts and MIG
// instances. It is never changed once a scan built it, so that a job that
// outlived its caller's deadline can still read it safely.
type gpuInfo struct {
	index  int
	dev    nvml.Device
	entity source.Entity
	// row is the GPU's row in the inventory and its samples.
	row int
	// migs are the GPU instances, by instance id; devs every MIG device
	// (compute instance) of the GPU, by GPU instance then compute instance
	// id, kept so that the next scan need not read their facts again.
	migs []migInfo
	devs []migDevice
	// links are the GPU's NVLinks, scanned once per GPU.
	links []linkInfo
	// failedLinks are the link indices whose nvmlDeviceGetNvLinkState
	// failed with a real error at the last attempt (see scanLinks): not in
	// links, asked again at the next fabric read.
	failedLinks []linkFailure
}

// migInfo is one MIG GPU instance; dev is the MIG device of its first
// compute instance, on which instance-level values are read.
type migInfo struct {
	entity source.Entity
	dev    nvml.Device
	row    int
}

// migDevice is one MIG device (a compute instance) as NVML lists it.
type migDevice struct {
	dev    nvml.Device
	uuid   string
	gi, ci int
	// profile is the GPU instance's profile ("3g.71gb"), ciProfile the
	// device's own ("1c.3g.71gb", or the GPU instance's when the compute
	// instance spans it).
	profile, ciProfile string
	memBytes           uint64
	// placement is the GPU instance's placement start on its GPU, valid
	// when placementKnown (see gpuInstancePlacement).
	placement      int
	placementKnown bool
}

// lostReport is a GPU whose call returned ERROR_GPU_IS_LOST during a scan;
// uuid is empty when it was never seen before.
type lostReport struct {
	index int
	uuid  string
}

// problem is a call that failed during a scan, logged once.
type problem struct {
	index int
	what  string
	ret   nvml.Return
}

type scanResult struct {
	gpus     []*gpuInfo
	entities []source.Entity
	lost     []lostReport
	missing  []int // selected indices NVML does not list
	problems []problem
	// denied are the GPUs whose handle NVML refused with NO_PERMISSION
	// ("the user doesn't have permission to talk to this device", nvml.h,
	// nvmlDeviceGetHandleByIndex_v2, in NVIDIA/go-nvml): a container
	// given only some of the node's GPUs' device nodes. A state of the
	// deployment, not a failure; process accounting leaves them out alike.
	denied []int
}

// rescan lists the GPUs and MIG devices and installs the result;
// retryLinks asks again the links whose state query failed before (a
// fabric read is due).
func (s *Source) rescan(ctx context.Context, retryLinks bool) error {
	prev := s.gpus
	// The job gets its own copy: Read may mark a GPU dead while a scan
	// that timed out still runs.
	var dead map[string]bool
	if len(s.dead) > 0 {
		dead = maps.Clone(s.dead)
	}
	res, err := cgocall.Call(ctx, s.w, "scan", func() (scanResult, error) { return s.scan(prev, dead, retryLinks) })
	if err != nil {
		return err
	}
	if !slices.Equal(res.denied, s.denied) {
		s.denied = res.denied
		if len(res.denied) > 0 {
			s.log.Info("GPUs left out: this process has no permission to talk to them (NVML NO_PERMISSION)", "gpus", fmt.Sprint(res.denied))
		} else {
			s.log.Info("every GPU may be talked to again")
		}
	}
	for _, p := range res.problems {
		if s.first("scan-" + strconv.Itoa(p.index) + "-" + p.what + "-" + strconv.Itoa(int(p.ret))) {
			s.log.Warn("nvml GPU query failed", "gpu", p.index, "call", p.what, "err", p.ret.Error())
		}
	}
	for _, i := range res.missing {
		if s.first("missing-gpu-" + strconv.Itoa(i)) {
			s.log.Warn("selected GPU not present", "gpu", i)
		}
	}
	for _, l := range res.lost {
		if l.uuid != "" {
			s.dead[l.uuid] = true
		} else if s.first("lost-unknown-" + strconv.Itoa(l.index)) {
			s.log.Warn("gpu lost before it was seen", "gpu", l.index)
		}
	}
	return s.install(ctx, res.gpus, res.entities)
}

// scan lists the selected GPUs; it runs on the worker. prev is only read;
// dead is the job's own copy.
func (s *Source) scan(prev []*gpuInfo, dead map[string]bool, retryLinks bool) (scanResult, error) {
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return scanResult{}, fmt.Errorf("DeviceGetCount: %w", ret)
	}
	var res scanResult
	var gpus []*gpuInfo
	for i := range n {
		if len(s.cfg.GPUs) > 0 && !slices.Contains(s.cfg.GPUs, i) {
			continue
		}
		var before *gpuInfo
		for _, g := range prev {
			if g.index == i {
				before = g
			}
		}
		g, err := s.scanGPU(i, before, dead, retryLinks)
		var lost lostError
		switch {
		case errors.As(err, &lost):
			uuid := lost.uuid
			if uuid == "" && before != nil {
				uuid = before.entity.UUID
			}
			res.lost = append(res.lost, lostReport{index: i, uuid: uuid})
		case err != nil:
			var p problem
			switch {
			case errors.As(err, &p) && p.what == "DeviceGetHandleByIndex" && p.ret == nvml.ERROR_NO_PERMISSION:
				res.denied = append(res.denied, i)
			case errors.As(err, &p):
				res.problems = append(res.problems, p)
			}
		case g != nil:
			gpus = append(gpus, g)
		}
	}
	for _, i := range s.cfg.GPUs {
		if i >= n {
			res.missing = append(res.missing, i)
		}
	}
	res.gpus, res.entities = assemble(gpus)
	return res, nil
}

// lostError is ERROR_GPU_IS_LOST from a GPU's call; uuid is known when the
// GPU answered GetUUID first.
type lostError struct{ uuid string }

func (lostError) Error() string { return "gpu is lost" }

func (p problem) Error() string { return p.what + ": " + p.ret.Error() }

// check turns a failed return into lostError or a problem.
func check(index int, uuid, what string, ret nvml.Return) error {
	switch ret {
	case nvml.SUCCESS:
		return nil
	case nvml.ERROR_GPU_IS_LOST:
		return lostError{uuid: uuid}
	default:
		return problem{index: index, what: what, ret: ret}
	}
}

// scanGPU reads one GPU's identity and MIG layout; static facts come from
// before when it is the same GPU, except the links whose state query
// failed, asked again when retryLinks is set. It returns nil, nil for a GPU
// marked dead.
func (s *Source) scanGPU(i int, before *gpuInfo, dead map[string]bool, retryLinks bool) (*gpuInfo, error) {
	dev, ret := s.lib.DeviceGetHandleByIndex(i)
	if err := check(i, "", "DeviceGetHandleByIndex", ret); err != nil {
		return nil, err
	}
	uuid, ret := dev.GetUUID()
	if err := check(i, "", "GetUUID", ret); err != nil {
		return nil, err
	}
	uuid = validText(uuid)
	if dead[uuid] {
		return nil, nil
	}
	g := &gpuInfo{index: i, dev: dev}
	if before != nil && before.entity.UUID == uuid {
		g.entity = before.entity
		g.links, g.failedLinks = before.links, before.failedLinks
		if retryLinks && len(before.failedLinks) > 0 {
			var err error
			if g.links, g.failedLinks, err = retryFailedLinks(uuid, dev, before.links, before.failedLinks); err != nil {
				return nil, err
			}
		}
	} else {
		e, err := gpuEntity(i, uuid, dev)
		if err != nil {
			return nil, err
		}
		g.entity = e
		if g.links, g.failedLinks, err = scanLinks(uuid, dev); err != nil {
			return nil, err
		}
	}
	mode, _, ret := dev.GetMigMode()
	switch ret {
	case nvml.SUCCESS:
	case nvml.ERROR_GPU_IS_LOST:
		return nil, lostError{uuid: uuid}
	default:
		// Not MIG capable (NOT_SUPPORTED) or not telling: no instances.
		return g, nil
	}
	if mode != nvml.DEVICE_MIG_ENABLE {
		return g, nil
	}
	var prevDevs []migDevice
	if before != nil && before.entity.UUID == uuid {
		prevDevs = before.devs
	}
	devs, err := scanMIG(i, uuid, dev, prevDevs)
	if err != nil {
		return nil, err
	}
	g.devs = devs
	g.migs = instances(g.entity, devs)
	return g, nil
}

// gpuEntity reads the static facts of a GPU. Facts NVML does not give stay
// empty; a lost GPU fails.
func gpuEntity(i int, uuid string, dev nvml.Device) (source.Entity, error) {
	e := source.Entity{Kind: source.GPU, GPU: i, UUID: uuid}
	name, ret := dev.GetName()
	if ret == nvml.ERROR_GPU_IS_LOST {
		return e, lostError{uuid: uuid}
	}
	e.Model = validText(name)
	pci, ret := dev.GetPciInfo()
	if ret == nvml.ERROR_GPU_IS_LOST {
		return e, lostError{uuid: uuid}
	}
	if ret == nvml.SUCCESS {
		e.PCIBusID = busID(pci)
	}
	mem, ret := dev.GetMemoryInfo()
	if ret == nvml.ERROR_GPU_IS_LOST {
		return e, lostError{uuid: uuid}
	}
	if ret == nvml.SUCCESS {
		e.MemoryBytes = mem.Total >> 20 << 20 // whole MiB, as DCGM reports it
	}
	// The device node is nvidia<minor>; the index is the usual minor when
	// the driver does not say.
	minor, ret := dev.GetMinorNumber()
	if ret == nvml.ERROR_GPU_IS_LOST {
		return e, lostError{uuid: uuid}
	}
	if ret != nvml.SUCCESS {
		minor = i
	}
	e.Device = "nvidia" + strconv.Itoa(minor)
	return e, nil
}

// busID is the PCI bus id NVML reports ("00000000:3B:00.0").
func busID(p nvml.PciInfo) string {
	if id := cString(p.BusId[:]); id != "" {
		return id
	}
	return cString(p.BusIdLegacy[:])
}

func cString(b []int8) string {
	buf := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		buf = append(buf, byte(c))
	}
	return validText(string(buf))
}

// assemble copies GPUs into inventory order, GPUs first, then the MIG
// instances of each GPU, and numbers their rows.
func assemble(in []*gpuInfo) ([]*gpuInfo, []source.Entity) {
	out := make([]*gpuInfo, len(in))
	var entities []source.Entity
	for i, g := range in {
		c := *g
		c.row = i
		c.migs = slices.Clone(g.migs)
		out[i] = &c
		entities = append(entities, g.entity)
	}
	for _, g := range out {
		for j := range g.migs {
			g.migs[j].row = len(entities)
			entities = append(entities, g.migs[j].entity)
		}
	}
	// Then the NVLinks of each GPU.
	for _, g := range out {
		g.links = slices.Clone(g.links)
	}
	linkEntities(out)
	for _, g := range out {
		for j := range g.links {
			g.links[j].row = len(entities)
			entities = append(entities, g.links[j].entity)
		}
	}
	return out, entities
}

// install makes a scanned layout current. The *source.Inventory stays the
// same pointer when the entities did not change. GPUs that left are
// recorded as lost and their event sets freed; GPUs that came back are
// removed from the lost list; new GPUs get event sets once Watch was called.
func (s *Source) install(ctx context.Context, gpus []*gpuInfo, entities []source.Entity) error {
	s.gpus = gpus
	prev := s.inv
	devs := migDevices(gpus)
	if prev != nil && prev.DriverVersion == s.driver && slices.Equal(prev.Entities, entities) && slices.Equal(prev.MIGDevices, devs) {
		return s.registerEvents(ctx)
	}
	s.inv = &source.Inventory{DriverVersion: s.driver, Entities: entities, MIGDevices: devs}
	var before []source.Entity
	if prev != nil {
		before = prev.Entities
	}
	present := s.lost.Update(before, entities, s.now(), s.log)
	if prev != nil {
		s.log.Info("nvml inventory changed", "gpus", s.inv.GPUs(), "entities", len(entities))
	}
	var gone []nvml.EventSet
	for u, x := range s.xid {
		if !present[u] {
			if x.set != nil {
				gone = append(gone, x.set)
			}
			delete(s.xid, u)
		}
	}
	if len(gone) > 0 {
		// Best effort: a set that cannot be freed now goes with the session.
		_, _ = cgocall.Call(ctx, s.w, "EventSetFree", func() (struct{}, error) {
			for _, set := range gone {
				_ = set.Free()
			}
			return struct{}{}, nil
		})
	}
	return s.registerEvents(ctx)
}

// dropLost removes GPUs that reported ERROR_GPU_IS_LOST during a Read from
// the inventory and returns the sample rebuilt on the new inventory.
func (s *Source) dropLost(ctx context.Context, old *source.Sample, lost []*gpuInfo) *source.Sample {
	var keep []*gpuInfo
	for _, g := range s.gpus {
		if slices.Contains(lost, g) {
			s.dead[g.entity.UUID] = true
			continue
		}
		keep = append(keep, g)
	}
	gpus, entities := assemble(keep)
	if err := s.install(ctx, gpus, entities); err != nil {
		// Only event registration can fail here; the next Read retries it.
		s.log.Debug("nvml event registration failed", "err", err)
	}
	sample := source.NewSample(old.Time, s.inv, old.Fields)
	rowOf := make(map[string]int, len(old.Inventory.Entities))
	for i := range old.Inventory.Entities {
		rowOf[old.Inventory.Entities[i].Key()] = i
	}
	n := len(old.Fields)
	if old.LinkStates != nil {
		sample.LinkStates = make([]source.LinkState, len(s.inv.Entities))
	}
	for i := range s.inv.Entities {
		if r, ok := rowOf[s.inv.Entities[i].Key()]; ok {
			copy(sample.Values[i*n:(i+1)*n], old.Values[r*n:(r+1)*n])
			if old.LinkStates != nil {
				sample.LinkStates[i] = old.LinkState(r)
			}
		}
	}
	for _, x := range old.XIDs {
		key := old.Inventory.Entities[x.Entity].Key()
		if i := slices.IndexFunc(s.inv.Entities, func(e source.Entity) bool { return e.Key() == key }); i >= 0 {
			x.Entity = i
			sample.XIDs = append(sample.XIDs, x)
		}
	}
	return sample
}
