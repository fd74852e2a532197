package main

import (
	"io"
	"strings"
	"testing"
)

// vsock:// listen addresses pass validation when exporter-toolkit can open
// them, and fail at start-up, naming the flag, when it could not.
func TestVsockListenAddress(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, addr, want string // want: "" for accepted, else part of the error
	}{
		{"any CID", "vsock://:9400", ""},
		{"given CID", "vsock://3:9400", ""},
		{"next to TCP", ":9400,vsock://:9401", ""},
		{"port not a number", "vsock://:x", `--web.listen-address "vsock://:x": want vsock://:port`},
		{"port too large", "vsock://:4294967296", `--web.listen-address "vsock://:4294967296": vsock port "4294967296"`},
		{"no port", "vsock://3", `--web.listen-address "vsock://3": want vsock://:port`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := parseFlags([]string{"--web.listen-address=" + tc.addr}, noEnv, io.Discard)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}
