package processes

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
		mode Mode
	}{
		{"default", nil, "", ModeContainer},
		{"process", []string{"--collect.processes=process"}, "", ModeProcess},
		{"off", []string{"--collect.processes=off", "--path.procfs=/host/proc"}, "", ModeOff},
		{"unknown mode", []string{"--collect.processes=pid"}, `--collect.processes: unknown mode "pid"`, 0},
		{"blank procfs", []string{"--path.procfs= "}, "--path.procfs must name the proc filesystem", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var o Options
			if flagtest.WantErr(t, flagtest.Validate(t, &o, tc.args...), tc.want) {
				return
			}
			if o.Mode != tc.mode {
				t.Errorf("mode %s, want %s", o.Mode, tc.mode)
			}
		})
	}
}
