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
