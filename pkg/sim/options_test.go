package sim

import (
	"testing"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/flagtest"
)

func TestOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string // Validate's error; "" for none
	}{
		{"default", nil, ""},
		{"file", []string{"--sim.scenario=/etc/scenario.yaml"}, ""},
		{"blank", []string{"--sim.scenario= "}, "--sim.scenario must name a built-in scenario or a file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var o Options
			flagtest.WantErr(t, flagtest.Validate(t, &o, tc.args...), tc.want)
		})
	}
}
