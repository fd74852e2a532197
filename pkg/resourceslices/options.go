package resourceslices

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

// Options are the DRA attribution flag: --kubernetes.dra.
type Options struct {
	// Mode is auto, true or false.
	Mode string
}

// AddFlags declares --kubernetes.dra on fs, bound to o.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Mode, "kubernetes.dra", "auto", "Resolve DRA devices (MIG devices of NVIDIA's DRA driver, devices of any DRA driver by uuid) through the node's ResourceSlices: auto (when in a pod with NODE_NAME; needs get/list/watch on resourceslices.resource.k8s.io), true (required) or false (whole GPUs by minor number only).")
}

// Validate checks the flag, naming it in the error.
func (o *Options) Validate() error {
	switch o.Mode {
	case "auto", "true", "false":
		return nil
	}
	return fmt.Errorf("--kubernetes.dra: want auto, true or false, got %q", o.Mode)
}

// Open starts the ResourceSlice informer of node in the background when
// DRA attribution is on; attributed says whether pod attribution is. It
// returns nil when off. With auto, what is missing (attribution, NODE_NAME,
// a service account) turns it off with a log line; with true, it is an
// error. Lookups fail until the informer has synced; Run never blocks
// start-up, and a refusal (403) or an API server without resource.k8s.io
// is logged once and retried (see Store.State).
func Open(ctx context.Context, o Options, node string, attributed bool, logger *slog.Logger) (*Store, error) {
	if o.Mode == "false" {
		return nil, nil
	}
	required := o.Mode == "true"
	off := func(err error) (*Store, error) {
		if required {
			return nil, fmt.Errorf("--kubernetes.dra=true: %w", err)
		}
		logger.Info("DRA attribution through ResourceSlices is off; DRA whole GPUs are matched by minor number, MIG devices are not attributed", "why", err.Error())
		return nil, nil
	}
	if !attributed {
		return off(errors.New("pod attribution is off (--kubernetes.enabled)"))
	}
	if node == "" {
		return off(errors.New("NODE_NAME is empty (set it from the downward API, fieldRef spec.nodeName)"))
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return off(fmt.Errorf("not in a pod with a service account: %w", err))
	}
	cfg.UserAgent = "gpu-exporter"
	return Start(ctx, cfg, node, logger)
}

// Start starts a store on cfg in the background; cancel ctx and call Wait
// to stop it.
func Start(ctx context.Context, cfg *rest.Config, node string, logger *slog.Logger) (*Store, error) {
	s, err := New(cfg, node, logger)
	if err != nil {
		return nil, err
	}
	s.wg.Go(func() { s.Run(ctx) })
	return s, nil
}
