package dcgm

import "testing"

// DCGM_HEALTH_WATCH_ALL (dcgm_structs.h, 0xFFFFFFFF) names the incidents
// DCGM files under no single watch; a passing check is an empty, non-nil
// list, which dcgm naming tells from a failed one.
func TestHealthAllAndPassing(t *testing.T) {
	t.Parallel()
	if got := subsystemName(0xFFFFFFFF); got != "all" {
		t.Errorf("subsystemName(DCGM_HEALTH_WATCH_ALL) = %q, want all", got)
	}
	if got := incidents(&HealthReport{}); got == nil || len(got) != 0 {
		t.Errorf("incidents of a passing report = %#v, want empty and non-nil", got)
	}
}
