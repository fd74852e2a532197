package exposition

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/flagtest"
)

func TestNamingOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		args      []string
		want      string // Validate's error; "" for none
		label     string // DCGMFor's hostname label ("" leaves it out)
		idleFlags []string
	}{
		{"prometheus", nil, "", "", nil},
		{"dcgm: the GPU Operator's release", []string{"--naming=dcgm"}, "", HostnameLabelLower, nil},
		{"dcgm, 4.6.0-4.8.3", []string{"--naming=dcgm", "--naming.dcgm-release=4.6.0-4.8.3"}, "", HostnameLabelLower, nil},
		{"dcgm, 4.5.3-4.8.2", []string{"--naming=dcgm", "--naming.dcgm-release=4.5.3-4.8.2"}, "", HostnameLabel, nil},
		{"dcgm, upper-case label wins over the release", []string{"--naming=dcgm", "--naming.hostname-label=Hostname"}, "", HostnameLabel, nil},
		{"dcgm, lower-case label wins over the release", []string{"--naming=dcgm", "--naming.dcgm-release=4.5.3-4.8.2", "--naming.hostname-label=hostname"}, "", HostnameLabelLower, nil},
		{"dcgm, no label", []string{"--naming=dcgm", "--naming.hostname-label=none"}, "", "", nil},
		{"dcgm flags under prometheus", []string{"--naming.old-namespace", "--naming.xid-count-window=1m", "--naming.dcgm-release=4.5.3-4.8.2"}, "", "", []string{"--naming.dcgm-release", "--naming.old-namespace", "--naming.xid-count-window"}},
		{"release", []string{"--naming=dcgm", "--naming.dcgm-release=4.9.0"}, `--naming.dcgm-release: want 4.5.3-4.8.2 or 4.6.0-4.8.3, got "4.9.0"`, "", nil},
		{"naming", []string{"--naming=dcgm-exporter"}, `--naming: unknown naming "dcgm-exporter"`, "", nil},
		{"hostname label", []string{"--naming.hostname-label=HOSTNAME"}, "--naming.hostname-label: want Hostname, hostname or none", "", nil},
		{"xid window", []string{"--naming.xid-count-window=0s"}, "--naming.xid-count-window must be at least 100ms, got 0s", "", nil},
		{"xid window under the floor", []string{"--naming.xid-count-window=1ns"}, "--naming.xid-count-window must be at least 100ms, got 1ns", "", nil},
		{"clock events window", []string{"--naming.clock-events-count-window=-1s"}, "--naming.clock-events-count-window must be at least 100ms, got -1s", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var o NamingOptions
			fs := flagtest.Parse(t, o.AddFlags, tc.args...)
			err := o.Validate()
			if flagtest.WantErr(t, err, tc.want) {
				return
			}
			asked := false
			d := o.DCGMFor(func() string { asked = true; return "node-7" })
			if d.HostnameLabel != tc.label || asked != (tc.label != "") || (asked && d.Hostname != "node-7") {
				t.Errorf("DCGMFor: label %q=%q (host name asked: %v), want label %q", d.HostnameLabel, d.Hostname, asked, tc.label)
			}
			if idle := o.Idle(fs.Changed); !slices.Equal(idle, tc.idleFlags) {
				t.Errorf("Idle = %v, want %v", idle, tc.idleFlags)
			}
		})
	}
}

func TestStartupLog(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args  []string
		level slog.Level
		want  string
	}{
		{[]string{"--naming=dcgm"}, slog.LevelInfo, "--naming=dcgm writes the default dcgm-exporter release's names release=4.6.0-4.8.3 hostname_label=hostname hint=--naming.dcgm-release=4.5.3-4.8.2 writes Hostname, as gpu-exporter did before this flag"},
		{[]string{"--naming=dcgm", "--naming.dcgm-release=4.6.0-4.8.3"}, slog.LevelInfo, ""},
		{[]string{"--naming=dcgm", "--naming.hostname-label=hostname"}, slog.LevelInfo, ""},
		{nil, slog.LevelInfo, ""},
		{[]string{"--naming.dcgm-release=4.5.3-4.8.2"}, slog.LevelWarn, "naming flags have no effect with --naming=prometheus flags=--naming.dcgm-release"},
	}
	for _, tc := range cases {
		var o NamingOptions
		fs := flagtest.Parse(t, o.AddFlags, tc.args...)
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		level, msg, args := o.StartupLog(fs.Changed)
		got := msg
		for i := 0; i+1 < len(args); i += 2 {
			got += fmt.Sprintf(" %v=%v", args[i], args[i+1])
		}
		if got != tc.want || level != tc.level {
			t.Errorf("%v: %v %q, want %v %q", tc.args, level, got, tc.level, tc.want)
		}
	}
}

// The hostname label's value, as dcgm-exporter picks it: the remote
// hostengine's host without pod attribution, else the node name, else the
// host name.
func TestHostnameValue(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		remote     string
		attributed bool
		node, want string
	}{
		{"dcgm-host", false, "node-7", "dcgm-host"},
		{"dcgm-host", true, "node-7", "node-7"},
		{"", false, "node-7", "node-7"},
		{"", false, "", host},
		{"dcgm-host", true, "", host},
	} {
		if got := HostnameValue(tc.remote, tc.attributed, tc.node, logger); got != tc.want {
			t.Errorf("HostnameValue(%q, %v, %q) = %q, want %q", tc.remote, tc.attributed, tc.node, got, tc.want)
		}
	}
}
