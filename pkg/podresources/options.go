package podresources

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Options are the kubelet pod-resources flags (--kubernetes.*, but the pod
// label ones).
type Options struct {
	// Enabled is auto (when the socket exists), true or false.
	Enabled         string
	Socket          string
	RefreshInterval time.Duration
	// ResourceNames are extra resource names, besides DefaultResourceNames.
	ResourceNames []string
	// GPUIDType is --kubernetes.gpu-id-type as given; IDType is it parsed,
	// set by Validate.
	GPUIDType   string
	IDType      IDType
	CallTimeout time.Duration

	socket, callTimeout *pflag.Flag
}

// AddFlags declares the flags on fs, bound to o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Enabled, "kubernetes.enabled", "auto", "Attribute GPUs to pods through the kubelet pod-resources API: auto (when the socket exists), true or false.")
	fs.StringVar(&o.Socket, "kubernetes.pod-resources-socket", DefaultSocket, "Path of the kubelet pod-resources unix socket.")
	fs.DurationVar(&o.RefreshInterval, "kubernetes.refresh-interval", 0, "Time between two pod-resources List calls, at least 100ms (0: the collect interval).")
	fs.StringSliceVar(&o.ResourceNames, "kubernetes.resource-names", nil, "Extra extended-resource names (globs allowed) that hold GPUs, besides nvidia.com/gpu, nvidia.com/gpu.shared and nvidia.com/mig-*.")
	fs.StringVar(&o.GPUIDType, "kubernetes.gpu-id-type", "auto", "Device id forms to accept from the kubelet: auto (every form), uid (GPU/MIG UUIDs, replicas), device-name (nvidiaN, GKE nvidiaN/giM) or dra.")
	fs.DurationVar(&o.CallTimeout, "kubernetes.timeout", 5*time.Second, "Longest time one pod-resources call may take, at most the refresh interval.")
	o.socket, o.callTimeout = fs.Lookup("kubernetes.pod-resources-socket"), fs.Lookup("kubernetes.timeout")
}

// Validate checks the flags, each error naming its flag, and fills the
// defaults: the refresh interval is collectInterval unless given, and a
// call timeout not given is cut to the refresh interval.
func (o *Options) Validate(collectInterval time.Duration) error {
	switch o.Enabled {
	case "auto", "true", "false":
	default:
		return fmt.Errorf("--kubernetes.enabled: want auto, true or false, got %q", o.Enabled)
	}
	if o.Enabled != "false" && strings.TrimSpace(o.Socket) == "" {
		return fmt.Errorf("--kubernetes.pod-resources-socket must not be empty while --kubernetes.enabled=%s", o.Enabled)
	}
	for _, name := range o.ResourceNames {
		if strings.TrimSpace(name) == "" {
			return fmt.Errorf("--kubernetes.resource-names: empty name in the list")
		}
		if _, err := path.Match(name, ""); err != nil {
			return fmt.Errorf("--kubernetes.resource-names: pattern %q: %w", name, err)
		}
	}
	var err error
	if o.IDType, err = ParseIDType(o.GPUIDType); err != nil {
		return fmt.Errorf("--kubernetes.gpu-id-type: %w", err)
	}
	if o.RefreshInterval, err = source.RefreshInterval("--kubernetes.refresh-interval", o.RefreshInterval, collectInterval); err != nil {
		return err
	}
	if o.CallTimeout < source.MinInterval {
		return fmt.Errorf("--kubernetes.timeout must be at least %s, got %s", source.MinInterval, o.CallTimeout)
	}
	if o.CallTimeout > o.RefreshInterval {
		if o.callTimeout != nil && o.callTimeout.Changed {
			return fmt.Errorf("--kubernetes.timeout (%s) must not exceed the refresh interval (%s)", o.CallTimeout, o.RefreshInterval)
		}
		o.CallTimeout = o.RefreshInterval
	}
	return nil
}

// GivenSocket is --kubernetes.pod-resources-socket when it was given,
// else "".
func (o *Options) GivenSocket() string {
	if o.socket != nil && o.socket.Changed {
		return o.Socket
	}
	return ""
}

// Config returns the client configuration the options describe.
func (o *Options) Config() Config {
	cfg := DefaultConfig()
	cfg.Socket, cfg.RefreshInterval, cfg.CallTimeout, cfg.IDType = o.Socket, o.RefreshInterval, o.CallTimeout, o.IDType
	cfg.ResourceNames = append(cfg.ResourceNames, o.ResourceNames...)
	return cfg
}

// Open starts the client when attribution is on: with Enabled true, or
// auto and the socket exists. socket, when not empty, replaces Socket (the
// simulated kubelet's). dra, when not nil, resolves DRA devices (see
// NewTableDRA). It returns nil when attribution is off.
func Open(o Options, socket string, dra DRADevices, logger *slog.Logger, reg prometheus.Registerer) (*Client, error) {
	cfg := o.Config()
	cfg.DRA = dra
	if socket != "" {
		cfg.Socket = socket
	}
	switch o.Enabled {
	case "false":
		return nil, nil
	case "auto":
		if _, err := bounded.Stat(context.Background(), cfg.Socket, cfg.CallTimeout); err != nil {
			logger.Info("kubelet pod-resources socket not found; pod attribution is off (set --kubernetes.enabled=true to wait for it)", "socket", cfg.Socket, "err", err)
			return nil, nil
		}
	}
	c, err := New(cfg, logger, reg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes pod attribution: %w", err)
	}
	logger.Info("pod attribution on", "socket", cfg.Socket, "refresh_interval", o.RefreshInterval)
	return c, nil
}
