package processes

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
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
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Validate: %v, want an error containing %q", err, tc.want)
				}
				return
			}
			if err != nil || o.Mode != tc.mode {
				t.Errorf("mode %s (%v), want %s", o.Mode, err, tc.mode)
			}
		})
	}
}
