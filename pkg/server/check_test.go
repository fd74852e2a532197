package server

import (
	"strings"
	"testing"
)

func TestCheckListeners(t *testing.T) {
	t.Parallel()
	tests := []struct {
		listen  []string
		health  string
		systemd bool
		want    string // "" for no error
	}{
		{[]string{":9400"}, "", false, ""},
		{[]string{"127.0.0.1:9400", "[::1]:9400", "vsock://:9400", "vsock://3:9400"}, ":9401", false, ""},
		{nil, "", true, ""},
		{nil, "", false, "--web.listen-address: at least one address"},
		{[]string{"9400"}, "", false, `--web.listen-address "9400": want host:port`},
		{[]string{":99999"}, "", false, `port "99999" is not a number from 0 to 65535`},
		{[]string{"vsock://:x"}, "", false, `want vsock://:port or vsock://CID:port`},
		{[]string{"vsock://:99999999999"}, "", false, `vsock port "99999999999" is not a number`},
		{[]string{":9400", ":9400"}, "", false, "given twice"},
		{[]string{":9400"}, "vsock://:1", false, "the health listener is plain TCP"},
		{[]string{":9400"}, "localhost", false, `--web.health-listen-address "localhost": want host:port`},
		{[]string{":9400"}, "127.0.0.1:9400", false, "the health listener needs its own port"},
		{[]string{"127.0.0.1:9400"}, "127.0.0.2:9400", false, ""},
		{[]string{":0"}, ":0", false, ""},
		{[]string{":9400"}, ":9400", true, ""}, // systemd sockets replace the listen addresses
	}
	for _, tt := range tests {
		err := CheckListeners(tt.listen, tt.health, tt.systemd)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CheckListeners(%q, %q, %v) = %v, want %q", tt.listen, tt.health, tt.systemd, err, tt.want)
		}
	}
}
