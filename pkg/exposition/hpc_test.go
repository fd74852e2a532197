package exposition

import (
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// An HPC job holder writes hpc_job (dcgm-exporter's label, its
// hpcJobAttribute) and, when known, hpc_partition and hpc_user, sorted by
// name, in place of the pod labels; in dcgm naming err_code and err_msg
// sort before them, as dcgm-exporter sorts its attributes.
func TestHPCJobHolderLabels(t *testing.T) {
	t.Parallel()
	set := []fields.Field{mustField(t, "DCGM_FI_DEV_XID_ERRORS")}
	s := testSample(t, 1, set)
	s.Set(0, 0, source.IntValue(79))
	targets := []Holding{
		{Entity: 0, Holder: &Holder{HPCJob: "4242", HPCUser: "alice", HPCPartition: "gpu"}, Shared: true},
		{Entity: 0, Holder: &Holder{HPCJob: "4243"}, Shared: true},
	}
	for _, tc := range []struct {
		name   string
		opts   Options
		prefix string
		want   []string
	}{
		{"prometheus", Options{Naming: NamingPrometheus}, "gpu_pod_allocation_info{", []string{
			`,model="NVIDIA H100 80GB HBM3",hpc_job="4242",hpc_partition="gpu",hpc_user="alice",shared="true"} 1`,
			`,model="NVIDIA H100 80GB HBM3",hpc_job="4243",shared="true"} 1`,
		}},
		{"dcgm", Options{Naming: NamingDCGM}, "DCGM_FI_DEV_XID_ERRORS{", []string{
			`,err_code="79",err_msg="GPU has fallen off the bus",hpc_job="4242",hpc_partition="gpu",hpc_user="alice"} 79`,
			`,err_code="79",err_msg="GPU has fallen off the bus",hpc_job="4243"} 79`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := NewRenderer(tc.opts).Render(Input{Sample: s, Holdings: targets})
			var got []string
			for _, l := range strings.Split(string(p.Text), "\n") {
				if strings.HasPrefix(l, tc.prefix) {
					got = append(got, l)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("series = %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasSuffix(got[i], w) {
					t.Errorf("series %d = %s, want it to end in %s", i, got[i], w)
				}
				for _, pod := range []string{"namespace=", "pod=", "container="} {
					if strings.Contains(got[i], pod) {
						t.Errorf("job series carries %s: %s", pod, got[i])
					}
				}
			}
			parseText(t, p.Text)
		})
	}
}
