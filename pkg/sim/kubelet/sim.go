package kubelet

import "github.com/gpu-exporter/gpu-exporter/pkg/sim"

// FromSim converts the simulator's pods to the fake kubelet's.
func FromSim(pods []sim.Pod) []Pod {
	out := make([]Pod, 0, len(pods))
	for _, p := range pods {
		fp := Pod{Namespace: p.Namespace, Name: p.Name, UID: p.UID}
		for _, c := range p.Containers {
			fc := Container{Name: c.Name}
			for _, d := range c.Devices {
				fc.Devices = append(fc.Devices, Device{Resource: d.Resource, IDs: d.IDs})
			}
			for _, cl := range c.Claims {
				fcl := Claim{Name: cl.Name, Namespace: cl.Namespace}
				for _, d := range cl.Devices {
					fcl.Devices = append(fcl.Devices, ClaimDevice{Driver: d.Driver, Pool: d.Pool, Device: d.Device, ShareID: d.ShareID})
				}
				fc.Claims = append(fc.Claims, fcl)
			}
			fp.Containers = append(fp.Containers, fc)
		}
		out = append(out, fp)
	}
	return out
}

// FollowSim makes List answer with the pods the simulator's scenario has at
// its current simulated time, and GetAllocatableResources with its
// allocatable devices (sim.Scenario.AllocatableAt: Unimplemented for a
// scenario that does not say how its GPUs are shared).
func (s *Server) FollowSim(src *sim.Source) {
	s.SetPodsFunc(func() []Pod { return FromSim(src.Pods()) })
	s.SetAllocatableFunc(src.Allocatable)
}
