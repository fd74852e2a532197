package rightsize

import "testing"

// The MIG profile table is in GB, as NVIDIA names the profiles (1g.10gb:
// 10 GB), and a workload's peak is compared in the same unit. A peak just
// over a profile's GB is under it in GiB (10.2e9 bytes is 9.5 GiB):
// reading the peak in GiB would pick a profile ~7 % too small. Kills
// `gb = 1 << 30` (issue 34), and its converse, a table read as GiB.
func TestMutationProfileMemoryInGB(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		peak float64
		want string
	}{
		{"just over 10 GB needs the 20 GB 1g", 10.2e9, "1g.20gb"},
		{"exactly 10 GB fits 1g.10gb", 10e9, "1g.10gb"},
		{"just over 20 GB needs 3g.40gb", 20.5e9, "3g.40gb"},
		{"a 10 GiB peak (10.74 GB) does not fit 1g.10gb", 1 << 30 * 10, "1g.20gb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Recommend(Usage{Model: "H100-80GB", Current: Size{GPUs: 1}, PeakMemoryBytes: tc.peak, P95Activity: 0.05, AllocatedGPUHours: 10}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got.Size.Profile != tc.want {
				t.Errorf("peak %.4g bytes, no headroom: Recommend = %v, want %s", tc.peak, got.Size, tc.want)
			}
		})
	}
}
