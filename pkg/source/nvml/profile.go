package nvml

import (
	"strconv"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// migProfile returns the GPU instance profile of a MIG device ("3g.20gb").
// NVML names a MIG device after its parent and profile ("NVIDIA
// A100-SXM4-40GB MIG 1c.3g.20gb"); a compute instance smaller than its GPU
// instance adds a "<n>c." prefix, which is dropped because the entity is the
// GPU instance. Without a usable name the profile is derived from the
// device's attributes: its slice count and memory rounded up to whole GB, as
// NVIDIA names profiles.
func migProfile(name string, giSlices uint32, memMiB uint64) string {
	p := strings.TrimSpace(validText(name))
	if i := strings.LastIndex(p, "MIG "); i >= 0 {
		p = strings.TrimSpace(p[i+len("MIG "):])
	}
	if c, rest, ok := strings.Cut(p, "c."); ok && isDigits(c) {
		p = rest
	}
	if g, rest, ok := strings.Cut(p, "g."); ok && isDigits(g) && strings.Contains(rest, "gb") {
		return p
	}
	if giSlices == 0 || memMiB == 0 {
		return ""
	}
	return strconv.FormatUint(uint64(giSlices), 10) + "g." + strconv.FormatUint((memMiB+1023)/1024, 10) + "gb"
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// migDeviceProfile returns a MIG device's own profile: its name without
// the parent's and "MIG " ("1c.3g.71gb" for a compute instance smaller than
// its GPU instance, as `nvidia-smi -L` prints "MIG 1c.3g.71gb Device 0"),
// else one derived from the slice counts of its attributes.
func migDeviceProfile(name, giProfile string, ciSlices, giSlices uint32) string {
	p := strings.TrimSpace(validText(name))
	if i := strings.LastIndex(p, "MIG "); i >= 0 {
		p = strings.TrimSpace(p[i+len("MIG "):])
		if p == giProfile || strings.HasSuffix(p, "."+giProfile) && giProfile != "" {
			return p
		}
	}
	return source.ComputeInstanceProfile(giProfile, int(ciSlices), int(giSlices))
}
