package fields

import (
	"strings"
	"testing"
)

// dcgmUnit is the unit of the raw value DCGM reports for each catalog field,
// from the comments of dcgmlib/dcgm_fields.h, the units of its field
// metadata (dcgm_fields.cpp) and, where DCGM passes an NVML value through,
// nvml.h. A new catalog row must add its unit here.
func dcgmUnits() map[uint16]string {
	return map[uint16]string{
		100: "MHz", 101: "MHz", 112: "bitmask",
		140: "C", 150: "C", 158: "C", 159: "C",
		155: "W", 160: "W", 164: "W", 156: "mJ",
		202: "count", 203: "%", 204: "%", 206: "%", 207: "%", 230: "code",
		240: "ns", 241: "ns", // "Power Violation time in ns"
		// dcgm-exporter default-counters.csv (4.5.3-4.8.2): "(in ns)".
		242: "ns", 243: "ns", 244: "ns", 245: "ns",
		526: "bool",                                    // 1 licensed, 0 not (DcgmCacheManager.cpp)
		440: "KiB",                                     // link 0 of the NVML throughput counters, as 449
		250: "MiB", 251: "MiB", 252: "MiB", 253: "MiB", // "in MB": NVML bytes / 2^20
		310: "count", 311: "count", 312: "count", 313: "count",
		390: "count", 391: "count", 392: "count", 393: "count", 394: "count", 395: "bool", 396: "bool",
		449: "KiB",             // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX/RX, "in KiB"
		843: "KiB", 897: "KiB", // the same NVML counters, one direction each
		409: "count", 419: "count", 429: "count", 439: "count",
		170: "code", 171: "code",
		858: "C", 861: "B", 862: "B", 856: "code", 857: "code", // 861/862: no unit in DCGM's table; NSCQ counts bytes
		780: "B", 781: "B", 782: "count", 783: "count", 870: "code",
		1001: "ratio", 1002: "ratio", 1003: "ratio", 1004: "ratio", 1005: "ratio", 1006: "ratio", 1007: "ratio", 1008: "ratio",
		1009: "B/s", 1010: "B/s", 1011: "B/s", 1012: "B/s",
		1523: "code",
	}
}

// Default naming exports base units: each name ends in the base unit of its
// DCGM unit (before _total on counters), the scale converts exactly that
// unit, and no name carries a scaled unit.
func TestBaseUnits(t *testing.T) {
	t.Parallel()
	base := map[string]struct {
		scale float64
		unit  string
	}{
		"MHz": {megahertz, "hertz"}, "C": {one, "celsius"}, "W": {one, "watts"}, "mJ": {millijoul, "joules"},
		"%": {percent, "ratio"}, "ratio": {one, "ratio"}, "ns": {nanosec, "seconds"},
		"MiB": {mebibytes, "bytes"}, "KiB": {kibibytes, "bytes"}, "B": {one, "bytes"}, "B/s": {one, "bytes_per_second"},
		"count": {one, ""}, "bool": {one, ""}, "code": {one, ""}, "bitmask": {one, ""},
	}
	units := dcgmUnits()
	for _, f := range MustNew().All() {
		native, ok := units[f.ID]
		if !ok {
			t.Errorf("%s (%d): no DCGM unit in dcgmUnit", f.Name, f.ID)
			continue
		}
		want := base[native]
		if f.Scale != want.scale || f.Unit != want.unit {
			t.Errorf("%s: DCGM reports %s, so want scale %v unit %q; have %v %q", f.Name, native, want.scale, want.unit, f.Scale, f.Unit)
		}
		if want.unit != "" && !strings.HasSuffix(f.Base(), "_"+want.unit) {
			t.Errorf("%s: name does not end in its base unit _%s", f.Name, want.unit)
		}
		for _, scaled := range []string{"kibibyte", "mebibyte", "kilobyte", "megabyte", "megahertz", "percent", "milli", "micro", "nano", "kib", "mib", "mhz"} {
			for _, word := range strings.Split(f.Name, "_") {
				if strings.HasPrefix(word, scaled) {
					t.Errorf("%s: %q is not a base unit", f.Name, word)
				}
			}
		}
		if got := f.DCGMUnit(); f.Scale != one && got != native {
			t.Errorf("%s: DCGMUnit() = %q, want %q", f.Name, got, native)
		}
	}
}
