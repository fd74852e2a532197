package rightsize

import (
	"fmt"
	"math"
)

// Size is what a workload holds per replica: a MIG profile, or a count of
// whole GPUs when Profile is empty.
type Size struct {
	Profile string
	GPUs    int
}

func (s Size) String() string {
	if s.Profile != "" {
		return s.Profile
	}
	if s.GPUs < 1 {
		// Never a signed or overflowed count in a report.
		return "no GPU"
	}
	return fmt.Sprintf("%d GPU", s.GPUs)
}

// Usage is what was observed of a workload over the window.
type Usage struct {
	Model   string // a name in Models
	Current Size
	// PeakMemoryBytes is the most memory used on one device.
	PeakMemoryBytes float64
	// P95Activity is the 95th percentile of the busiest device's activity
	// (0..1) at the current size.
	P95Activity float64
	// AllocatedGPUHours over the window, in whole-GPU equivalents.
	AllocatedGPUHours float64
}

// Recommendation is the size a workload should request.
type Recommendation struct {
	Size Size
	// Keep is true when Size is the current size.
	Keep bool
	// FreedGPUHours are the GPU-hours over the window the change would
	// have freed; negative when the workload needs more.
	FreedGPUHours float64
}

const gb = 1e9

// Recommend picks the smallest MIG profile of u.Model whose memory covers
// the peak × (1 + headroom) and whose slices/7 cover the compute the p95
// activity needs, else the whole-GPU count that covers the compute.
func Recommend(u Usage, headroom float64) (Recommendation, error) {
	m, ok := ModelByName(u.Model)
	if !ok {
		return Recommendation{}, fmt.Errorf("GPU model %q: no MIG profiles known", u.Model)
	}
	if headroom < 0 || math.IsNaN(headroom) {
		return Recommendation{}, fmt.Errorf("headroom %v: must be 0 or more", headroom)
	}
	cur, err := m.gpus(u.Current)
	if err != nil {
		return Recommendation{}, err
	}
	activity := min(max(u.P95Activity, 0), 1)
	compute := activity * m.computeGPUs(u.Current) // in whole GPUs
	memGB := u.PeakMemoryBytes * (1 + headroom) / gb

	var rec Size
	if compute <= 1 {
		for _, p := range m.Profiles {
			if p.MemoryGB >= memGB && float64(p.Slices)/Slices >= compute {
				rec = Size{Profile: p.Name}
				break
			}
		}
	}
	if rec.Profile == "" {
		rec = Size{GPUs: max(1, int(math.Ceil(compute-1e-9)))}
		// A whole GPU of this model is also 7g: keep the whole-GPU form
		// unless the workload already runs on MIG.
		if rec.GPUs == 1 && u.Current.Profile != "" {
			rec = Size{Profile: m.Profiles[len(m.Profiles)-1].Name}
		}
	}
	// 7g is the whole GPU: a whole-GPU workload keeps its whole-GPU form.
	if p, ok := m.profile(rec.Profile); ok && p.Slices == Slices && u.Current.Profile == "" {
		rec = Size{GPUs: 1}
	}
	next, err := m.gpus(rec)
	if err != nil {
		return Recommendation{}, err
	}
	r := Recommendation{Size: rec, Keep: rec == u.Current}
	if !r.Keep && cur > 0 {
		r.FreedGPUHours = u.AllocatedGPUHours * (1 - next/cur)
	}
	return r, nil
}

// gpus is the size in whole-GPU equivalents, a MIG profile counted as the
// fraction of the GPU its memory is (as the recording rules count it).
func (m Model) gpus(s Size) (float64, error) {
	if s.Profile == "" {
		if s.GPUs < 1 {
			return 0, fmt.Errorf("size: %d GPUs, want 1 or more", s.GPUs)
		}
		return float64(s.GPUs), nil
	}
	p, ok := m.profile(s.Profile)
	if !ok {
		return 0, fmt.Errorf("size: MIG profile %q is not one of %s's", s.Profile, m.Name)
	}
	return p.MemoryGB / m.MemoryGB, nil
}

// computeGPUs is the compute of a size in whole GPUs: slices/7 for MIG.
func (m Model) computeGPUs(s Size) float64 {
	if p, ok := m.profile(s.Profile); ok {
		return float64(p.Slices) / Slices
	}
	return float64(s.GPUs)
}
