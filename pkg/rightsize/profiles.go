// Package rightsize holds the MIG profiles of each GPU model and picks the
// smallest GPU or MIG size a workload's observed usage fits.
package rightsize

import "strings"

// Profile is one MIG GPU-instance profile.
type Profile struct {
	// Name as nvidia-smi and the mig.strategy resources spell it, e.g. 1g.10gb.
	Name string
	// MemoryGB is the memory in the profile's name (GB, as NVIDIA names it).
	MemoryGB float64
	// Slices is the compute slices out of 7.
	Slices int
}

// Model is a GPU model and the MIG profiles it offers.
type Model struct {
	Name     string
	MemoryGB float64
	Profiles []Profile
}

// Slices of a whole GPU in MIG terms.
const Slices = 7

// Models are the GPU models whose MIG profiles are known, from NVIDIA's
// Multi-Instance GPU User Guide, "Supported MIG Profiles"
// (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html)
// and "Supported GPUs" for the memory sizes. Only the profiles without
// media extensions (+me) and without the shared-memory variants are listed;
// the compute slices are the "Ng" of the name. Listed smallest first.
// The H200 and B200 names are the ones the GPU Operator's mig-parted
// configurations and cloud providers' MIG instance lists use (B200:
// 1g.23gb … 7g.180gb; H200: 1g.18gb, 2g.35gb, …); they have not been
// checked against `nvidia-smi mig -lgip` on those GPUs here.
var Models = []Model{
	{Name: "A100-40GB", MemoryGB: 40, Profiles: []Profile{
		{"1g.5gb", 5, 1}, {"1g.10gb", 10, 1}, {"2g.10gb", 10, 2}, {"3g.20gb", 20, 3}, {"4g.20gb", 20, 4}, {"7g.40gb", 40, 7},
	}},
	{Name: "A100-80GB", MemoryGB: 80, Profiles: []Profile{
		{"1g.10gb", 10, 1}, {"1g.20gb", 20, 1}, {"2g.20gb", 20, 2}, {"3g.40gb", 40, 3}, {"4g.40gb", 40, 4}, {"7g.80gb", 80, 7},
	}},
	{Name: "H100-80GB", MemoryGB: 80, Profiles: []Profile{
		{"1g.10gb", 10, 1}, {"1g.20gb", 20, 1}, {"2g.20gb", 20, 2}, {"3g.40gb", 40, 3}, {"4g.40gb", 40, 4}, {"7g.80gb", 80, 7},
	}},
	{Name: "H200-141GB", MemoryGB: 141, Profiles: []Profile{
		{"1g.18gb", 18, 1}, {"1g.35gb", 35, 1}, {"2g.35gb", 35, 2}, {"3g.71gb", 71, 3}, {"4g.71gb", 71, 4}, {"7g.141gb", 141, 7},
	}},
	{Name: "B200-180GB", MemoryGB: 180, Profiles: []Profile{
		{"1g.23gb", 23, 1}, {"1g.45gb", 45, 1}, {"2g.45gb", 45, 2}, {"3g.90gb", 90, 3}, {"4g.90gb", 90, 4}, {"7g.180gb", 180, 7},
	}},
}

// ModelByName returns the model called name, or false.
func ModelByName(name string) (Model, bool) {
	for _, m := range Models {
		if m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}

// profile returns the model's profile called name, or false.
func (m Model) profile(name string) (Profile, bool) {
	for _, p := range m.Profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// ModelFor maps a GPU's product name (the `model` label of gpu_info, e.g.
// "NVIDIA H100 80GB HBM3") to one of Models, or false when its MIG
// profiles are not known here.
func ModelFor(product string) (Model, bool) {
	p := strings.ToUpper(product)
	switch {
	case strings.Contains(p, "A100") && strings.Contains(p, "80GB"):
		return ModelByName("A100-80GB")
	case strings.Contains(p, "A100"):
		return ModelByName("A100-40GB")
	case strings.Contains(p, "H100") && strings.Contains(p, "80GB"):
		return ModelByName("H100-80GB")
	case strings.Contains(p, "H200"):
		return ModelByName("H200-141GB")
	case strings.Contains(p, "B200") && !strings.Contains(p, "GB200"):
		return ModelByName("B200-180GB")
	}
	return Model{}, false
}

// ComputeSlices returns the compute slices of a whole GPU of product (the
// `model` label, as ModelFor reads it): those of its largest profile, the
// 7 of 7g.80gb. False when the model's MIG profiles are not known here
// (the A30's four slices, for one, are not listed).
func ComputeSlices(product string) (int, bool) {
	m, ok := ModelFor(product)
	if !ok {
		return 0, false
	}
	n := 0
	for _, p := range m.Profiles {
		n = max(n, p.Slices)
	}
	return n, n > 0
}

// ProfileSlices returns the compute slices of a GPU-instance profile from
// its name: the N of "Ng.…" ("3g.40gb" is 3, "1g.10gb+me" 1). False for a
// name not of that form (a compute-instance profile "1c.3g.40gb" is not a
// GPU-instance profile).
func ProfileSlices(name string) (int, bool) {
	g, _, ok := strings.Cut(name, ".")
	if !ok || len(g) < 2 || g[len(g)-1] != 'g' {
		return 0, false
	}
	n := 0
	for _, r := range g[:len(g)-1] {
		if r < '0' || r > '9' || n > 100 {
			return 0, false
		}
		n = n*10 + int(r-'0')
	}
	return n, n > 0
}
