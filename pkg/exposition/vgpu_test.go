package exposition

import (
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// With DCGMOptions.VirtualGPUs (dcgm-exporter's --kubernetes-virtual-gpus),
// a container holding a replica of a time-sliced GPU carries vgpu="<N>",
// after pod_uid as dcgm-exporter sorts its attributes; a whole-GPU holder
// and the other namings carry none.
func TestDCGMNamingVGPULabel(t *testing.T) {
	t.Parallel()
	s := testSample(t, 1, []fields.Field{mustField(t, "DCGM_FI_DEV_GPU_UTIL")})
	shared := []Holding{
		{Entity: 0, Holder: &Holder{Namespace: "ml", Pod: "a", Container: "main", PodUID: "u1", VGPU: "2"}, Shared: true},
		{Entity: 0, Holder: &Holder{Namespace: "ml", Pod: "b", Container: "main", VGPU: "0"}, Shared: true},
	}
	whole := []Holding{{Entity: 0, Holder: &Holder{Namespace: "ml", Pod: "c", Container: "main"}}}
	cases := []struct {
		name    string
		opts    Options
		targets []Holding
		want    []string // series label tails, in page order
	}{
		{"virtual gpus", Options{Naming: NamingDCGM, DCGM: DCGMOptions{VirtualGPUs: true}}, shared,
			[]string{`container="main",namespace="ml",pod="a",pod_uid="u1",vgpu="2"} 1`, `container="main",namespace="ml",pod="b",vgpu="0"} 1`}},
		{"flag off", Options{Naming: NamingDCGM}, shared,
			[]string{`container="main",namespace="ml",pod="a",pod_uid="u1"} 1`, `container="main",namespace="ml",pod="b"} 1`}},
		{"whole gpu", Options{Naming: NamingDCGM, DCGM: DCGMOptions{VirtualGPUs: true}}, whole,
			[]string{`container="main",namespace="ml",pod="c"} 1`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := NewRenderer(tc.opts).Render(Input{Sample: s, Holdings: tc.targets})
			var got []string
			for _, l := range strings.Split(string(p.Text), "\n") {
				if strings.HasPrefix(l, "DCGM_FI_DEV_GPU_UTIL{") {
					got = append(got, l)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("series = %q, want %d", got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasSuffix(got[i], ","+w) {
					t.Errorf("series %d = %s, want it to end in %s", i, got[i], w)
				}
			}
			parseText(t, p.Text)
		})
	}
	p := NewRenderer(Options{Naming: NamingPrometheus, DCGM: DCGMOptions{VirtualGPUs: true}}).Render(Input{Sample: s, Holdings: shared})
	if strings.Contains(string(p.Text), "vgpu=") {
		t.Errorf("prometheus naming wrote a vgpu label:\n%s", p.Text)
	}
}
