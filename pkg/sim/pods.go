package sim

import (
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
)

const (
	maxPods     = 10000
	maxReplicas = 1024
)

// Pod is a pod the simulated kubelet reports, with its device ids resolved
// as a device plugin hands them out.
type Pod struct {
	Namespace  string
	Name       string
	UID        string
	Containers []Container
	// Owner, Labels and Annotations are what the Kubernetes API tells of
	// the pod (workloads.go; KAI Scheduler's GPU groups, podlabels/kai.go);
	// the kubelet tells none of them.
	Owner       *podlabels.OwnerRef
	Labels      map[string]string
	Annotations map[string]string
}

// Container is one container of a Pod and the devices allocated to it.
type Container struct {
	Name    string
	Devices []Device
	// Claims are the DRA claims it uses (DynamicResources).
	Claims []Claim
	// procs are the processes it runs on GPUs (processes.go).
	procs []simProcess
}

// Device is one resource allocation: the resource name
// ("nvidia.com/gpu", "nvidia.com/mig-1g.10gb") and the device ids
// ("GPU-…", "MIG-…", "GPU-…::1", or literal ids).
type Device struct {
	Resource string
	IDs      []string
}

// podTemplate is a pod and when it is present.
type podTemplate struct {
	pod Pod
	window
	repeat time.Duration // the window recurs with this period when > 0
}

func (p *podTemplate) presentAt(t time.Duration) bool {
	if p.repeat > 0 {
		t %= p.repeat
	}
	return p.contains(t)
}

// PodsAt returns the pods present at elapsed time t, in scenario order.
// The result is the caller's to keep or modify.
func (s *Scenario) PodsAt(t time.Duration) []Pod {
	t = max(t, 0)
	var out []Pod
	for i := range s.pods {
		if s.pods[i].presentAt(t) {
			out = append(out, s.pods[i].pod.clone())
		}
	}
	return out
}

func (p Pod) clone() Pod {
	c := p
	c.Containers = make([]Container, len(p.Containers))
	for i, ctr := range p.Containers {
		c.Containers[i] = Container{Name: ctr.Name, Devices: make([]Device, len(ctr.Devices))}
		for _, cl := range ctr.Claims {
			c.Containers[i].Claims = append(c.Containers[i].Claims, cl.clone())
		}
		for j, dev := range ctr.Devices {
			c.Containers[i].Devices[j] = Device{Resource: dev.Resource, IDs: append([]string(nil), dev.IDs...)}
		}
	}
	return c
}

func (b *builder) pods(n *yaml.Node, p string) error {
	items, err := b.d.list(n, p)
	if err != nil {
		return err
	}
	if len(items) > maxPods {
		return b.d.errf(resolve(n), p, "more than %d pods", maxPods)
	}
	byName := map[string][]int{}
	for i, item := range items {
		ip := indexPath(p, i)
		pt, err := b.pod(item, ip, i)
		if err != nil {
			return err
		}
		key := pt.pod.Namespace + "/" + pt.pod.Name
		for _, j := range byName[key] {
			if overlap(&b.scn.pods[j], pt) {
				return b.d.errf(resolve(item), ip, "pod %s is also %s at the same time", key, indexPath(p, j))
			}
		}
		byName[key] = append(byName[key], len(b.scn.pods))
		b.scn.pods = append(b.scn.pods, *pt)
	}
	return nil
}

// overlap reports whether two pods are certainly present at the same time;
// recurring windows are not compared.
func overlap(a, b *podTemplate) bool {
	if a.repeat > 0 || b.repeat > 0 {
		return false
	}
	return (b.open || a.from < b.until) && (a.open || b.from < a.until)
}

func (b *builder) pod(n *yaml.Node, p string, index int) (*podTemplate, error) {
	d := b.d
	o, err := d.object(n, p, "namespace", "name", "uid", "from", "until", "repeat", "containers", "cgroup", "owner", "labels", "annotations")
	if err != nil {
		return nil, err
	}
	if err := o.require("namespace", "name", "containers"); err != nil {
		return nil, err
	}
	pt := &podTemplate{window: window{open: true}}
	if pt.pod.Namespace, err = o.str("namespace"); err != nil {
		return nil, err
	}
	if pt.pod.Name, err = o.str("name"); err != nil {
		return nil, err
	}
	if pt.pod.UID, err = o.str("uid"); err != nil {
		return nil, err
	}
	if pt.pod.UID == "" {
		pt.pod.UID = podUID(b.scn.name, index, pt.pod.Namespace, pt.pod.Name)
	}
	if pt.pod.Owner, err = b.ownerRef(o); err != nil {
		return nil, err
	}
	if pt.pod.Labels, err = b.labels(o); err != nil {
		return nil, err
	}
	if pt.pod.Annotations, err = b.strings(o, "annotations"); err != nil {
		return nil, err
	}
	if err := b.podWindow(o, pt); err != nil {
		return nil, err
	}
	cn, cp := o.at("containers")
	items, err := d.list(cn, cp)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, d.errf(resolve(cn), cp, "a pod needs at least one container")
	}
	seen := map[string]bool{}
	for i, item := range items {
		c, err := b.container(item, indexPath(cp, i), pt.pod.Namespace)
		if err != nil {
			return nil, err
		}
		if seen[c.Name] {
			return nil, d.errf(resolve(item), indexPath(cp, i), "container %q is listed twice", c.Name)
		}
		seen[c.Name] = true
		pt.pod.Containers = append(pt.pod.Containers, c)
	}
	format, err := b.podCgroup(o, index)
	if err != nil {
		return nil, err
	}
	b.podProcesses(pt, format, qosClasses[index%len(qosClasses)])
	return pt, nil
}

func (b *builder) podWindow(o *object, pt *podTemplate) error {
	var err error
	if pt.from, err = o.duration("from", false); err != nil {
		return err
	}
	if v, vp := o.at("until"); v != nil {
		if pt.until, err = o.duration("until", false); err != nil {
			return err
		}
		if pt.until <= pt.from {
			return b.d.errf(v, vp, "until %s is not after from %s", pt.until, pt.from)
		}
		pt.open = false
	}
	if v, vp := o.at("repeat"); v != nil {
		if pt.repeat, err = o.duration("repeat", false); err != nil {
			return err
		}
		if pt.open || pt.repeat == 0 || pt.until > pt.repeat {
			return b.d.errf(v, vp, "repeat needs an until, and must be at least until (%s)", pt.until)
		}
	}
	return nil
}

func (b *builder) container(n *yaml.Node, p, namespace string) (Container, error) {
	d := b.d
	o, err := d.object(n, p, "name", "devices", "claims", "processes")
	if err != nil {
		return Container{}, err
	}
	c := Container{}
	if pn, pp := o.at("processes"); pn != nil {
		if c.procs, err = b.processList(pn, pp, false); err != nil {
			return Container{}, err
		}
	}
	if err := o.require("name"); err != nil {
		return Container{}, err
	}
	if c.Name, err = o.str("name"); err != nil {
		return Container{}, err
	}
	if cn, cp := o.at("claims"); cn != nil {
		if c.Claims, err = b.claims(cn, cp, namespace); err != nil {
			return Container{}, err
		}
	}
	dn, dp := o.at("devices")
	if dn == nil {
		return c, nil
	}
	items, err := d.list(dn, dp)
	if err != nil {
		return Container{}, err
	}
	for i, item := range items {
		dev, err := b.device(item, indexPath(dp, i))
		if err != nil {
			return Container{}, err
		}
		c.Devices = append(c.Devices, dev)
	}
	return c, nil
}

// device resolves one allocation's references, in the order written.
func (b *builder) device(n *yaml.Node, p string) (Device, error) {
	d := b.d
	o, err := d.object(n, p, "resource", "gpus", "mig", "replicas", "ids")
	if err != nil {
		return Device{}, err
	}
	if err := o.require("resource"); err != nil {
		return Device{}, err
	}
	dev := Device{}
	if dev.Resource, err = o.str("resource"); err != nil {
		return Device{}, err
	}
	for _, e := range o.entries {
		if e.key == "resource" {
			continue
		}
		ep := keyPath(p, e.key)
		items, err := d.list(e.val, ep)
		if err != nil {
			return Device{}, err
		}
		for i, item := range items {
			id, err := b.deviceID(e.key, item, indexPath(ep, i))
			if err != nil {
				return Device{}, err
			}
			dev.IDs = append(dev.IDs, id)
		}
	}
	if len(dev.IDs) == 0 {
		return Device{}, d.errf(o.node, p, "no device ids: give gpus, mig, replicas or ids")
	}
	return dev, nil
}

func (b *builder) deviceID(kind string, n *yaml.Node, p string) (string, error) {
	d := b.d
	switch kind {
	case "ids":
		return d.str(n, p)
	case "gpus":
		g, err := b.gpuIndex(n, p)
		if err != nil {
			return "", err
		}
		if len(b.gpuList[g].instances) > 0 {
			return "", d.errf(resolve(n), p, "GPU %d is in MIG mode: reference its instances (mig: [{gpu: %d, gpu_instance: N}])", g, g)
		}
		return b.gpuList[g].entity.UUID, nil
	case "mig":
		o, err := d.object(n, p, "gpu", "gpu_instance", "compute_instance")
		if err != nil {
			return "", err
		}
		return b.migDeviceID(o)
	default: // "replicas"
		o, err := d.object(n, p, "gpu", "gpu_instance", "compute_instance", "replica")
		if err != nil {
			return "", err
		}
		if err := o.require("gpu", "replica"); err != nil {
			return "", err
		}
		r, err := o.integer("replica", 0, maxReplicas)
		if err != nil {
			return "", err
		}
		base := ""
		if o.has("gpu_instance") {
			base, err = b.migDeviceID(o)
		} else {
			base, err = b.deviceID("gpus", o.byKey["gpu"].val, keyPath(p, "gpu"))
		}
		if err != nil {
			return "", err
		}
		return base + "::" + strconv.FormatInt(r, 10), nil
	}
}

// migDeviceID resolves {gpu, gpu_instance[, compute_instance]} to the MIG
// device a pod is given: the compute instance's UUID when one is named, or
// the instance's when it has one compute instance. An instance split into
// several has no UUID of its own, so the compute instance must be named.
func (b *builder) migDeviceID(o *object) (string, error) {
	if _, err := b.instanceID(o); err != nil {
		return "", err
	}
	g, _ := b.gpuRef(o, "gpu")
	gi, _ := o.integer("gpu_instance", 0, maxInstanceID)
	in := b.gpuList[g].instance(int(gi))
	if !o.has("compute_instance") {
		if in.entity.MIGUUID == "" {
			v, vp := o.at("gpu_instance")
			return "", b.d.errf(v, vp, "GPU %d instance %d is split into %d compute instances: name one with compute_instance", g, gi, len(in.devices))
		}
		return in.entity.MIGUUID, nil
	}
	ci, err := o.integer("compute_instance", 0, maxComputeInstanceID)
	if err != nil {
		return "", err
	}
	dev, ok := in.device(int(ci))
	if !ok {
		v, vp := o.at("compute_instance")
		return "", b.d.errf(v, vp, "GPU %d instance %d has no compute instance %d", g, gi, ci)
	}
	return dev.UUID, nil
}

// instanceID resolves {gpu, gpu_instance} to the instance's MIG UUID
// (empty for an instance split into several compute instances).
func (b *builder) instanceID(o *object) (string, error) {
	if err := o.require("gpu", "gpu_instance"); err != nil {
		return "", err
	}
	g, err := b.gpuRef(o, "gpu")
	if err != nil {
		return "", err
	}
	id, err := o.integer("gpu_instance", 0, maxInstanceID)
	if err != nil {
		return "", err
	}
	in := b.gpuList[g].instance(int(id))
	if in == nil {
		v, vp := o.at("gpu_instance")
		return "", b.d.errf(v, vp, "GPU %d has no MIG instance %d", g, id)
	}
	return in.entity.MIGUUID, nil
}
