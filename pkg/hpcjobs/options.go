package hpcjobs

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Options are the --hpc.* flags.
type Options struct {
	// Dir is the job-mapping directory; empty is off.
	Dir             string
	RefreshInterval time.Duration
}

// AddFlags declares the --hpc.* flags on fs, bound to o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Dir, "hpc.job-mapping-dir", "", "Directory of HPC job-mapping files (dcgm-exporter's format: one file per GPU index or <gpu>.<gpu_instance>, one job id a line, written by a scheduler prolog) whose jobs label GPU series with hpc_job (empty: off). Absolute path; it may not exist yet.")
	fs.DurationVar(&o.RefreshInterval, "hpc.refresh-interval", 0, "Time between two reads of --hpc.job-mapping-dir, at least 100ms (0: the collect interval).")
}

// Validate checks the flags, each error naming its flag; the refresh
// interval is collectInterval unless given. The directory need not exist
// at start: a prolog creates it with the first job (dcgm-exporter also
// starts without it).
func (o *Options) Validate(collectInterval time.Duration) error {
	if o.Dir != "" && !filepath.IsAbs(o.Dir) {
		return fmt.Errorf("--hpc.job-mapping-dir must be an absolute path, got %q", o.Dir)
	}
	var err error
	if o.RefreshInterval, err = source.RefreshInterval("--hpc.refresh-interval", o.RefreshInterval, collectInterval); err != nil {
		return err
	}
	return nil
}

// Open returns a reader of Dir, else of simDir (where the simulator
// writes its jobs), or nil when both are empty. A directory that does not
// exist yet is logged by the reader and read again at every refresh.
func Open(o Options, simDir string, logger *slog.Logger, reg prometheus.Registerer) (*Reader, error) {
	dir := o.Dir
	if dir == "" {
		dir = simDir
	}
	if dir == "" {
		return nil, nil
	}
	r, err := New(Config{Dir: dir, RefreshInterval: o.RefreshInterval}, logger, reg)
	if err != nil {
		return nil, fmt.Errorf("--hpc.job-mapping-dir: %w", err)
	}
	logger.Info("HPC job attribution on", "dir", dir, "refresh_interval", o.RefreshInterval)
	return r, nil
}
