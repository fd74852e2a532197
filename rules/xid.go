package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// XIDTier is one tier of the XID alerts: the alert that fires for the
// codes of the tier.
type XIDTier struct {
	// Alert is the alert of the tier; its expression names Codes in every
	// branch through the tier's placeholders (Placeholder).
	Alert string
	// Name spells the tier in its placeholders: ${xid<Name>Codes},
	// ${xid<Name>LastError}.
	Name string
	// Codes are the XIDs of the tier, ascending.
	Codes []int
}

// XIDTiers are the XID alert tiers, from NVIDIA's XID catalog
// (docs.nvidia.com/deploy/xid-errors, analyzing-xid-catalog); see
// GPUXidErrorCritical in docs/runbooks.md. This is the one list of each
// tier's codes: rules/alerts.src.yaml names them only through the
// placeholders XIDPlaceholders fills, and GPUXidErrorInfo (every other
// XID) through ${xidTieredCodes}, all of them. The chart fills the same
// placeholders from ChartHelper, generated from this list.
var XIDTiers = []XIDTier{
	{Alert: "GPUXidErrorCritical", Name: "Critical", Codes: []int{46, 48, 62, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 143, 149, 158}},
	{Alert: "GPUXidErrorWarning", Name: "Warning", Codes: []int{54, 94, 144, 145, 146, 147, 148, 150, 154, 155, 156, 157}},
}

// XIDInfoAlert is the alert of every XID no tier of XIDTiers names.
const XIDInfoAlert = "GPUXidErrorInfo"

// xidLastErrorSep joins the label_replace terms of ${xid<Name>LastError}:
// one term a line, aligned under the first in the `max by (...) (`
// block of rules/alerts.src.yaml.
const xidLastErrorSep = "\n            or "

// xidRegex is a label matcher's alternation of codes: 46|48|62.
func xidRegex(codes []int) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, "|")
}

// XIDPlaceholders returns the value of every XID placeholder, by name:
// per tier ${xid<Name>Codes} (the tier's codes as a regular expression
// for xid=~) and ${xid<Name>LastError} (a label_replace term per code
// giving gpu_xid_last_error, whose value is the GPU's last XID, the
// code's xid label); ${xidTieredCodes}, the codes of every tier, for the
// info tier's xid!~.
func XIDPlaceholders() map[string]string {
	out := map[string]string{}
	var all []int
	for _, t := range XIDTiers {
		out["xid"+t.Name+"Codes"] = xidRegex(t.Codes)
		terms := make([]string, len(t.Codes))
		for i, c := range t.Codes {
			terms[i] = fmt.Sprintf(`label_replace(last_over_time(gpu_xid_last_error[5m]) == %d, "xid", "%d", "", "")`, c, c)
		}
		out["xid"+t.Name+"LastError"] = strings.Join(terms, xidLastErrorSep)
		all = append(all, t.Codes...)
	}
	slices.Sort(all)
	out["xidTieredCodes"] = xidRegex(slices.Compact(all))
	return out
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
