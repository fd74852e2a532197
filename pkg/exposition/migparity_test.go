package exposition

import (
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// migNode is GPU 0 in MIG mode with two GPU instances and GPU 1 without
// MIG, with DCGM_FI_DEV_FB_USED (MiB) and DCGM_FI_DEV_GPU_TEMP set: the GPU
// row of GPU 0 reports the whole GPU (30000 = both instances and more),
// each instance its own memory.
func migNode(t *testing.T) *source.Sample {
	t.Helper()
	set := []fields.Field{mustField(t, "DCGM_FI_DEV_FB_USED"), mustField(t, "DCGM_FI_DEV_GPU_TEMP")}
	s := testSample(t, 2, set)
	for _, gi := range []int{1, 2} {
		e := s.Inventory.Entities[0]
		e.Kind, e.GPUInstance, e.MIGProfile = source.GPUInstance, gi, "3g.40gb"
		s.Inventory.Entities = append(s.Inventory.Entities, e)
		s.Values = append(s.Values, source.Value{}, source.Value{})
	}
	s.Set(0, 0, source.IntValue(30000))
	s.Set(1, 0, source.IntValue(5000))
	s.Set(2, 0, source.IntValue(10000))
	s.Set(3, 0, source.IntValue(19000))
	s.Set(0, 1, source.IntValue(61))
	s.Set(1, 1, source.IntValue(40))
	return s
}

// Under dcgm naming a MIG GPU's instance-level fields are exported for its
// instances only, as dcgm-exporter (which monitors the GPU instances of a
// MIG GPU, not the GPU) does: sum(DCGM_FI_DEV_FB_USED) over the node is the
// instances' memory plus the non-MIG GPUs', with no GPU row counted twice.
// GPU-level fields are exported on each instance with the GPU's value, as
// DCGM answers them on a GPU instance. Prometheus naming is unchanged.
func TestDCGMNamingMIGNoDoubleCount(t *testing.T) {
	t.Parallel()
	cases := []struct {
		naming             Naming
		family, tempFamily string
		wantSum            float64
		wantRows, tempRows int
	}{
		{NamingDCGM, "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", 10000 + 19000 + 5000, 3, 3},
		{NamingPrometheus, "gpu_memory_used_bytes", "gpu_temperature_celsius", float64(30000+5000+10000+19000) * (1 << 20), 4, 2},
	}
	for _, tc := range cases {
		t.Run(tc.naming.String(), func(t *testing.T) {
			t.Parallel()
			s := migNode(t)
			p := NewRenderer(Options{Naming: tc.naming}).Render(Input{Sample: s, Holdings: allTargets(s)})
			fams := parseText(t, p.Text)
			fb := fams[tc.family]
			if fb == nil {
				t.Fatalf("no %s family on the page:\n%s", tc.family, p.Text)
			}
			sum := 0.0
			for _, m := range fb.Metric {
				sum += metricValue(m)
			}
			if sum != tc.wantSum || len(fb.Metric) != tc.wantRows {
				t.Errorf("sum(%s) = %v over %d series, want %v over %d\n%s", tc.family, sum, len(fb.Metric), tc.wantSum, tc.wantRows, p.Text)
			}
			temp := fams[tc.tempFamily]
			if temp == nil || len(temp.Metric) != tc.tempRows {
				t.Errorf("%s: want %d series\n%s", tc.tempFamily, tc.tempRows, p.Text)
			}
			if tc.naming == NamingDCGM {
				// Each instance of the MIG GPU repeats the GPU's 61 °C.
				for _, m := range temp.GetMetric() {
					if l := labelMap(m); l["GPU_I_ID"] != "" && metricValue(m) != 61 {
						t.Errorf("%s on instance %s = %v, want the GPU's 61", tc.tempFamily, l["GPU_I_ID"], metricValue(m))
					}
				}
			}
		})
	}
}
