package server

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/pkg/config"
)

// CheckListeners checks the listen addresses (--web.listen-address) and
// the plain health listener (--web.health-listen-address, "" for none)
// before anything listens, naming the flag at fault.
func CheckListeners(listen []string, health string, systemdSocket bool) error {
	if len(listen) == 0 && !systemdSocket {
		return fmt.Errorf("--web.listen-address: at least one address is required (or --web.systemd-socket)")
	}
	for i, addr := range listen {
		check := checkListenAddress
		if IsVsockAddress(addr) {
			check = checkVsockAddress
		}
		if err := check(addr); err != nil {
			return fmt.Errorf("--web.listen-address %q: %w", addr, err)
		}
		if slices.Contains(listen[:i], addr) {
			return fmt.Errorf("--web.listen-address %q is given twice", addr)
		}
	}
	if health == "" {
		return nil
	}
	if IsVsockAddress(health) {
		return fmt.Errorf("--web.health-listen-address %q: the health listener is plain TCP (host:port); vsock:// addresses are for --web.listen-address", health)
	}
	if err := checkListenAddress(health); err != nil {
		return fmt.Errorf("--web.health-listen-address %q: %w", health, err)
	}
	for _, addr := range listen {
		if sameListener(addr, health) && !systemdSocket {
			return fmt.Errorf("--web.health-listen-address %q takes the port of --web.listen-address %q: the health listener needs its own port", health, addr)
		}
	}
	return nil
}

// checkListenAddress checks a host:port to listen on; the host may be empty
// (every interface), the port must be a number (0 picks a free one).
func checkListenAddress(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port or :port: %w", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

// checkVsockAddress checks a vsock://[CID]:port address as exporter-toolkit
// reads it (web.ListenAndServe: url.Parse, then the port as a 32-bit
// number), so that a bad one fails here, naming the flag, rather than once
// serving.
func checkVsockAddress(addr string) error {
	u, err := url.Parse(addr)
	if err != nil {
		return fmt.Errorf("want vsock://:port or vsock://CID:port: %w", err)
	}
	_, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return fmt.Errorf("want vsock://:port or vsock://CID:port: %w", err)
	}
	if _, err := strconv.ParseUint(port, 10, 32); err != nil {
		return fmt.Errorf("vsock port %q is not a number from 0 to 4294967295", port)
	}
	return nil
}

// sameListener reports whether two valid listen addresses would take the
// same port: equal ports (not 0) on the same host or on a wildcard host.
func sameListener(a, b string) bool {
	ha, pa, _ := net.SplitHostPort(a)
	hb, pb, _ := net.SplitHostPort(b)
	if pa != pb || pa == "0" {
		return false
	}
	wild := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || wild(ha) || wild(hb)
}

// CheckWebConfigFiles reads --web.config.file and the files it names with
// a deadline, before exporter-toolkit reads them without one: a named pipe
// or a hung mount fails start-up with the flag and file named instead of
// blocking it. exporter-toolkit then checks the content (New).
func CheckWebConfigFiles(ctx context.Context, path string) error {
	data, err := config.ReadFile(ctx, path)
	if err != nil {
		return fmt.Errorf("--web.config.file: %w", err)
	}
	// Only the file names matter here; a file that does not parse is left
	// to exporter-toolkit, whose message is the one users know.
	var wc struct {
		TLS struct {
			Cert string `yaml:"cert_file"`
			Key  string `yaml:"key_file"`
			CA   string `yaml:"client_ca_file"`
		} `yaml:"tls_server_config"`
	}
	if yaml.Unmarshal(data, &wc) != nil {
		return nil
	}
	for _, f := range []struct{ key, name string }{
		{"tls_server_config.cert_file", wc.TLS.Cert},
		{"tls_server_config.key_file", wc.TLS.Key},
		{"tls_server_config.client_ca_file", wc.TLS.CA},
	} {
		if f.name == "" {
			continue
		}
		// Relative names are relative to the web config's directory, as
		// exporter-toolkit resolves them (TLSConfig.SetDirectory).
		p := f.name
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		if _, err := config.ReadFile(ctx, p); err != nil {
			return fmt.Errorf("--web.config.file %s: %s: %w", path, f.key, err)
		}
	}
	return nil
}
