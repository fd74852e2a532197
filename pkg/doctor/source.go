package doctor

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// checkSource opens the source as the exporter would and reads its
// inventory. It returns the open source (nil on failure), its inventory and
// the simulated kubelet's socket.
func checkSource(ctx context.Context, cfg Config) (source.Source, *source.Inventory, string, Result) {
	res := Result{Check: CheckSource}
	res.Details = libraryFindings(cfg)
	for _, e := range cfg.Traits.Checkup.Endpoints {
		res.Details = append(res.Details, endpointFinding(ctx, cfg, e))
	}
	cctx, cancel := withTimeout(ctx, cfg)
	defer cancel()
	src, socket, err := cfg.Open(cctx)
	if err != nil {
		res.Status, res.Found = Fail, err.Error() // the opener names the flag
		res.Fix = sourceFix(cfg)
		return nil, nil, "", res
	}
	inv, err := src.Inventory(cctx)
	if err != nil {
		res.Status, res.Found = Fail, fmt.Sprintf("--source=%s (%s): inventory: %v", cfg.Source, src.Name(), err)
		res.Fix = sourceFix(cfg)
		return nil, nil, socket, res
	}
	res.Found = fmt.Sprintf("--source=%s uses %s%s: %s", cfg.Source, src.Name(), why(cfg, src.Name()), describeInventory(inv))
	res.Status = OK
	if inv.GPUs() == 0 {
		res.Status = Warn
		if !cfg.Traits.MayLackGPUs {
			res.Status = Fail // the exporter refuses to start without a GPU
		}
		res.Fix = "no GPU is visible: check that the driver sees GPUs (nvidia-smi) and that the container runs with the NVIDIA runtime and NVIDIA_VISIBLE_DEVICES=all"
	}
	res.Details = append(res.Details, entityLines(inv)...)
	return src, inv, socket, res
}

// why says why --source picked the backend.
func why(cfg Config, picked string) string {
	if w := cfg.Traits.Checkup.Why; w != nil {
		return w(picked)
	}
	return ""
}

// libraryFindings says where each library the source loads was found.
func libraryFindings(cfg Config) []string {
	var out []string
	for _, lib := range cfg.Traits.Checkup.Libraries {
		if p, err := cfg.Host.FindLibrary(lib); err == nil {
			out = append(out, lib+": "+p)
		} else {
			out = append(out, lib+": not found")
		}
	}
	return out
}

// endpointFinding dials a service the source needs once.
func endpointFinding(ctx context.Context, cfg Config, e source.Endpoint) string {
	cctx, cancel := withTimeout(ctx, cfg)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(cctx, e.Network, e.Address)
	if err != nil {
		return fmt.Sprintf("%s %s %s: not reachable: %v", e.What, e.Network, e.Address, err)
	}
	_ = conn.Close()
	return fmt.Sprintf("%s %s %s: reachable", e.What, e.Network, e.Address)
}

// sourceFix says what to do when the source does not open or answer.
func sourceFix(cfg Config) string {
	if f := cfg.Traits.Checkup.Fix; f != nil {
		return f(func(lib string) bool { _, err := cfg.Host.FindLibrary(lib); return err != nil })
	}
	return ""
}

// describeInventory summarises GPUs by model.
func describeInventory(inv *source.Inventory) string {
	models := map[string]int{}
	var order []string
	mig := 0
	for _, e := range inv.Entities {
		switch e.Kind {
		case source.GPU:
			if models[e.Model] == 0 {
				order = append(order, e.Model)
			}
			models[e.Model]++
		case source.GPUInstance:
			mig++
		}
	}
	slices.Sort(order)
	var parts []string
	for _, m := range order {
		parts = append(parts, strconv.Itoa(models[m])+"× "+m)
	}
	s := fmt.Sprintf("%d GPUs", inv.GPUs())
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if mig > 0 {
		s += fmt.Sprintf(", %d MIG instances", mig)
	}
	if inv.DriverVersion != "" {
		s += ", driver " + inv.DriverVersion
	}
	return s
}

// entityLines names each GPU and MIG instance.
func entityLines(inv *source.Inventory) []string {
	var out []string
	for i := range inv.Entities {
		if e := &inv.Entities[i]; e.Kind == source.GPU || e.Kind == source.GPUInstance {
			out = append(out, entityName(e))
		}
	}
	return out
}

func entityName(e *source.Entity) string {
	if e.Kind == source.GPUInstance {
		return fmt.Sprintf("gpu %d instance %d (%s, %s)", e.GPU, e.GPUInstance, e.MIGProfile, e.MIGUUID)
	}
	return fmt.Sprintf("gpu %d (%s, %s, %s)", e.GPU, e.Model, e.UUID, e.Device)
}

// checkFields watches the field set and reads one sample: per field, how
// many entities returned a value or a blank; per entity, the same.
func checkFields(ctx context.Context, cfg Config, src source.Source, set []fields.Field) Result {
	res := Result{Check: CheckFields}
	cctx, cancel := withTimeout(ctx, cfg)
	defer cancel()
	if err := src.Watch(cctx, set); err != nil {
		res.Status, res.Found = Fail, fmt.Sprintf("watching %d fields: %v", len(set), err)
		res.Fix = "list fields this GPU supports in --collect.counters (profiling fields need DCGM and a GPU with DCP support)"
		return res
	}
	s, reads, err := readSettled(cctx, src, cfg.Settle)
	if err != nil {
		res.Status, res.Found = Fail, fmt.Sprintf("reading %d fields: %v", len(set), err)
		res.Fix = sourceFix(cfg)
		return res
	}
	if reads > 1 {
		res.Details = append(res.Details, fmt.Sprintf("read %d times over up to %s: some fields had no first sample yet", reads, cfg.Settle))
	}
	counts := make([]FieldCount, len(s.Fields))
	for f := range s.Fields {
		counts[f].Field = s.Fields[f].DCGMName
	}
	total := 0
	for e := range s.Inventory.Entities {
		ent := &s.Inventory.Entities[e]
		if ent.Kind != source.GPU && ent.Kind != source.GPUInstance {
			continue
		}
		vals, blanks := 0, 0
		for f := range s.Fields {
			if !s.Fields[f].Levels.Has(ent.Kind.Level()) {
				continue
			}
			if s.At(e, f).Kind == source.Blank {
				blanks++
				counts[f].Blanks++
			} else {
				vals++
				counts[f].Values++
			}
		}
		total += vals
		res.Details = append(res.Details, fmt.Sprintf("%s: %d values, %d blank", entityName(ent), vals, blanks))
	}
	res.Fields = counts
	var allBlank, profiling, noFabric []string
	fabric := hasFabric(s.Inventory)
	for f, c := range counts {
		if c.Values == 0 && c.Blanks > 0 && s.Fields[f].Fabric && !fabric {
			noFabric = append(noFabric, c.Field) // expected without NVLink
			continue
		}
		if c.Values == 0 && c.Blanks > 0 {
			allBlank = append(allBlank, c.Field)
			if s.Fields[f].Profiling {
				profiling = append(profiling, c.Field)
			}
		}
	}
	if len(noFabric) > 0 {
		res.Details = append(res.Details, fmt.Sprintf("no NVLink fabric on this node: %d fabric fields blank, as expected", len(noFabric)))
	}
	switch {
	case total == 0 && len(s.Fields) > 0 && s.Inventory.GPUs() > 0:
		res.Status, res.Found = Fail, fmt.Sprintf("no value for any of %d fields on any GPU", len(s.Fields))
		res.Fix = "the source answers but returns blanks only: check the driver with nvidia-smi; with DCGM, a first read right after the watch may be empty: run doctor again"
	case len(allBlank) > 0:
		res.Status = Warn
		res.Found = fmt.Sprintf("%d of %d fields have values; blank (not supported, not permitted or not sampled yet) on every entity: %s",
			len(s.Fields)-len(allBlank), len(s.Fields), strings.Join(allBlank, ", "))
		res.Fix = "remove them from --collect.counters if the GPU does not support them"
		if len(profiling) > 0 {
			res.Fix += "; profiling fields (" + strings.Join(profiling, ", ") + ") need DCGM, a GPU with DCP support and CAP_SYS_ADMIN (see the profiling check)"
		}
	default:
		res.Status = OK
		res.Found = fmt.Sprintf("all %d fields return values", len(s.Fields)-len(noFabric))
	}
	if line := migWithoutActivity(s); line != "" {
		res.Details = append(res.Details, line)
		if res.Status == OK {
			res.Status, res.Found, res.Fix = Warn, line, migActivityFix
		} else {
			res.Fix += "; " + migActivityFix
		}
	}
	return res
}

// migActivityField is the only activity a MIG instance reports: DCGM's
// DCGM_FI_DEV_GPU_UTIL is a whole-GPU field, not supported in MIG mode;
// NVIDIA points to the profiling field DCGM_FI_PROF_GR_ENGINE_ACTIVE
// instead (NVIDIA/dcgm-exporter#216, #430; NVIDIA/DCGM#80).
const migActivityField = "gpu_graphics_engine_active_ratio"

// migActivityFix is what gives MIG instances an activity series.
const migActivityFix = "MIG activity needs the profiling field DCGM_FI_PROF_GR_ENGINE_ACTIVE: in embedded mode add CAP_SYS_ADMIN (chart: dcgm.profiling=true), or read a hostengine that holds it (--dcgm.remote-address; chart: dcgm.mode=remote); the GPUMIGActivityMissing alert fires until then"

// migWithoutActivity names the MIG instances that read no
// gpu_graphics_engine_active_ratio (not in the set, or blank): nothing
// measures their activity, so idle-instance alerts, the MIG panels and
// right-sizing are blind to them. Empty when there are none.
func migWithoutActivity(s *source.Sample) string {
	f := slices.IndexFunc(s.Fields, func(f fields.Field) bool { return f.Name == migActivityField })
	var blind []string
	instances := 0
	for e := range s.Inventory.Entities {
		ent := &s.Inventory.Entities[e]
		if ent.Kind != source.GPUInstance {
			continue
		}
		instances++
		if f < 0 || s.At(e, f).Kind == source.Blank {
			blind = append(blind, entityName(ent))
		}
	}
	if len(blind) == 0 {
		return ""
	}
	why := "blank"
	if f < 0 {
		why = "not in the field set"
	}
	return fmt.Sprintf("MIG instances without activity: %d of %d read no %s (%s), and DCGM reports no utilization for MIG instances: %s",
		len(blind), instances, migActivityField, why, strings.Join(blind, "; "))
}

// readSettled reads a sample; while some field is blank on every entity it
// reads again, until settle has passed: "the first update of the field will
// not occur until the next field update cycle" (dcgm_agent.h,
// dcgmWatchFields, in go-dcgm's bundled headers), so a read right after the
// watch may precede the first sample.
func readSettled(ctx context.Context, src source.Source, settle time.Duration) (*source.Sample, int, error) {
	deadline := time.Now().Add(settle)
	for reads := 1; ; reads++ {
		s, err := src.Read(ctx)
		if err != nil {
			return nil, reads, err
		}
		if !anyBlankEverywhere(s) || !time.Now().Before(deadline) {
			return s, reads, nil
		}
		select {
		case <-ctx.Done():
			return s, reads, nil
		case <-time.After(min(settleStep, time.Until(deadline))):
		}
	}
}

// settleStep is the time between two reads of readSettled.
const settleStep = 250 * time.Millisecond

// anyBlankEverywhere reports whether some field that a GPU or MIG instance
// of the sample can carry is blank on all of them.
func anyBlankEverywhere(s *source.Sample) bool {
	fabric := hasFabric(s.Inventory)
	for f := range s.Fields {
		if s.Fields[f].Fabric && !fabric {
			continue // blank without NVLink, however long one waits
		}
		carried, valued := false, false
		for e := range s.Inventory.Entities {
			ent := &s.Inventory.Entities[e]
			if (ent.Kind != source.GPU && ent.Kind != source.GPUInstance) || !s.Fields[f].Levels.Has(ent.Kind.Level()) {
				continue
			}
			carried = true
			if s.At(e, f).Kind != source.Blank {
				valued = true
				break
			}
		}
		if carried && !valued {
			return true
		}
	}
	return false
}

// hasFabric reports whether the inventory holds NVLinks or NVSwitches.
func hasFabric(inv *source.Inventory) bool {
	for i := range inv.Entities {
		if k := inv.Entities[i].Kind; k == source.NVLink || k == source.NVSwitch {
			return true
		}
	}
	return false
}
