package dcgm

import (
	"fmt"
	"net"
	"strings"

	"github.com/spf13/pflag"
)

// Options are the --dcgm.* flags: how to reach DCGM.
type Options struct {
	// Mode is embedded or remote; Validate makes a remote address without
	// an explicit mode remote.
	Mode          string
	RemoteAddress string
	mode          *pflag.Flag
}

// AddFlags declares the --dcgm.* flags on fs, bound to o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Mode, "dcgm.mode", "embedded", "How to reach DCGM: embedded (start a hostengine in the exporter) or remote (connect to --dcgm.remote-address).")
	fs.StringVar(&o.RemoteAddress, "dcgm.remote-address", "", "Address of a running nv-hostengine: host:port or a unix socket path; setting it implies --dcgm.mode=remote.")
	o.mode = fs.Lookup("dcgm.mode")
}

// Validate checks the flags, each error naming its flag.
func (o *Options) Validate() error {
	if o.RemoteAddress != "" && (o.mode == nil || !o.mode.Changed) {
		o.Mode = "remote"
	}
	switch o.Mode {
	case "embedded":
		if o.RemoteAddress != "" {
			return fmt.Errorf("--dcgm.mode=embedded conflicts with --dcgm.remote-address=%s", o.RemoteAddress)
		}
	case "remote":
		if strings.TrimSpace(o.RemoteAddress) == "" {
			return fmt.Errorf("--dcgm.mode=remote needs --dcgm.remote-address")
		}
	default:
		return fmt.Errorf("--dcgm.mode: want embedded or remote, got %q", o.Mode)
	}
	return nil
}

// RemoteHost is the remote hostengine's host (a unix socket path as it
// is); ok is false in embedded mode.
func (o *Options) RemoteHost() (host string, ok bool) {
	if o.Mode != "remote" {
		return "", false
	}
	host, _, err := net.SplitHostPort(o.RemoteAddress)
	if err != nil {
		return o.RemoteAddress, true // a unix socket path, or no port
	}
	return host, true
}
