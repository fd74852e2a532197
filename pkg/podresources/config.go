package podresources

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"time"
)

// DefaultSocket is where the kubelet serves the pod-resources API.
const DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// DefaultResourceNames returns the resource names attributed by default: the
// NVIDIA device plugin's whole-GPU, shared (time-slicing / MPS with
// renameByDefault) and MIG resources, and the NVIDIA DRA driver.
func DefaultResourceNames() []string {
	return []string{"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*", "gpu.nvidia.com"}
}

// Config configures a Client.
type Config struct {
	// Socket is the kubelet pod-resources unix socket.
	Socket string
	// RefreshInterval is the time between two successful refreshes (one List
	// each).
	RefreshInterval time.Duration
	// CallTimeout bounds each kubelet call, connecting included. At most
	// RefreshInterval.
	CallTimeout time.Duration
	// ResourceNames are the device-plugin resource names and DRA driver names
	// whose devices are attributed: exact names or path.Match globs.
	ResourceNames []string
	// IDType says which device-id forms device-plugin ids may take.
	IDType IDType
	// MinBackoff is the wait before the first retry after a failed refresh;
	// each further failure doubles it, up to MaxBackoff.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// DRA says what the devices of DRA claims are (the node's
	// ResourceSlices); nil resolves whole GPUs by minor number only.
	DRA DRADevices
}

// DefaultConfig returns a configuration that works on a standard node.
func DefaultConfig() Config {
	return Config{
		Socket:          DefaultSocket,
		RefreshInterval: 10 * time.Second,
		CallTimeout:     5 * time.Second,
		ResourceNames:   DefaultResourceNames(),
		IDType:          IDTypeAuto,
		MinBackoff:      time.Second,
		MaxBackoff:      30 * time.Second,
	}
}

// validate checks cfg; each error names the offending field. The socket path
// is made absolute.
func (cfg *Config) validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("podresources config: %s %s", field, fmt.Sprintf(format, args...)))
	}
	if cfg.Socket == "" {
		bad("Socket", "is empty")
	} else if abs, err := filepath.Abs(cfg.Socket); err != nil {
		bad("Socket", "%q: %v", cfg.Socket, err)
	} else {
		cfg.Socket = abs
	}
	if cfg.RefreshInterval <= 0 {
		bad("RefreshInterval", "must be positive, got %s", cfg.RefreshInterval)
	}
	if cfg.CallTimeout <= 0 || (cfg.RefreshInterval > 0 && cfg.CallTimeout > cfg.RefreshInterval) {
		bad("CallTimeout", "must be positive and at most RefreshInterval (%s), got %s", cfg.RefreshInterval, cfg.CallTimeout)
	}
	if len(cfg.ResourceNames) == 0 {
		bad("ResourceNames", "is empty: no device would be attributed")
	}
	for _, name := range cfg.ResourceNames {
		if name == "" {
			bad("ResourceNames", "has an empty name")
		} else if _, err := path.Match(name, ""); err != nil {
			bad("ResourceNames", "pattern %q: %v", name, err)
		}
	}
	if !cfg.IDType.valid() {
		bad("IDType", "is %s, not one of auto, uid, device-name, dra", cfg.IDType)
	}
	if cfg.MinBackoff <= 0 {
		bad("MinBackoff", "must be positive, got %s", cfg.MinBackoff)
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		bad("MaxBackoff", "must be at least MinBackoff (%s), got %s", cfg.MinBackoff, cfg.MaxBackoff)
	}
	return errors.Join(errs...)
}
