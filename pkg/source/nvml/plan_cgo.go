//go:build cgo && linux

package nvml

import (
	"encoding/binary"
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// xidField is DCGM_FI_DEV_XID_ERRORS, fed from the XID event sets.
const xidField = 230

// readFunc makes one NVML call on a device and writes its values, in DCGM's
// units, to out (one per id of its reader). Values NVML does not give stay
// Blank. The return is the call's.
type readFunc func(d nvml.Device, has features, out []source.Value) nvml.Return

// reader is one NVML call and the DCGM fields it gives.
type reader struct {
	what   string
	ids    []uint16
	levels fields.Level
	read   readFunc
}

// readerTable lists the NVML calls behind catalog fields, with the
// conversion DCGM applies to each (DcgmCacheManager), so that both sources
// give the same raw values.
func readerTable() []reader {
	const gpu, both = fields.LevelGPU, fields.LevelGPU | fields.LevelGPUInstance
	return []reader{
		{"GetClockInfo(SM)", []uint16{100}, gpu, func(d nvml.Device, _ features, out []source.Value) nvml.Return {
			v, ret := d.GetClockInfo(nvml.CLOCK_SM) // MHz
			out[0] = source.IntValue(int64(v))
			return ret
		}},
		{"GetClockInfo(MEM)", []uint16{101}, gpu, func(d nvml.Device, _ features, out []source.Value) nvml.Return {
			v, ret := d.GetClockInfo(nvml.CLOCK_MEM) // MHz
			out[0] = source.IntValue(int64(v))
			return ret
		}},
		{"GetCurrentClocksEventReasons", []uint16{112}, gpu, func(d nvml.Device, has features, out []source.Value) nvml.Return {
			// NVML's nvmlClocksEventReason* bits are DCGM's
			// DCGM_CLOCKS_EVENT_REASON_* bits (a test checks them).
			var v uint64
			var ret nvml.Return
			if has.clocksEventReasons {
				v, ret = d.GetCurrentClocksEventReasons()
			} else {
				v, ret = d.GetCurrentClocksThrottleReasons()
			}
			out[0] = source.IntValue(int64(v))
			return ret
		}},
		{"GetTemperature(GPU)", []uint16{150}, gpu, func(d nvml.Device, _ features, out []source.Value) nvml.Return {
			v, ret := d.GetTemperature(nvml.TEMPERATURE_GPU) // °C
			out[0] = source.IntValue(int64(v))
			return ret
		}},
		{"GetTemperatureThreshold(SLOWDOWN)", []uint16{158}, gpu, func(d nvml.Device, _ features, out []source.Value) nvml.Return {
			v, ret := d.GetTemperatureThreshold(nvml.TEMPERATURE_THRESHOLD_SLOWDOWN)
			out[0] = source.IntValue(int64(v))
			return ret
		}},
		{"GetTemperatureThreshold(SHUTDOWN)", []uint16{159}, gpu, func(d nvml.Device, _ features, out []source.Value) nvml.Return {
			v, ret := d.GetTemperatureThreshold(nvml.TEMPERATURE_THRESHOLD_SHUTDOWN)
			out[0] = source.IntValue(int64(v))
			return ret
		}},
		{"GetPowerUsage", []uint16{155}, gpu, func(d nvml.Device, _ features, out []source.Value) nvml.Return {
			mW, ret := d.GetPowerUsage()
			out[0] = source.FloatValue(float64(mW) / 1000) // W
			return ret
		}},
		{"GetPowerManagementLimit", []uint16{160}, gpu, func(d nvml.Device, _ features, out []source.Value) nvml.Return {
			mW, ret := d.GetPowerManagementLimit()
			out[0] = source.FloatValue(float64(mW / 1000)) // whole W: DCGM divides integers
			return ret
		}},
		{"GetEnforcedPowerLimit", []uint16{164}, gpu, func(d nvml.Device, _ features, out []source.Value) nvml.Return {
			mW, ret := d.GetEnforcedPowerLimit()
			out[0] = source.FloatValue(float64(mW / 1000)) // whole W, as DCGM
			return ret
		}},
		{"GetPcieReplayCounter", []uint16{202}, gpu, func(d nvml.Device, _ features, out []source.Value) nvml.Return {
			v, ret := d.GetPcieReplayCounter()
			out[0] = source.IntValue(int64(v))
			return ret
		}},
		{"GetUtilizationRates", []uint16{203, 204}, gpu, func(d nvml.Device, _ features, out []source.Value) nvml.Return {
			u, ret := d.GetUtilizationRates() // %
			out[0], out[1] = source.IntValue(int64(u.Gpu)), source.IntValue(int64(u.Memory))
			return ret
		}},
		{"GetEncoderUtilization", []uint16{206}, gpu, func(d nvml.Device, _ features, out []source.Value) nvml.Return {
			v, _, ret := d.GetEncoderUtilization() // %
			out[0] = source.IntValue(int64(v))
			return ret
		}},
		{"GetDecoderUtilization", []uint16{207}, gpu, func(d nvml.Device, _ features, out []source.Value) nvml.Return {
			v, _, ret := d.GetDecoderUtilization() // %
			out[0] = source.IntValue(int64(v))
			return ret
		}},
		{"GetMemoryInfo", []uint16{250, 251, 252, 253}, both, readMemory},
		{"GetRetiredPages(SBE)", []uint16{390}, gpu, func(d nvml.Device, _ features, out []source.Value) nvml.Return {
			pages, ret := d.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
			out[0] = source.IntValue(int64(len(pages)))
			return ret
		}},
		{"GetGpuFabricInfo", []uint16{170, 171}, gpu, fabricManagerStatus},
	}
}

// readMemory gives total, free, used and reserved framebuffer memory in
// whole MiB, as DCGM does; reserved needs nvmlDeviceGetMemoryInfo_v2.
func readMemory(d nvml.Device, has features, out []source.Value) nvml.Return {
	if has.memoryV2 {
		m, ret := d.GetMemoryInfo_v2()
		out[0], out[1], out[2], out[3] = mib(m.Total), mib(m.Free), mib(m.Used), mib(m.Reserved)
		return ret
	}
	m, ret := d.GetMemoryInfo()
	out[0], out[1], out[2] = mib(m.Total), mib(m.Free), mib(m.Used)
	return ret
}

func mib(bytes uint64) source.Value { return source.IntValue(int64(bytes >> 20)) }

// fvKind says how a field value is decoded.
type fvKind uint8

const (
	fvPlain fvKind = iota
	// fvECC: NVML leaves the value type unset on ECC counters, which are
	// unsigned long long; and fields it left uninitialised because ECC is
	// off are not supported.
	fvECC
	// fvRetired: the uninitialised-field rule of fvECC, with the type NVML
	// reports.
	fvRetired
	// fvMemoryTemp: the 32-bit value whatever the type (r545 reports a
	// wrong one); readings above 200 °C are bogus.
	fvMemoryTemp
)

// fieldValue is a DCGM field DCGM reads through nvmlDeviceGetFieldValues.
type fieldValue struct {
	id     uint16
	nvmlID uint32
	kind   fvKind
}

func fieldValueTable() []fieldValue {
	return []fieldValue{
		{140, nvml.FI_DEV_MEMORY_TEMP, fvMemoryTemp},         // °C
		{156, nvml.FI_DEV_TOTAL_ENERGY_CONSUMPTION, fvPlain}, // mJ
		{240, nvml.FI_DEV_PERF_POLICY_POWER, fvPlain},        // as DCGM passes it on
		{241, nvml.FI_DEV_PERF_POLICY_THERMAL, fvPlain},
		// 242-245: the NVML field ids DCGM's field table gives them
		// (dcgm_fields.cpp NVML_FI_DEV_PERF_POLICY_*).
		{242, nvml.FI_DEV_PERF_POLICY_SYNC_BOOST, fvPlain},
		{243, nvml.FI_DEV_PERF_POLICY_BOARD_LIMIT, fvPlain},
		{244, nvml.FI_DEV_PERF_POLICY_LOW_UTILIZATION, fvPlain},
		{245, nvml.FI_DEV_PERF_POLICY_RELIABILITY, fvPlain},
		{310, nvml.FI_DEV_ECC_SBE_VOL_TOTAL, fvECC},
		{311, nvml.FI_DEV_ECC_DBE_VOL_TOTAL, fvECC},
		{312, nvml.FI_DEV_ECC_SBE_AGG_TOTAL, fvECC},
		{313, nvml.FI_DEV_ECC_DBE_AGG_TOTAL, fvECC},
		{391, nvml.FI_DEV_RETIRED_DBE, fvRetired},
		{392, nvml.FI_DEV_RETIRED_PENDING, fvRetired},
		{393, nvml.FI_DEV_REMAPPED_UNC, fvPlain},
		{394, nvml.FI_DEV_REMAPPED_COR, fvPlain},
		{395, nvml.FI_DEV_REMAPPED_FAILURE, fvPlain},
		{396, nvml.FI_DEV_REMAPPED_PENDING, fvPlain},
		// DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION: the nvmlDeviceGpuRecoveryAction_t
		// enum that nvml.h documents for NVML_FI_DEV_GET_GPU_RECOVERY_ACTION.
		{1523, nvml.FI_DEV_GET_GPU_RECOVERY_ACTION, fvPlain},
		// NVLink error counters over all links: the NVML field ids DCGM's
		// field table gives 409, 419, 429 and 439 (dcgm_fields.cpp).
		{409, nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, fvPlain},
		{419, nvml.FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, fvPlain},
		{429, nvml.FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, fvPlain},
		{439, nvml.FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, fvPlain},
	}
}

// decodeFieldValue turns a successful field value into a DCGM raw value.
func decodeFieldValue(v *nvml.FieldValue, kind fvKind) source.Value {
	raw := binary.LittleEndian.Uint64(v.Value[:])
	switch kind {
	case fvMemoryTemp:
		t := binary.LittleEndian.Uint32(v.Value[:4])
		if t > 200 {
			return source.Value{}
		}
		return source.IntValue(int64(t))
	case fvECC, fvRetired:
		if v.Timestamp == 0 && v.LatencyUsec == 0 && nvml.ValueType(v.ValueType) == nvml.VALUE_TYPE_DOUBLE {
			return source.Value{}
		}
		if kind == fvECC {
			return source.IntValue(int64(raw))
		}
	}
	switch nvml.ValueType(v.ValueType) {
	case nvml.VALUE_TYPE_DOUBLE:
		f := math.Float64frombits(raw)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return source.Value{}
		}
		return source.IntValue(int64(f))
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return source.IntValue(int64(uint32(raw)))
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return source.IntValue(int64(raw))
	case nvml.VALUE_TYPE_SIGNED_INT:
		return source.IntValue(int64(int32(uint32(raw))))
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return source.IntValue(int64(uint16(raw)))
	default:
		return source.Value{}
	}
}

// step is a reader applied to one level of a field set: cols[k] is the
// sample column of the reader's k-th value, -1 when not watched.
type step struct {
	what string
	read readFunc
	cols []int
}

// fvItem is a field value watched at the GPU level, in column col.
type fvItem struct {
	nvmlID uint32
	col    int
	kind   fvKind
}

// plan is what a Read does for a field set. It is built by Watch and never
// changed afterwards.
type plan struct {
	gpu, gi []step
	fv      []fvItem
	// fabricGPU are the GPU steps of fabric fields (fields.Field.Fabric)
	// and fvWithFabric the field values of fv and of fabric fields: both
	// read only when the fabric is due (Config.FabricInterval), as links
	// are. fabricCols are the columns of fabric fields, which samples
	// repeat in between.
	fabricGPU    []step
	fvWithFabric []fvItem
	fabricCols   []int
	// link reads error counters of each NVLink.
	link []linkStep
	// xidCol is the column of DCGM_FI_DEV_XID_ERRORS, -1 if not watched.
	xidCol int
	// provided counts the fields of the set NVML can give; dropped are the
	// others.
	provided int
	dropped  []fields.Field
}

// fabricStep reports whether a step gives only fabric fields of set: a
// step that also gives another field is read on every Read (its fabric
// columns are then repeated over all the same).
func fabricStep(set []fields.Field, cols []int) bool {
	for _, c := range cols {
		if c >= 0 && !set[c].Fabric {
			return false
		}
	}
	return true
}

// makePlan maps a field set onto NVML calls.
func makePlan(set []fields.Field) plan {
	p := plan{xidCol: -1}
	col := map[uint16]int{}
	for i, f := range set {
		if _, dup := col[f.ID]; !dup {
			col[f.ID] = i
		}
	}
	given := map[uint16]bool{}
	// colAt returns the column of id when the set watches it at level l.
	colAt := func(id uint16, l fields.Level) int {
		c, ok := col[id]
		if !ok || !set[c].Levels.Has(l) {
			return -1
		}
		return c
	}
	for _, r := range readerTable() {
		for _, l := range []fields.Level{fields.LevelGPU, fields.LevelGPUInstance} {
			if !r.levels.Has(l) {
				continue
			}
			st := step{what: r.what, read: r.read, cols: make([]int, len(r.ids))}
			used := false
			for k, id := range r.ids {
				st.cols[k] = colAt(id, l)
				if st.cols[k] >= 0 {
					used = true
					given[id] = true
				}
			}
			if !used {
				continue
			}
			switch {
			case l != fields.LevelGPU:
				p.gi = append(p.gi, st)
			case fabricStep(set, st.cols):
				p.fabricGPU = append(p.fabricGPU, st)
			default:
				p.gpu = append(p.gpu, st)
			}
		}
	}
	for _, fv := range fieldValueTable() {
		if c := colAt(fv.id, fields.LevelGPU); c >= 0 {
			it := fvItem{nvmlID: fv.nvmlID, col: c, kind: fv.kind}
			if !set[c].Fabric {
				p.fv = append(p.fv, it)
			}
			p.fvWithFabric = append(p.fvWithFabric, it)
			given[fv.id] = true
		}
	}
	for c := range set {
		if set[c].Fabric {
			p.fabricCols = append(p.fabricCols, c)
		}
	}
	planLinks(&p, colAt, given)
	if c := colAt(xidField, fields.LevelGPU); c >= 0 {
		p.xidCol = c
		given[xidField] = true
	}
	for _, f := range set {
		if given[f.ID] {
			p.provided++
		} else {
			p.dropped = append(p.dropped, f)
		}
	}
	return p
}
