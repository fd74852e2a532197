package dcgm

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// defaultPort is nv-hostengine's default port (DCGM's
// DCGM_HE_PORT_NUMBER, dcgm_structs.h).
const defaultPort = "5555"

// Kind describes --source=dcgm to pkg/sourceopen's table.
func Kind() source.Kind {
	return source.Kind{Name: "dcgm", Usage: "dcgm", NewOptions: func() source.Options { return &Options{} }}
}

// Open opens the DCGM source. It starts even while the hostengine is
// down: it reconnects with backoff and gpu_exporter_source_up says so.
func (o *Options) Open(_ context.Context, s source.Settings, logger *slog.Logger) (*source.Opened, error) {
	src, err := New(Config{
		Mode: o.Mode, RemoteAddress: o.RemoteAddress,
		Interval: s.Interval, CallTimeout: cgocall.CallTimeout(s.CollectTimeout), Health: true, GPUs: s.GPUs,
		FabricInterval: s.FabricInterval,
	}, logger)
	if err != nil {
		return nil, fmt.Errorf("--source=dcgm: %w", err)
	}
	opened := &source.Opened{Source: src}
	opened.OnClose(func() { _ = src.Close() })
	return opened, nil
}

// Traits: a remote hostengine reads another host's GPUs, and the doctor
// checks the library, the hostengine's address and the capability
// profiling needs.
func (o *Options) Traits() source.Traits {
	t := source.Traits{Checkup: source.Checkup{
		Libraries:    []string{cgocall.LibDCGM, cgocall.LibNVML}, // DCGM reads the GPUs through NVML
		LocalDevices: o.Mode != "remote",
		Why:          o.why,
		Fix:          func(missing func(string) bool) string { return o.Fix(missing(cgocall.LibDCGM)) },
	}}
	if host, ok := o.RemoteHost(); ok {
		t.RemoteHost = host
		network, addr := hostengineAddress(o.RemoteAddress)
		t.Checkup.Endpoints = []source.Endpoint{{What: "hostengine", Network: network, Address: addr}}
		t.Checkup.Profiling = source.ProfilingRemote
	}
	return t
}

func (o *Options) why(string) string {
	if o.Mode == "remote" {
		return " (remote hostengine " + o.RemoteAddress + ")"
	}
	return " (embedded hostengine)"
}

// Fix says what to do when DCGM does not open or answer; noLibrary says
// that libdcgm is absent.
func (o *Options) Fix(noLibrary bool) string {
	if o.Mode == "remote" {
		return "start nv-hostengine where --dcgm.remote-address points (" + o.RemoteAddress + "), or fix the address; the GPU Operator's is nvidia-dcgm.<namespace>.svc:5555 with dcgm.enabled=true"
	}
	if noLibrary {
		return cgocall.LibDCGM + " not found: install DCGM 4 (datacenter-gpu-manager-4) in the image or on the host, or use --dcgm.remote-address to reach a running nv-hostengine, or --source=nvml"
	}
	return "DCGM is installed but the embedded hostengine did not start: check the driver with nvidia-smi and the device nodes (see the devices check)"
}

// hostengineAddress splits an address as Config.RemoteAddress reads it:
// host[:port], tcp://host:port, a path starting with / or ., unix://path.
func hostengineAddress(a string) (network, addr string) {
	switch {
	case strings.HasPrefix(a, "unix://"):
		return "unix", strings.TrimPrefix(a, "unix://")
	case strings.HasPrefix(a, "/"), strings.HasPrefix(a, "."):
		return "unix", a
	}
	a = strings.TrimPrefix(a, "tcp://")
	if _, _, err := net.SplitHostPort(a); err != nil {
		a = net.JoinHostPort(a, defaultPort)
	}
	return "tcp", a
}
