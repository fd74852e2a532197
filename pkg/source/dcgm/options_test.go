package dcgm

import (
	"testing"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/flagtest"
)

func TestOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		args       []string
		want       string // Validate's error; "" for none
		mode, host string
		remote     bool
	}{
		{"embedded", nil, "", "embedded", "", false},
		{"an address implies remote", []string{"--dcgm.remote-address=dcgm-host:5555"}, "", "remote", "dcgm-host", true},
		{"remote with a socket path", []string{"--dcgm.mode=remote", "--dcgm.remote-address=/run/nv-hostengine.sock"}, "", "remote", "/run/nv-hostengine.sock", true},
		{"embedded given with an address", []string{"--dcgm.mode=embedded", "--dcgm.remote-address=h:5555"}, "--dcgm.mode=embedded conflicts with --dcgm.remote-address=h:5555", "", "", false},
		{"remote without an address", []string{"--dcgm.mode=remote"}, "--dcgm.mode=remote needs --dcgm.remote-address", "", "", false},
		{"unknown mode", []string{"--dcgm.mode=cloud"}, `--dcgm.mode: want embedded or remote, got "cloud"`, "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var o Options
			if flagtest.WantErr(t, flagtest.Validate(t, &o, tc.args...), tc.want) {
				return
			}
			host, remote := o.RemoteHost()
			if o.Mode != tc.mode || host != tc.host || remote != tc.remote {
				t.Errorf("mode %s, RemoteHost %q %v; want %s, %q %v", o.Mode, host, remote, tc.mode, tc.host, tc.remote)
			}
		})
	}
}
