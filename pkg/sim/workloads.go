package sim

import (
	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
)

// maxObjects bounds a scenario's owner objects.
const maxObjects = 10000

// defaultAPIVersion is the apiVersion of an owner kind written without
// one: the Kubernetes API's own workload kinds.
var defaultAPIVersion = map[string]string{
	"ReplicaSet": "apps/v1", "Deployment": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1",
	"Job": "batch/v1", "CronJob": "batch/v1",
}

// ownerRef reads a pod's or object's owner: {kind, name, apiVersion},
// apiVersion optional for the Kubernetes API's own kinds.
func (b *builder) ownerRef(o *object) (*podlabels.OwnerRef, error) {
	n, p := o.at("owner")
	if n == nil {
		return nil, nil
	}
	oo, err := b.d.object(n, p, "kind", "name", "apiVersion")
	if err != nil {
		return nil, err
	}
	if err := oo.require("kind", "name"); err != nil {
		return nil, err
	}
	ref := &podlabels.OwnerRef{}
	if ref.Kind, err = oo.str("kind"); err != nil {
		return nil, err
	}
	if ref.Name, err = oo.str("name"); err != nil {
		return nil, err
	}
	if ref.APIVersion, err = oo.str("apiVersion"); err != nil {
		return nil, err
	}
	if ref.APIVersion == "" {
		ref.APIVersion = defaultAPIVersion[ref.Kind]
	}
	if ref.APIVersion == "" {
		return nil, b.d.errf(resolve(n), p, "owner kind %q needs an apiVersion", ref.Kind)
	}
	return ref, nil
}

// labels reads a mapping of label keys to values.
func (b *builder) labels(o *object) (map[string]string, error) {
	return b.strings(o, "labels")
}

// strings reads the string map at key of o (labels, annotations).
func (b *builder) strings(o *object, key string) (map[string]string, error) {
	n, p := o.at(key)
	if n == nil {
		return nil, nil
	}
	es, err := b.d.entries(n, p)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(es))
	for _, e := range es {
		if out[e.key], err = b.d.str(e.val, keyPath(p, e.key)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// objects reads the scenario's pod owners, JobSets and Kueue LocalQueues, which the
// simulated node resolves its pods' workloads through (SimulatedPods).
func (b *builder) objects(n *yaml.Node, p string) error {
	items, err := b.d.list(n, p)
	if err != nil {
		return err
	}
	if len(items) > maxObjects {
		return b.d.errf(resolve(n), p, "more than %d objects", maxObjects)
	}
	for i, item := range items {
		ip := indexPath(p, i)
		o, err := b.d.object(item, ip, "kind", "namespace", "name", "owner", "labels", "clusterQueue")
		if err != nil {
			return err
		}
		if err := o.require("kind", "namespace", "name"); err != nil {
			return err
		}
		var obj podlabels.StaticObject
		if obj.Kind, err = o.str("kind"); err != nil {
			return err
		}
		switch obj.Kind {
		case "ReplicaSet", "Job", "JobSet", "LocalQueue":
		default:
			kn, kp := o.at("kind")
			return b.d.errf(resolve(kn), kp, "kind %q: want ReplicaSet, Job, JobSet or LocalQueue (the objects the exporter reads)", obj.Kind)
		}
		if obj.Namespace, err = o.str("namespace"); err != nil {
			return err
		}
		if obj.Name, err = o.str("name"); err != nil {
			return err
		}
		if obj.Owner, err = b.ownerRef(o); err != nil {
			return err
		}
		if obj.Labels, err = b.labels(o); err != nil {
			return err
		}
		if obj.ClusterQueue, err = o.str("clusterQueue"); err != nil {
			return err
		}
		b.scn.objects = append(b.scn.objects, obj)
	}
	return nil
}

// SimulatedPods answers what the Kubernetes API would tell of the
// scenario's pods: their workloads, resolved through the scenario's
// objects by the exporter's own resolution (podlabels.Static), and what
// their annotations say (KAI Scheduler's fraction container, HAMi's
// allocation). Nil when no pod names an owner, a label or an annotation,
// and the scenario has no objects.
func (s *Source) SimulatedPods() *podlabels.Static {
	scn := s.scn
	var pods []podlabels.StaticPod
	described := len(scn.objects) > 0
	for i := range scn.pods {
		p := &scn.pods[i].pod
		described = described || p.Owner != nil || len(p.Labels) > 0 || len(p.Annotations) > 0
		sp := podlabels.StaticPod{Namespace: p.Namespace, Name: p.Name, Owner: p.Owner, Labels: p.Labels, Annotations: p.Annotations}
		for _, c := range p.Containers {
			sp.Containers = append(sp.Containers, c.Name)
		}
		pods = append(pods, sp)
	}
	if !described {
		return nil
	}
	return podlabels.NewStatic(pods, scn.objects)
}

var _ podlabels.Simulated = (*Source)(nil)
