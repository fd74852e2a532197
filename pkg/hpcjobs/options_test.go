package hpcjobs

import (
	"log/slog"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/flagtest"
)

func TestOptions(t *testing.T) {
	t.Parallel()
	dir, sim := t.TempDir(), t.TempDir()
	cases := []struct {
		name    string
		args    []string
		simDir  string
		want    string // Validate's error
		refresh time.Duration
		reads   string // the directory Open reads; "" for no reader
	}{
		{"off", nil, "", "", 2 * time.Second, ""},
		{"given directory", []string{"--hpc.job-mapping-dir=" + dir, "--hpc.refresh-interval=1s"}, "", "", time.Second, dir},
		{"the simulator's directory", nil, sim, "", 2 * time.Second, sim},
		{"given directory beats the simulator's", []string{"--hpc.job-mapping-dir=" + dir}, sim, "", 2 * time.Second, dir},
		{"relative directory", []string{"--hpc.job-mapping-dir=run/jobs"}, "", "--hpc.job-mapping-dir must be an absolute path", 0, ""},
		{"negative refresh", []string{"--hpc.refresh-interval=-1s"}, "", "--hpc.refresh-interval must not be negative", 0, ""},
		{"spinning refresh", []string{"--hpc.refresh-interval=10ms"}, "", "--hpc.refresh-interval must be at least 100ms", 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var o Options
			flagtest.Parse(t, o.AddFlags, tc.args...)
			err := o.Validate(2 * time.Second)
			if flagtest.WantErr(t, err, tc.want) {
				return
			}
			if o.RefreshInterval != tc.refresh {
				t.Errorf("refresh interval %s, want %s", o.RefreshInterval, tc.refresh)
			}
			r, err := Open(o, tc.simDir, slog.New(slog.DiscardHandler), nil)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case r == nil && tc.reads != "":
				t.Errorf("no reader, want one of %q", tc.reads)
			case r != nil && r.cfg.Dir != tc.reads:
				t.Errorf("reader of %q, want %q", r.cfg.Dir, tc.reads)
			}
		})
	}
}
