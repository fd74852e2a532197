package nvml

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/cgocall"
)

// DriverFix says how to give the exporter the NVIDIA driver.
const DriverFix = "install the NVIDIA driver and run the exporter with the NVIDIA container runtime (runtimeClassName: nvidia, NVIDIA_DRIVER_CAPABILITIES=compute,utility)"

// Kind describes --source=nvml to pkg/sourceopen's table.
func Kind() source.Kind {
	return source.Kind{Name: "nvml", Usage: "nvml", NewOptions: func() source.Options { return &Options{} }}
}

// Options are the NVML source's: it has no flags of its own.
type Options struct{}

// AddFlags declares nothing.
func (*Options) AddFlags(*pflag.FlagSet) {}

// Validate has nothing to check.
func (*Options) Validate() error { return nil }

// Open opens the NVML source.
func (*Options) Open(_ context.Context, s source.Settings, logger *slog.Logger) (*source.Opened, error) {
	src, err := New(Config{CallTimeout: cgocall.CallTimeout(s.CollectTimeout), GPUs: s.GPUs, FabricInterval: s.FabricInterval}, logger)
	if err != nil {
		return nil, fmt.Errorf("--source=nvml: %w", err)
	}
	opened := &source.Opened{Source: src}
	opened.OnClose(func() { _ = src.Close() })
	return opened, nil
}

// Traits: NVML reads this host's GPUs and no profiling field.
func (*Options) Traits() source.Traits {
	return source.Traits{Checkup: source.Checkup{
		Libraries:    []string{cgocall.LibDCGM, cgocall.LibNVML},
		LocalDevices: true,
		Profiling:    source.ProfilingNone,
		Why:          func(string) string { return "" },
		Fix:          func(missing func(string) bool) string { return Fix(missing(cgocall.LibNVML)) },
	}}
}

// Fix says what to do when NVML does not open or answer; noLibrary says
// that its library is absent.
func Fix(noLibrary bool) string {
	if noLibrary {
		return cgocall.LibNVML + " not found: " + DriverFix
	}
	return "NVML is installed but does not answer: check the driver with nvidia-smi and the device nodes (see the devices check)"
}
