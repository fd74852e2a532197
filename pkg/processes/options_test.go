package processes

import (
	"strings"
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

func TestCheckNaming(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mode    Mode
		exports bool
		given   bool
		idle    bool
		err     string
	}{
		{ModeProcess, true, true, false, ""},
		{ModeProcess, false, true, false, "--collect.processes=process needs --naming=prometheus: --naming=dcgm"},
		{ModeProcess, false, false, false, ""},
		{ModeContainer, false, true, true, ""},
		{ModeContainer, false, false, false, ""},
		{ModeContainer, true, true, false, ""},
		{ModeOff, false, true, false, ""},
	}
	for _, tc := range cases {
		o := Options{Mode: tc.mode}
		idle, err := o.CheckNaming(tc.exports, "dcgm", tc.given)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: %v, want an error containing %q", tc, err, tc.err)
			}
			continue
		}
		if err != nil || idle != tc.idle {
			t.Errorf("%+v: idle %v, %v; want %v", tc, idle, err, tc.idle)
		}
	}
}
