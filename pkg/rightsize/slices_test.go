package rightsize

import "testing"

// The compute slices of an instance come from its profile name's "Ng",
// those of a whole GPU from its model's largest profile; MIG energy
// accounting divides one by the other.
func TestSlices(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want int
		ok   bool
	}{
		{"1g.10gb", 1, true}, {"3g.40gb", 3, true}, {"7g.80gb", 7, true}, {"1g.10gb+me", 1, true},
		{"2g.35gb", 2, true}, {"12g.1tb", 12, true},
		{"1c.3g.40gb", 0, false}, {"g.10gb", 0, false}, {"3x.40gb", 0, false}, {"", 0, false},
		{"0g.5gb", 0, false}, {"3g", 0, false}, {"99999999999999999999g.1gb", 0, false},
	} {
		if got, ok := ProfileSlices(tc.name); got != tc.want || ok != tc.ok {
			t.Errorf("ProfileSlices(%q) = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		product string
		want    int
		ok      bool
	}{
		{"NVIDIA H100 80GB HBM3", 7, true}, {"NVIDIA A100-SXM4-40GB", 7, true}, {"NVIDIA H200", 7, true},
		{"NVIDIA A30", 0, false}, {"Tesla T4", 0, false},
	} {
		if got, ok := ComputeSlices(tc.product); got != tc.want || ok != tc.ok {
			t.Errorf("ComputeSlices(%q) = %d, %v; want %d, %v", tc.product, got, ok, tc.want, tc.ok)
		}
	}
}
