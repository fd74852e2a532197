package processes

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// Options are the process accounting flags: --collect.processes and
// --path.procfs.
type Options struct {
	// Processes is --collect.processes as given; Mode is it parsed, set
	// by Validate.
	Processes string
	Mode      Mode
	Procfs    string
}

// AddFlags declares the process accounting flags on fs, bound to o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Processes, "collect.processes", "container", "Per-process GPU accounting for shared GPUs (time-slicing, MPS): container (gpu_container_* per pod and container), process (also gpu_process_* per PID) or off. Needs the host's PIDs: hostPID and --path.procfs. Prometheus naming only: with --naming=dcgm process accounting does not run, and process is refused.")
	fs.StringVar(&o.Procfs, "path.procfs", "/proc", "procfs mountpoint where process accounting reads the cgroup and stat files of GPU processes: the host's /proc (with hostPID, the container's /proc is the host's).")
}

// Validate checks the flags, each error naming its flag, and sets Mode.
func (o *Options) Validate() error {
	var err error
	if o.Mode, err = ParseMode(o.Processes); err != nil {
		return err // names the flag
	}
	if strings.TrimSpace(o.Procfs) == "" {
		return fmt.Errorf("--path.procfs must name the proc filesystem (default /proc)")
	}
	return nil
}

// CheckNaming checks --collect.processes against --naming, the one place
// the two meet: exports says whether the naming has the process accounting
// families (dcgm naming has none, as dcgm-exporter has none), and a naming
// without them does not run process accounting. There a given
// --collect.processes=process is refused, naming both flags: the
// per-process series it asks for cannot exist. A given container mode
// changes nothing and is only noted at start (idle); the default is silent.
func (o *Options) CheckNaming(exports bool, naming string, given bool) (idle bool, err error) {
	if exports || !given {
		return false, nil
	}
	switch o.Mode {
	case ModeProcess:
		return false, fmt.Errorf("--collect.processes=process needs --naming=prometheus: --naming=%s has no per-process families and does not run process accounting; drop --collect.processes or use --naming=prometheus", naming)
	case ModeContainer:
		return true, nil
	}
	return false, nil
}
