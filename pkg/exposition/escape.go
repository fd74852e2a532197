package exposition

import (
	"math"
	"strconv"
)

// appendLabelValue appends v escaped for a quoted label value in both the
// Prometheus text format and OpenMetrics: backslash, double quote and line
// feed are escaped; every other byte (UTF-8 included) is written as is.
func appendLabelValue(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '"':
			b = append(b, '\\', '"')
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendHelp appends help text escaped for a # HELP line: backslash and line
// feed are escaped. OpenMetrics also escapes double quotes, which the text
// format reads back literally, so the two differ.
func appendHelp(b []byte, help string, openMetrics bool) []byte {
	for i := 0; i < len(help); i++ {
		switch c := help[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '"':
			if openMetrics {
				b = append(b, '\\', '"')
			} else {
				b = append(b, c)
			}
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat appends v in the shortest form that parses back to the same
// float64, with NaN and infinities spelled as Prometheus spells them.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendLabel appends name="value" (escaped), preceded by a comma unless
// first.
func appendLabel(b []byte, first bool, name, value string) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, name...)
	b = append(b, '=', '"')
	b = appendLabelValue(b, value)
	return append(b, '"')
}
