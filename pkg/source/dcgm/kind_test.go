package dcgm

import "testing"

func TestHostengineAddress(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]string{
		"10.0.0.1":            {"tcp", "10.0.0.1:5555"},
		"host:6000":           {"tcp", "host:6000"},
		"tcp://host:7000":     {"tcp", "host:7000"},
		"/run/dcgm.sock":      {"unix", "/run/dcgm.sock"},
		"unix:///run/he.sock": {"unix", "/run/he.sock"},
	} {
		if n, a := hostengineAddress(in); n != want[0] || a != want[1] {
			t.Errorf("hostengineAddress(%q) = %s %s, want %v", in, n, a, want)
		}
	}
}
