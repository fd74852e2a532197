package fields

import "testing"

func TestHealthErrorName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code int
		want string
	}{
		{0, "DCGM_FR_OK"},
		{10, "DCGM_FR_CLOCK_THROTTLE_THERMAL"}, // dcgm-exporter keeps the old name
		{43, "DCGM_FR_THROTTLING_VIOLATION"},
		{101, "DCGM_FR_XID_ERROR"},
		{131, "DCGM_FR_UNKNOWN(131)"}, // DCGM_FR_CONTAINED_ERROR: not in dcgm-exporter's table
		{134, "DCGM_FR_ERROR_SENTINEL"},
		{500, "DCGM_FR_UNKNOWN(500)"},
	} {
		if got := HealthErrorName(tc.code); got != tc.want {
			t.Errorf("HealthErrorName(%d) = %q, want %q", tc.code, got, tc.want)
		}
	}
	if n := len(healthErrorTable()); n != 132 {
		t.Errorf("%d names, want the 132 of dcgm-exporter's table", n)
	}
}
