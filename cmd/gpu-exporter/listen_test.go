package main

import (
	"io"
	"strings"
	"testing"
)

// vsock:// listen addresses pass validation when exporter-toolkit can open
// them, and fail at start-up, naming the flag, when it could not; the
// health listener is TCP only.
func TestVsockListenAddress(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, flag, addr, want string // want: "" for accepted, else part of the error
	}{
		{"any CID", "web.listen-address", "vsock://:9400", ""},
		{"given CID", "web.listen-address", "vsock://3:9400", ""},
		{"next to TCP", "web.listen-address", ":9400,vsock://:9401", ""},
		{"port not a number", "web.listen-address", "vsock://:x", `--web.listen-address "vsock://:x": want vsock://:port`},
		{"port too large", "web.listen-address", "vsock://:4294967296", `--web.listen-address "vsock://:4294967296": vsock port "4294967296"`},
		{"no port", "web.listen-address", "vsock://3", `--web.listen-address "vsock://3": want vsock://:port`},
		{"health listener", "web.health-listen-address", "vsock://:9401", `--web.health-listen-address "vsock://:9401": the health listener is plain TCP`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := parseFlags([]string{"--" + tc.flag + "=" + tc.addr}, noEnv, io.Discard)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}
