package rightsize

import "fmt"

func fmtSscanf(name string, slices *int, mem *float64) (int, error) {
	return fmt.Sscanf(name, "%dg.%fgb", slices, mem)
}
