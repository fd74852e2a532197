package rules_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/rules"
)

var (
	// xidLastErrorTerm is a label_replace term of a tier: the compared
	// code and the xid label it gives.
	xidLastErrorTerm = regexp.MustCompile(`label_replace\(last_over_time\(gpu_xid_last_error\[5m\]\) == (\d+), "xid", "(\d+)", "", ""\)`)
	// xidMatcher is an xid label matcher of a counter or last-seen term.
	xidMatcher = regexp.MustCompile(`(gpu_xid_\w+)\{xid(=~|!~)"([^"]*)"\}`)
)

func codeSet(t *testing.T, re string) []int {
	t.Helper()
	var out []int
	for _, s := range strings.Split(re, "|") {
		c, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("xid matcher %q: %q is no code", re, s)
		}
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// TestXIDTiersInEveryBranch renders the alerts with the chart's defaults
// and checks that each tier's expression names exactly the tier's codes
// (rules.XIDTiers) in every branch: a label_replace term per code, the
// same code compared and labelled, and every xid matcher of the counter
// and last-seen terms; the info tier excludes exactly every tier's codes
// in every branch.
func TestXIDTiersInEveryBranch(t *testing.T) {
	t.Parallel()
	f := load(t, rules.AlertsFile)
	exprs := map[string]string{}
	for _, r := range f.Rules() {
		if r.Alert != "" {
			exprs[r.Alert] = r.Expr
		}
	}
	var all []int
	check := func(alert, op string, want []int, lastError bool) {
		expr, ok := exprs[alert]
		if !ok {
			t.Errorf("%s: no such alert in %s", alert, rules.AlertsFile)
			return
		}
		// The branches that select the tier's codes: four reads of the
		// counter, one of the last-seen time.
		ms := xidMatcher.FindAllStringSubmatch(expr, -1)
		counters, seen := 0, 0
		for _, m := range ms {
			switch m[1] {
			case "gpu_xid_errors_total":
				counters++
			case "gpu_xid_last_seen_timestamp_seconds":
				seen++
			}
			if m[2] != op {
				t.Errorf("%s: %s{xid%s...}, want xid%s", alert, m[1], m[2], op)
			}
			if got := codeSet(t, m[3]); !slices.Equal(got, want) {
				t.Errorf("%s: %s{xid%s} names %v, want %v", alert, m[1], op, got, want)
			}
		}
		if counters != 5 || seen != 1 {
			t.Errorf("%s: %d gpu_xid_errors_total and %d gpu_xid_last_seen_timestamp_seconds matchers, want 5 and 1", alert, counters, seen)
		}
		var terms []int
		for _, m := range xidLastErrorTerm.FindAllStringSubmatch(expr, -1) {
			if m[1] != m[2] {
				t.Errorf("%s: gpu_xid_last_error == %s labelled xid=%q", alert, m[1], m[2])
			}
			c, _ := strconv.Atoi(m[1])
			terms = append(terms, c)
		}
		slices.Sort(terms)
		if !lastError {
			want = nil
		}
		if !slices.Equal(terms, want) {
			t.Errorf("%s: gpu_xid_last_error terms for %v, want %v", alert, terms, want)
		}
		if n := strings.Count(expr, "gpu_xid_last_error"); n != len(terms) {
			t.Errorf("%s: %d reads of gpu_xid_last_error, %d of them label_replace terms of the tier", alert, n, len(terms))
		}
	}
	for _, tier := range rules.XIDTiers {
		want := slices.Sorted(slices.Values(tier.Codes))
		if len(slices.Compact(slices.Clone(want))) != len(want) {
			t.Errorf("%s: a code twice in %v", tier.Alert, tier.Codes)
		}
		for _, c := range want {
			if slices.Contains(all, c) {
				t.Errorf("XID %d in two tiers", c)
			}
		}
		all = append(all, want...)
		check(tier.Alert, "=~", want, true)
	}
	slices.Sort(all)
	check(rules.XIDInfoAlert, "!~", all, false)
}
