package exposition

import (
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// The replicas of shared GPUs (issue 36, share given versus used):
// NVIDIA's k8s-device-plugin advertises a GPU or MIG device it shares
// (timeSlicing or mps "replicas: N") as N devices "<id>::<n>"; a container
// holding m of them was given m/N of it (podresources/replicas.go has the
// sources). Prometheus naming only: dcgm-exporter has no such family.
var (
	// sharedReplicasFamily is gpu_shared_replicas: N, once per entity
	// (Holding.DeviceReplicas).
	sharedReplicasFamily = Family{
		Name: "gpu_shared_replicas", Type: fields.Gauge, Naming: NamingPrometheus,
		Help: "N, the devices the NVIDIA device plugin advertises the GPU or MIG instance as when it shares it (sharing.timeSlicing or sharing.mps replicas, device ids UUID::0 to UUID::N-1), " +
			"as the kubelet's GetAllocatableResources lists them; a container holding m of them (gpu_container_shared_replicas) was given m/N of the device. " +
			"Absent when the device is not shared by replicas or the kubelet does not serve GetAllocatableResources.",
		Labels: []string{EntityLabels},
		render: func(p *pageWriter, in Input, f family) {
			inv := in.Sample.Inventory
			b := p.buf[:0]
			for i, t := range in.Holdings {
				if t.DeviceReplicas <= 0 || i > 0 && in.Holdings[i-1].Entity == t.Entity {
					continue // one series per entity, whatever its holders
				}
				e := &inv.Entities[t.Entity]
				if e.Kind != source.GPU && e.Kind != source.GPUInstance {
					continue
				}
				b = entityLabels(b[:0], e, nil)
				p.line(&f, b, "", "", float64(t.DeviceReplicas))
			}
			p.buf = b
		},
	}
	// containerReplicasFamily is gpu_container_shared_replicas: m, per
	// holding (Holding.Replicas).
	containerReplicasFamily = Family{
		Name: "gpu_container_shared_replicas", Type: fields.Gauge, Naming: NamingPrometheus,
		Help: "Replicas of a GPU or MIG instance shared by the NVIDIA device plugin (device ids UUID::n) the container holds, as the kubelet reports them: " +
			"usually 1, more only where the plugin's failRequestsGreaterThanOne is false. Over gpu_shared_replicas it is the share of the device the container was given (nominal under time-slicing, which enforces none).",
		Labels: []string{EntityLabels, HolderLabels},
		render: func(p *pageWriter, in Input, f family) {
			for i, t := range in.Holdings {
				if t.Holder == nil || t.Replicas <= 0 {
					continue
				}
				if k := in.Sample.Inventory.Entities[t.Entity].Kind; k != source.GPU && k != source.GPUInstance {
					continue
				}
				p.line(&f, p.owner.labels[i].b, "", "", float64(t.Replicas))
			}
		},
	}
)
