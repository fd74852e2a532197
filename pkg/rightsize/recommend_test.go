package rightsize

import (
	"math"
	"strings"
	"testing"
)

func TestRecommend(t *testing.T) {
	t.Parallel()
	whole := func(n int) Size { return Size{GPUs: n} }
	mig := func(p string) Size { return Size{Profile: p} }
	tests := []struct {
		name  string
		usage Usage
		want  Size
		keep  bool
		freed float64
	}{
		{
			name:  "8 GB peak, low activity on a whole H100: 1g.10gb",
			usage: Usage{Model: "H100-80GB", Current: whole(1), PeakMemoryBytes: 8e9, P95Activity: 0.1, AllocatedGPUHours: 168},
			want:  mig("1g.10gb"), freed: 168 * (1 - 10.0/80),
		},
		{
			name:  "memory with headroom needs the 20 GB 1g",
			usage: Usage{Model: "H100-80GB", Current: whole(1), PeakMemoryBytes: 9e9, P95Activity: 0.1, AllocatedGPUHours: 168},
			want:  mig("1g.20gb"), freed: 168 * (1 - 20.0/80),
		},
		{
			name:  "compute needs 3 slices though memory is small",
			usage: Usage{Model: "A100-80GB", Current: whole(1), PeakMemoryBytes: 5e9, P95Activity: 0.4, AllocatedGPUHours: 100},
			want:  mig("3g.40gb"), freed: 50,
		},
		{
			name:  "saturated trainer on 8 GPUs: keep",
			usage: Usage{Model: "H100-80GB", Current: whole(8), PeakMemoryBytes: 70e9, P95Activity: 0.95, AllocatedGPUHours: 1344},
			want:  whole(8), keep: true,
		},
		{
			name:  "8 GPUs at 30%: 3 GPUs",
			usage: Usage{Model: "H200-141GB", Current: whole(8), PeakMemoryBytes: 100e9, P95Activity: 0.3, AllocatedGPUHours: 800},
			want:  whole(3), freed: 500,
		},
		{
			name:  "memory needs the whole GPU: keep 1 GPU, not 7g",
			usage: Usage{Model: "A100-40GB", Current: whole(1), PeakMemoryBytes: 30e9, P95Activity: 0.2, AllocatedGPUHours: 24},
			want:  whole(1), keep: true,
		},
		{
			name:  "MIG instance right-sized: keep",
			usage: Usage{Model: "B200-180GB", Current: mig("2g.45gb"), PeakMemoryBytes: 30e9, P95Activity: 0.9, AllocatedGPUHours: 42},
			want:  mig("2g.45gb"), keep: true,
		},
		{
			name:  "memory near the 1g.10gb limit grows to 1g.20gb: negative freed hours",
			usage: Usage{Model: "A100-80GB", Current: mig("1g.10gb"), PeakMemoryBytes: 9e9, P95Activity: 0.5, AllocatedGPUHours: 10},
			want:  mig("1g.20gb"), freed: 10 * (1 - 2),
		},
		{
			name:  "saturated 1g instance: keep (saturation hides further demand)",
			usage: Usage{Model: "A100-40GB", Current: mig("1g.5gb"), PeakMemoryBytes: 3e9, P95Activity: 1, AllocatedGPUHours: 10},
			want:  mig("1g.5gb"), keep: true,
		},
		{
			name:  "idle-but-allocated notebook on a whole H200: the smallest profile",
			usage: Usage{Model: "H200-141GB", Current: whole(1), PeakMemoryBytes: 2e9, P95Activity: 0, AllocatedGPUHours: 168},
			want:  mig("1g.18gb"), freed: 168 * (1 - 18.0/141),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Recommend(tt.usage, 0.2)
			if err != nil {
				t.Fatal(err)
			}
			if got.Size != tt.want || got.Keep != tt.keep || math.Abs(got.FreedGPUHours-tt.freed) > 1e-9 {
				t.Errorf("Recommend = %+v, want size %v keep %v freed %v", got, tt.want, tt.keep, tt.freed)
			}
		})
	}
}

func TestRecommendRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		usage    Usage
		headroom float64
		want     string
	}{
		{"unknown model", Usage{Model: "T4", Current: Size{GPUs: 1}}, 0.2, `GPU model "T4"`},
		{"profile of another model", Usage{Model: "A100-40GB", Current: Size{Profile: "1g.18gb"}}, 0.2, `MIG profile "1g.18gb" is not one of A100-40GB's`},
		{"no GPUs", Usage{Model: "A100-40GB"}, 0.2, "0 GPUs"},
		{"negative headroom", Usage{Model: "A100-40GB", Current: Size{GPUs: 1}}, -1, "headroom -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Recommend(tt.usage, tt.headroom)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// Every model's profiles are listed smallest first, end in the whole GPU
// (7 slices, all the memory), and their names spell slices and memory.
func TestModelsConsistent(t *testing.T) {
	t.Parallel()
	for _, m := range Models {
		last := m.Profiles[len(m.Profiles)-1]
		if last.Slices != Slices || last.MemoryGB != m.MemoryGB {
			t.Errorf("%s: last profile %s is not the whole GPU", m.Name, last.Name)
		}
		for i, p := range m.Profiles {
			var s int
			var mem float64
			if _, err := fmtSscanf(p.Name, &s, &mem); err != nil || s != p.Slices || mem != p.MemoryGB {
				t.Errorf("%s: profile %s does not match slices %d memory %v", m.Name, p.Name, p.Slices, p.MemoryGB)
			}
			if i > 0 && (p.Slices < m.Profiles[i-1].Slices || (p.Slices == m.Profiles[i-1].Slices && p.MemoryGB <= m.Profiles[i-1].MemoryGB)) {
				t.Errorf("%s: profile %s is not after %s in size", m.Name, p.Name, m.Profiles[i-1].Name)
			}
		}
	}
}
