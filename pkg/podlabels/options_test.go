package podlabels

import (
	"log/slog"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/flagtest"
)

func TestOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		args       []string
		attributed bool
		want       string // Validate's error, else Open's; "" for none
		enabled    bool
	}{
		{"off", nil, false, "", false},
		{"labels without attribution", []string{"--kubernetes.pod-labels=team"}, false, "pod attribution must be on (--kubernetes.enabled)", true},
		{"uid without attribution", []string{"--kubernetes.pod-uid"}, false, "pod attribution must be on", true},
		{"outside a cluster", []string{"--kubernetes.pod-uid"}, true, "--kubernetes.pod-labels/--kubernetes.pod-uid: ", true},
		{"workloads without attribution", []string{"--kubernetes.workload-info"}, false, "--kubernetes.workload-info describes the pods holding GPUs: pod attribution must be on", true},
		{"workloads outside a cluster", []string{"--kubernetes.workload-info"}, true, "--kubernetes.workload-info: podlabels: ", true},
		{"bad expression", []string{"--kubernetes.pod-labels=team("}, true, "--kubernetes.pod-labels: ", false},
		{"limit 0", []string{"--kubernetes.pod-labels-limit=0"}, true, "--kubernetes.pod-labels-limit must be 1..12, got 0", false},
		{"limit 13", []string{"--kubernetes.pod-labels-limit=13"}, true, "--kubernetes.pod-labels-limit must be 1..12, got 13", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var o Options
			err := flagtest.Validate(t, &o, tc.args...)
			if err == nil {
				if o.Enabled() != tc.enabled {
					t.Errorf("Enabled = %v, want %v", o.Enabled(), tc.enabled)
				}
				var s *Store
				// The node name is valid, so that only the missing cluster fails.
				s, err = Open(o, "node-1", tc.attributed, slog.New(slog.DiscardHandler), nil)
				if s != nil {
					s.Close()
					t.Fatal("a store outside a cluster")
				}
			}
			flagtest.WantErr(t, err, tc.want)
		})
	}
}
