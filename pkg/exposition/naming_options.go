package exposition

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// NamingOptions are the --naming flags.
type NamingOptions struct {
	// Name is --naming as given; Naming is it parsed, set by Validate.
	Name   string
	Naming Naming
	// Release is --naming.dcgm-release, checked by Validate.
	Release string
	// DCGM is what the --naming.* flags set; its HostnameLabel may be
	// "none", or empty for the release's spelling (see DCGMFor).
	DCGM                                   DCGMOptions
	XIDCountWindow, ClockEventsCountWindow time.Duration
}

// AddFlags declares the --naming flags on fs, bound to o.
func (o *NamingOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Name, "naming", "prometheus", "Series names, units and labels: prometheus (gpu_* names in base units) or dcgm (dcgm-exporter's DCGM_FI_* names, DCGM units and labels, for existing dashboards and alerts).")
	fs.StringVar(&o.Release, "naming.dcgm-release", DefaultDCGMRelease, "With --naming=dcgm: the dcgm-exporter release whose names and labels to write, "+releaseNames()+"; they differ in the hostname label, Hostname up to 4.5.3-4.8.2, hostname from 4.6.0-4.8.3 (the GPU Operator's).")
	fs.StringVar(&o.DCGM.HostnameLabel, "naming.hostname-label", "", "With --naming=dcgm: name of the hostname label, Hostname or hostname (default: --naming.dcgm-release's), or none to leave it out. Its value is $NODE_NAME, else the host name.")
	fs.BoolVar(&o.DCGM.OldNamespace, "naming.old-namespace", false, "With --naming=dcgm: dcgm-exporter 1.x label names (uuid, pod_name, pod_namespace, container_name).")
	fs.BoolVar(&o.DCGM.ReplaceBlanksInModelName, "naming.replace-blanks-in-model-name", false, "With --naming=dcgm: write blanks in the modelName label as dashes.")
	fs.BoolVar(&o.DCGM.VirtualGPUs, "naming.vgpu-label", false, "With --naming=dcgm: label the series of a container holding a replica of a shared GPU (time-slicing, MPS) with vgpu, the replica number, as dcgm-exporter's --kubernetes-virtual-gpus does.")
	fs.DurationVar(&o.XIDCountWindow, "naming.xid-count-window", 5*time.Minute, "With --naming=dcgm: window of DCGM_EXP_XID_ERRORS_COUNT, when the counters file lists it.")
	fs.DurationVar(&o.ClockEventsCountWindow, "naming.clock-events-count-window", 5*time.Minute, "With --naming=dcgm: window of DCGM_EXP_CLOCK_EVENTS_COUNT, when the counters file lists it.")
}

// Validate checks the flags, each error naming its flag, and sets Naming.
func (o *NamingOptions) Validate() error {
	var err error
	if o.Naming, err = ParseNaming(o.Name); err != nil {
		return fmt.Errorf("--naming: %w", err)
	}
	if _, ok := LookupDCGMRelease(o.Release); !ok {
		return fmt.Errorf("--naming.dcgm-release: want %s, got %q", releaseNames(), o.Release)
	}
	switch o.DCGM.HostnameLabel {
	case "", HostnameLabel, HostnameLabelLower, "none":
	default:
		return fmt.Errorf("--naming.hostname-label: want %s, %s or none, got %q", HostnameLabel, HostnameLabelLower, o.DCGM.HostnameLabel)
	}
	if o.XIDCountWindow < source.MinInterval {
		return fmt.Errorf("--naming.xid-count-window must be at least %s, got %s", source.MinInterval, o.XIDCountWindow)
	}
	if o.ClockEventsCountWindow < source.MinInterval {
		return fmt.Errorf("--naming.clock-events-count-window must be at least %s, got %s", source.MinInterval, o.ClockEventsCountWindow)
	}
	return nil
}

// DCGMFor returns the options of NamingDCGM, with the hostname label's
// value from hostname, called only when the label is exported. An explicit
// --naming.hostname-label wins over the release's spelling.
func (o *NamingOptions) DCGMFor(hostname func() string) DCGMOptions {
	d := o.DCGM
	if d.HostnameLabel == "" {
		r, ok := LookupDCGMRelease(o.Release)
		if !ok {
			r, _ = LookupDCGMRelease(DefaultDCGMRelease)
		}
		d.HostnameLabel = r.HostnameLabel
	}
	if o.Naming != NamingDCGM || d.HostnameLabel == "none" {
		d.HostnameLabel = ""
		return d
	}
	d.Hostname = hostname()
	return d
}

// HostnameValue is the hostname label's value, chosen as dcgm-exporter
// chooses it: remote, the remote hostengine's host, when one is used and
// pods are not attributed; else node ($NODE_NAME); else the host name,
// or "" (the label left out, logged) when it is unknown.
func HostnameValue(remote string, attributed bool, node string, logger *slog.Logger) string {
	if remote != "" && !attributed {
		return remote
	}
	if node != "" {
		return node
	}
	h, err := os.Hostname()
	if err != nil {
		logger.Warn("host name unknown; the hostname label is left out", "err", err)
		return ""
	}
	return h
}

// Idle returns the --naming.* flags given (changed says which) that have
// no effect under o's naming.
func (o *NamingOptions) Idle(changed func(flag string) bool) []string {
	if o.Naming == NamingDCGM {
		return nil
	}
	var idle []string
	for _, name := range []string{"naming.dcgm-release", "naming.hostname-label", "naming.old-namespace", "naming.replace-blanks-in-model-name", "naming.vgpu-label", "naming.xid-count-window", "naming.clock-events-count-window"} {
		if changed(name) {
			idle = append(idle, "--"+name)
		}
	}
	return idle
}

// StartupLog returns what start-up logs about the --naming flags (changed
// says which were given), msg a constant, "" for nothing: a warning naming the
// --naming.* flags without effect under prometheus naming (Idle); under
// dcgm naming when neither --naming.dcgm-release nor
// --naming.hostname-label was given, a note that the default release is in
// effect and which label it writes, since before --naming.dcgm-release
// existed the default spelling was 4.5.3-4.8.2's Hostname.
func (o *NamingOptions) StartupLog(changed func(flag string) bool) (level slog.Level, msg string, args []any) {
	if idle := o.Idle(changed); len(idle) > 0 {
		return slog.LevelWarn, "naming flags have no effect with --naming=prometheus", []any{"flags", strings.Join(idle, ",")}
	}
	if o.Naming != NamingDCGM || changed("naming.dcgm-release") || changed("naming.hostname-label") {
		return slog.LevelInfo, "", nil
	}
	r, _ := LookupDCGMRelease(o.Release)
	return slog.LevelInfo, "--naming=dcgm writes the default dcgm-exporter release's names", []any{"release", r.Name, "hostname_label", r.HostnameLabel,
		"hint", "--naming.dcgm-release=" + DCGMReleases[0].Name + " writes " + DCGMReleases[0].HostnameLabel + ", as gpu-exporter did before this flag"}
}

// releaseNames lists DCGMReleases for help and errors.
func releaseNames() string {
	names := make([]string, len(DCGMReleases))
	for i, r := range DCGMReleases {
		names[i] = r.Name
	}
	return strings.Join(names, " or ")
}
