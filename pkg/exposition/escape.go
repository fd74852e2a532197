package exposition

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// replacement stands for a run of bytes that is not UTF-8, as
// strings.ToValidUTF8(s, replacement) writes it. Both formats require UTF-8
// label values and HELP text, and Prometheus rejects the whole scrape when
// one is not ("invalid UTF-8 label value", "help text … is not a valid utf8
// string"; prometheus/prometheus model/textparse promparse.go and
// openmetricsparse.go), so the page never carries such bytes.
const replacement = "\uFFFD"

// appendLabelValue appends v escaped for a quoted label value in both the
// Prometheus text format and OpenMetrics: backslash, double quote and line
// feed are escaped, each run of bytes that is not UTF-8 becomes one U+FFFD;
// every other byte is written as is.
func appendLabelValue(b []byte, v string) []byte {
	return appendEscaped(b, v, true)
}

// appendHelp appends help text escaped for a # HELP line: backslash and line
// feed are escaped, each run of bytes that is not UTF-8 becomes one U+FFFD.
// OpenMetrics also escapes double quotes, which the text format reads back
// literally, so the two differ.
func appendHelp(b []byte, help string, openMetrics bool) []byte {
	return appendEscaped(b, help, openMetrics)
}

// appendEscaped appends s with backslash and line feed escaped, double
// quotes too when quote is set, and invalid UTF-8 replaced. Unescaped spans
// are copied whole, and only bytes past ASCII are decoded, so valid text
// costs no more than a plain copy with the escapes.
func appendEscaped(b []byte, s string, quote bool) []byte {
	start := 0 // s[start:i] is pending, to be copied as is
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size > 1 {
				i += size
				continue
			}
			b = append(b, s[start:i]...)
			b = append(b, replacement...)
			for i++; i < len(s); i++ { // the rest of the invalid run
				if r, size := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || size > 1 {
					break
				}
			}
			start = i
			continue
		}
		var esc byte
		switch {
		case c == '\\':
			esc = '\\'
		case c == '\n':
			esc = 'n'
		case c == '"' && quote:
			esc = '"'
		default:
			i++
			continue
		}
		b = append(b, s[start:i]...)
		b = append(b, '\\', esc)
		i++
		start = i
	}
	return append(b, s[start:]...)
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
