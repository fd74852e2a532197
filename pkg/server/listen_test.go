package server

import (
	"strings"
	"testing"
)

// Systemd socket activation and vsock:// addresses are opened by
// exporter-toolkit's web.ListenAndServe, not by Listen: its errors (here
// its vsock port parse, and no socket-activation descriptors) come from
// Serve, and Addrs is empty. Our own net.Listen would refuse a vsock
// address with "too many colons" instead.
func TestToolkitListeners(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"vsock address", Config{ListenAddresses: []string{"vsock://:notaport"}}, "invalid port"},
		{"vsock next to a TCP address", Config{ListenAddresses: []string{"127.0.0.1:0", "vsock://:notaport"}}, "invalid port"},
		{"systemd socket activation", Config{SystemdSocket: true}, "no socket activation file descriptors"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newTestServer(t, tc.cfg)
			if err := s.Listen(); err != nil {
				t.Fatalf("Listen: %v", err)
			}
			if got := s.Addrs(); len(got) != 0 {
				t.Errorf("Addrs = %v, want none: exporter-toolkit opens the listeners", got)
			}
			err := s.Serve()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Serve: err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestIsVsockAddress(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{"vsock://:9400": true, "vsock://3:9400": true, ":9400": false, "[::1]:9400": false, "vsock:9400": false} {
		if got := IsVsockAddress(addr); got != want {
			t.Errorf("IsVsockAddress(%q) = %v, want %v", addr, got, want)
		}
	}
}
