package podlabels

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

func TestNewConfigErrors(t *testing.T) {
	t.Parallel()
	team := regexp.MustCompile("^team$")
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error
	}{
		{"empty node", Config{UID: true}, "NODE_NAME is not set"},
		{"node not a node name", Config{Node: "Node_1", UID: true}, `NODE_NAME "Node_1" is not a node name`},
		{"nothing asked", Config{Node: "n1"}, "none of --kubernetes.pod-labels, --kubernetes.pod-uid and --kubernetes.workload-info"},
		{"negative resync", Config{Node: "n1", UID: true, ResyncPeriod: -time.Second}, "resync period must not be negative"},
		{"cap too high", Config{Node: "n1", Allowlist: team, MaxLabels: MaxLabelsLimit + 1}, "--kubernetes.pod-labels-limit must be between 1 and 12 (series must stay well under 30 labels), got 13"},
		{"cap negative", Config{Node: "n1", Allowlist: team, MaxLabels: -1}, "--kubernetes.pod-labels-limit"},
		{"negative sync timeout", Config{Node: "n1", UID: true, SyncTimeout: -time.Second}, "sync timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(fakePods(fake.NewClientset()), tt.cfg, nil, prometheus.NewRegistry())
			if err == nil {
				s.Close()
				t.Fatalf("New(%+v) succeeded, want an error containing %q", tt.cfg, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%+v) error = %q, want it to contain %q", tt.cfg, err, tt.want)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	s, err := New(fakePods(fake.NewClientset()), Config{Node: "n1", UID: true}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.cfg.MaxLabels != DefaultMaxLabels || s.cfg.SyncTimeout != DefaultSyncTimeout || s.cfg.ResyncPeriod != 0 {
		t.Errorf("defaults: MaxLabels %d, SyncTimeout %s, ResyncPeriod %s", s.cfg.MaxLabels, s.cfg.SyncTimeout, s.cfg.ResyncPeriod)
	}
}

func TestNewNilClient(t *testing.T) {
	t.Parallel()
	if _, err := New(nil, Config{Node: "n1", UID: true}, nil, nil); err == nil {
		t.Fatal("New(nil client) succeeded")
	}
}

func TestNewRegistersOnce(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	cfg := Config{Node: "n1", UID: true}
	s, err := New(fakePods(fake.NewClientset()), cfg, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(fakePods(fake.NewClientset()), cfg, nil, reg); err == nil || !strings.Contains(err.Error(), "registering self-metrics") {
		t.Errorf("second New on one registry: err = %v, want a registration error", err)
	}
	s.Close() // unregisters: a new Store may register again
	s2, err := New(fakePods(fake.NewClientset()), cfg, nil, reg)
	if err != nil {
		t.Fatalf("New after Close: %v", err)
	}
	s2.Close()
}

// TestNewInClusterOutsideCluster: not t.Parallel (t.Setenv).
func TestNewInClusterOutsideCluster(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	_, err := NewInCluster(Config{Node: "n1", UID: true}, nil, nil)
	if !errors.Is(err, rest.ErrNotInCluster) {
		t.Fatalf("NewInCluster outside a cluster: err = %v, want rest.ErrNotInCluster", err)
	}
	if !strings.Contains(err.Error(), "--kubernetes.pod-labels and --kubernetes.pod-uid need the exporter to run in a Kubernetes pod") {
		t.Errorf("error does not say what needs the cluster: %v", err)
	}
	// The configuration is checked first: its error is the more useful one.
	if _, err := NewInCluster(Config{UID: true}, nil, nil); err == nil || !strings.Contains(err.Error(), "NODE_NAME is not set") {
		t.Errorf("NewInCluster without a node: err = %v, want the NODE_NAME error", err)
	}
}

func TestParseAllowlist(t *testing.T) {
	t.Parallel()
	if re, err := ParseAllowlist(""); re != nil || err != nil {
		t.Errorf(`ParseAllowlist("") = %v, %v; want nil, nil`, re, err)
	}
	if _, err := ParseAllowlist("team|("); err == nil || !strings.HasPrefix(err.Error(), "--kubernetes.pod-labels: ") {
		t.Errorf("invalid expression: err = %v, want one naming --kubernetes.pod-labels", err)
	}
	re, err := ParseAllowlist(`team|app\.kubernetes\.io/.*`)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{
		"team": true, "app.kubernetes.io/name": true, "app.kubernetes.io/instance": true,
		"teams": false, "my-team": false, "xapp.kubernetes.io/name": false,
	} {
		if got := re.MatchString(key); got != want {
			t.Errorf("allowlist matches %q = %v, want %v", key, got, want)
		}
	}
}
