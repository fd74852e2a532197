package sim

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string // Validate's error; "" for none
	}{
		{nil, ""},
		{[]string{"--sim.scenario=/etc/scenario.yaml"}, ""},
		{[]string{"--sim.scenario= "}, "--sim.scenario must name a built-in scenario or a file"},
	}
	for _, tc := range cases {
		var o Options
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want))) {
			t.Errorf("%v: Validate: %v, want %q", tc.args, err, tc.want)
		}
	}
}
