package sim

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// Options is the --sim.scenario flag.
type Options struct {
	// Scenario is a built-in scenario name or a YAML file path.
	Scenario string
}

// AddFlags declares --sim.scenario on fs, bound to o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Scenario, "sim.scenario", "demo", "Simulator scenario: a built-in name (demo, mig, timeslicing, churn, faults, hpc, hgx, scale-64) or a YAML file path.")
}

// Validate checks that --sim.scenario names something; the scenario is
// read, with a deadline, when the simulator opens.
func (o *Options) Validate() error {
	if strings.TrimSpace(o.Scenario) == "" {
		return fmt.Errorf("--sim.scenario must name a built-in scenario or a file")
	}
	return nil
}
