package source

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxGPUIndex bounds a GPU list: far above any host's GPU count.
const MaxGPUIndex = 1023

// ParseGPUList reads GPU indices (--collect.gpus, dcgm-exporter's -d g:<ids>):
// "0,2-3" is 0, 2 and 3; "" is none.
func ParseGPUList(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%q is not a GPU index or range", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a GPU index or range", part)
			}
		}
		if b > MaxGPUIndex {
			return nil, fmt.Errorf("%q: GPU indices stop at %d", part, MaxGPUIndex)
		}
		for i := a; i <= b; i++ {
			if !slices.Contains(out, i) {
				out = append(out, i)
			}
		}
	}
	return out, nil
}
