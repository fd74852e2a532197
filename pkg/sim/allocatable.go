package sim

import (
	"slices"
	"strconv"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// wholeGPUResource is the resource NVIDIA's k8s-device-plugin advertises
// whole GPUs as.
const wholeGPUResource = "nvidia.com/gpu"

// gpuSharing is a GPU the device plugin shares: advertised as replicas
// devices "<uuid>::<n>" of resource (sharing.timeSlicing or sharing.mps
// in the plugin's config; "nvidia.com/gpu.shared" with renameByDefault).
type gpuSharing struct {
	resource string
	replicas int
}

// sharing reads a GPU's optional sharing: {replicas: N, resource: name}.
func (b *builder) sharing(o *object, mig bool) (gpuSharing, error) {
	n, p := o.at("sharing")
	if n == nil {
		return gpuSharing{}, nil
	}
	if mig {
		return gpuSharing{}, b.d.errf(n, p, "sharing of a GPU in MIG mode is not simulated")
	}
	so, err := b.d.object(n, p, "replicas", "resource")
	if err != nil {
		return gpuSharing{}, err
	}
	if err := so.require("replicas"); err != nil {
		return gpuSharing{}, err
	}
	r, err := so.integer("replicas", 1, maxReplicas)
	if err != nil {
		return gpuSharing{}, err
	}
	res, err := so.str("resource")
	if err != nil {
		return gpuSharing{}, err
	}
	if res == "" {
		res = wholeGPUResource
	}
	return gpuSharing{resource: res, replicas: int(r)}, nil
}

// AllocatableAt returns what the kubelet's GetAllocatableResources lists
// at elapsed time t, by resource name: nil when no GPU of the scenario
// says how it is shared (the simulated kubelet then answers as one that
// does not serve the call). Otherwise every GPU present: a shared one as
// its replica ids "<uuid>::0" to "<uuid>::<N-1>" (the device plugin's
// NewAnnotatedID, internal/rm/device_map.go, NVIDIA/k8s-device-plugin@1b826acc),
// allocated or not, the others whole under nvidia.com/gpu; a lost GPU is
// not listed, as the kubelet lists healthy devices only
// (ManagerImpl.GetAllocatableDevices, pkg/kubelet/cm/devicemanager/manager.go,
// kubernetes/kubernetes). MIG instances are not listed. The result is the
// caller's.
func (s *Scenario) AllocatableAt(t time.Duration) map[string][]string {
	if len(s.sharing) == 0 {
		return nil
	}
	out := map[string][]string{}
	for _, e := range s.segmentAt(max(t, 0)).inv.Entities {
		if e.Kind != source.GPU {
			continue
		}
		sh, ok := s.sharing[e.GPU]
		if !ok {
			if !s.hasMIG(e.GPU) {
				out[wholeGPUResource] = append(out[wholeGPUResource], e.UUID)
			}
			continue
		}
		for i := range sh.replicas {
			out[sh.resource] = append(out[sh.resource], e.UUID+"::"+strconv.Itoa(i))
		}
	}
	return out
}

// hasMIG reports whether GPU g is in MIG mode.
func (s *Scenario) hasMIG(g int) bool {
	return slices.ContainsFunc(s.entities, func(e source.Entity) bool { return e.Kind == source.GPUInstance && e.GPU == g })
}

// Allocatable returns what the kubelet lists allocatable now; see
// Scenario.AllocatableAt. It is safe to call from any goroutine.
func (s *Source) Allocatable() map[string][]string { return s.scn.AllocatableAt(s.Elapsed()) }
