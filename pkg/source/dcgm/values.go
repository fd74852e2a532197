package dcgm

import (
	"math"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// DCGM's markers for "no value" (dcgm_structs.h, DCGM_*_BLANK and the
// NOT_FOUND, NOT_SUPPORTED and NOT_PERMISSIONED values just above them).
const (
	int32Blank = 0x7ffffff0
	int64Blank = 0x7ffffffffffffff0
	fp64Blank  = 140737488355328.0
	// int32Sentinels is how many int32 markers DCGM defines from int32Blank
	// up (blank, not found, not supported, not permissioned).
	int32Sentinels = 4
)

// Field value types (dcgm_fields.h DCGM_FT_*).
const (
	typeDouble    = 'd'
	typeInt64     = 'i'
	typeString    = 's'
	typeTimestamp = 't'
)

// rawValue is one field value as DCGM returns it.
type rawValue struct {
	fieldType uint
	status    int
	i         int64
	f         float64
	s         string
}

// translate turns a DCGM value into a source.Value; a failed status, a
// blank marker of any width or an unsupported type become Blank.
func translate(v rawValue) source.Value {
	if v.status != 0 {
		return source.Value{}
	}
	switch v.fieldType {
	case typeInt64, typeTimestamp:
		return intValue(v.i)
	case typeDouble:
		return floatValue(v.f)
	case typeString:
		return stringValue(v.s)
	default:
		return source.Value{}
	}
}

// intValue screens int64 markers, and the int32 markers DCGM stores in
// int64 fields fed from 32-bit driver values. An int64 field whose real value
// is one of the four int32 marker numbers (2147483632-2147483635) reads as
// Blank for that collection; that is the price of never exporting a marker.
func intValue(v int64) source.Value {
	if v >= int64Blank || (v >= int32Blank && v < int32Blank+int32Sentinels) {
		return source.Value{}
	}
	return source.IntValue(v)
}

func floatValue(v float64) source.Value {
	if v >= fp64Blank || math.IsNaN(v) || math.IsInf(v, 0) {
		return source.Value{}
	}
	return source.FloatValue(v)
}

// stringValue screens DCGM's "<<<NULL>>>"-style markers. Every DCGM
// string (model, UUID, PCI bus id, driver version, MIG profile, string
// fields) enters here: bytes that are not UTF-8 become U+FFFD, since DCGM
// copies the driver's char arrays unchecked and a label value that is not
// UTF-8 makes Prometheus reject the whole scrape.
func stringValue(s string) source.Value {
	if strings.HasPrefix(s, "<<<") && strings.HasSuffix(s, ">>>") {
		return source.Value{}
	}
	return source.StringValue(strings.ToValidUTF8(s, "\uFFFD"))
}
