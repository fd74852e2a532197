package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Processes on shared GPUs: a container may list the processes it runs on
// its GPUs (processes: [{pid, gpu | mig: {gpu, gpu_instance}, type,
// memory_mib, sm}]), and the scenario may list host processes
// (host_processes, with a cgroup path). memory_mib and sm are field specs
// like those of DCGM_FI_DEV_FB_USED (MiB) and DCGM_FI_DEV_GPU_UTIL (percent).
// The simulator serves them through processes.Sampler and writes a fake
// procfs tree for them, so the real cgroup parser and resolver run. On a
// GPU with processes, DCGM_FI_DEV_GPU_UTIL is the sum of its processes' SM
// utilization (at most 100): the device value and the attributed ones
// agree, as NVML's device and per-process counters do for time-slicing.

// maxPID is the largest PID Linux hands out (PID_MAX_LIMIT on 64-bit,
// 2^22; proc(5), /proc/sys/kernel/pid_max).
const maxPID = 1 << 22

// simProcess is one process of the scenario.
type simProcess struct {
	pid  uint32
	comm string
	typ  processes.ProcessType
	gpu  int
	gi   int // -1 on a whole GPU
	// memory (MiB) and sm (percent) as functions of elapsed time; nil is 0.
	memory, sm *fieldSpec
	// cgroup is the content of /proc/<pid>/cgroup.
	cgroup string
	// env is the environment the process started with, KEY=VALUE in the
	// scenario's order (/proc/<pid>/environ): MPS's, HAMi's and KAI's
	// limits.
	env []string
}

// cgroupFormats are the /proc/<pid>/cgroup layouts the simulator writes
// (see processes.ParseCgroup for where each comes from): cgroup version,
// kubelet cgroup driver, container runtime. A pod's cgroup key picks one;
// by default pods take them in turn.
var cgroupFormats = []string{
	"v2/systemd/containerd", "v2/cgroupfs/containerd", "v2/systemd/crio", "v1/cgroupfs/docker",
	"v1/systemd/crio", "v2/cgroupfs/crio", "v1/systemd/docker", "v1/cgroupfs/containerd",
}

// qosClasses are the pod QoS classes, taken in turn by pods.
var qosClasses = []string{"burstable", "besteffort", "guaranteed"}

// containerID derives a 64-hex-digit runtime id, stable across runs.
func containerID(scenario, podUID, container string) string {
	h := sha256.Sum256([]byte("gpu-exporter/sim\x00container\x00" + scenario + "\x00" + podUID + "\x00" + container))
	return hex.EncodeToString(h[:])
}

// cgroupFile writes the /proc/<pid>/cgroup content of a container's
// process in format ("v2/systemd/containerd").
func cgroupFile(format, qos, podUID, cid string) string {
	parts := strings.Split(format, "/")
	version, driver, runtime := parts[0], parts[1], parts[2]
	var path string
	if driver == "systemd" {
		// systemd unit names use "-" for nesting: the kubelet writes the
		// UID with "_" (systemd.slice(5)).
		uid := strings.ReplaceAll(podUID, "-", "_")
		path = "/kubepods.slice"
		pod := "kubepods-pod" + uid + ".slice"
		if qos != "guaranteed" {
			path += "/kubepods-" + qos + ".slice"
			pod = "kubepods-" + qos + "-pod" + uid + ".slice"
		}
		scope := map[string]string{"containerd": "cri-containerd-", "crio": "crio-", "docker": "docker-"}[runtime]
		path += "/" + pod + "/" + scope + cid + ".scope"
	} else {
		path = "/kubepods"
		if qos != "guaranteed" {
			path += "/" + qos
		}
		leaf := cid
		if runtime == "crio" {
			leaf = "crio-" + cid
		}
		path += "/pod" + podUID + "/" + leaf
	}
	if version == "v2" {
		return "0::" + path + "\n"
	}
	return v1Cgroup(path)
}

// v1Cgroup lists path under the hierarchies of a cgroup v1 host.
func v1Cgroup(path string) string {
	var b strings.Builder
	for i, c := range []string{"pids", "memory", "devices", "cpu,cpuacct", "name=systemd"} {
		b.WriteString(strconv.Itoa(12 - i))
		b.WriteString(":" + c + ":" + path + "\n")
	}
	return b.String()
}

// processList parses a list of processes; host says whether they take a
// cgroup key (host_processes) or live in their container's cgroup.
func (b *builder) processList(n *yaml.Node, p string, host bool) ([]simProcess, error) {
	items, err := b.d.list(n, p)
	if err != nil {
		return nil, err
	}
	var out []simProcess
	for i, item := range items {
		sp, err := b.process(item, indexPath(p, i), host)
		if err != nil {
			return nil, err
		}
		out = append(out, sp)
	}
	return out, nil
}

func (b *builder) process(n *yaml.Node, p string, host bool) (simProcess, error) {
	d := b.d
	keys := []string{"pid", "name", "type", "gpu", "mig", "memory_mib", "sm", "env"}
	if host {
		keys = append(keys, "cgroup")
	}
	o, err := d.object(n, p, keys...)
	if err != nil {
		return simProcess{}, err
	}
	if err := o.require("pid"); err != nil {
		return simProcess{}, err
	}
	sp := simProcess{gi: -1, typ: processes.Compute, comm: "python3"}
	pid, err := o.integer("pid", 2, maxPID)
	if err != nil {
		return simProcess{}, err
	}
	sp.pid = uint32(pid)
	if prev, dup := b.pids[sp.pid]; dup {
		v, vp := o.at("pid")
		return simProcess{}, d.errf(v, vp, "pid %d is already used at %s", pid, prev)
	}
	if b.pids == nil {
		b.pids = map[uint32]string{}
	}
	b.pids[sp.pid] = p
	if name, err := o.str("name"); err != nil {
		return simProcess{}, err
	} else if name != "" {
		sp.comm = name
	}
	if err := b.processType(o, &sp); err != nil {
		return simProcess{}, err
	}
	if err := b.processDevice(o, p, &sp); err != nil {
		return simProcess{}, err
	}
	if v, vp := o.at("env"); v != nil {
		es, err := d.entries(v, vp)
		if err != nil {
			return simProcess{}, err
		}
		for _, e := range es {
			val, err := d.str(e.val, keyPath(vp, e.key))
			if err != nil {
				return simProcess{}, err
			}
			sp.env = append(sp.env, e.key+"="+val)
		}
	}
	salt := hashString(b.scn.name + "\x00pid\x00" + strconv.Itoa(int(pid)))
	for _, k := range []struct {
		key   string
		field string
		dst   **fieldSpec
	}{{"memory_mib", "DCGM_FI_DEV_FB_USED", &sp.memory}, {"sm", "DCGM_FI_DEV_GPU_UTIL", &sp.sm}} {
		v, vp := o.at(k.key)
		if v == nil {
			continue
		}
		f, _ := d.catalog.Lookup(k.field)
		t, err := d.template(v, vp, f)
		if err != nil {
			return simProcess{}, err
		}
		*k.dst = t.instantiate(salt)
	}
	if host {
		sp.cgroup = "0::/system.slice/" + sp.comm + ".service\n"
		if c, err := o.str("cgroup"); err != nil {
			return simProcess{}, err
		} else if c != "" {
			sp.cgroup = c
			if !strings.HasSuffix(c, "\n") {
				sp.cgroup += "\n"
			}
		}
	}
	return sp, nil
}

func (b *builder) processType(o *object, sp *simProcess) error {
	typ, err := o.str("type")
	if err != nil {
		return err
	}
	switch typ {
	case "", "compute":
	case "graphics":
		sp.typ = processes.Graphics
	case "mps":
		sp.typ = processes.MPS
	default:
		v, vp := o.at("type")
		return b.d.errf(v, vp, "unknown process type %q (want compute, graphics or mps)", typ)
	}
	return nil
}

// processDevice reads gpu: N or mig: {gpu, gpu_instance}.
func (b *builder) processDevice(o *object, p string, sp *simProcess) error {
	switch {
	case o.has("gpu") && o.has("mig"):
		return b.d.errf(o.node, p, "give gpu or mig, not both")
	case o.has("gpu"):
		v, vp := o.at("gpu")
		g, err := b.gpuIndex(v, vp)
		if err != nil {
			return err
		}
		if len(b.gpuList[g].instances) > 0 {
			return b.d.errf(resolve(v), vp, "GPU %d is in MIG mode: give mig: {gpu: %d, gpu_instance: N}", g, g)
		}
		sp.gpu = g
	case o.has("mig"):
		v, vp := o.at("mig")
		mo, err := b.d.object(v, vp, "gpu", "gpu_instance")
		if err != nil {
			return err
		}
		if _, err := b.instanceID(mo); err != nil {
			return err
		}
		g, _ := b.gpuRef(mo, "gpu")
		gi, _ := mo.integer("gpu_instance", 0, maxInstanceID)
		sp.gpu, sp.gi = g, int(gi)
	default:
		return b.d.errf(o.node, p, "a process needs gpu or mig")
	}
	return nil
}

// podCgroup reads a pod's cgroup key, or takes the pod's turn in
// cgroupFormats.
func (b *builder) podCgroup(o *object, index int) (string, error) {
	f, err := o.str("cgroup")
	if err != nil {
		return "", err
	}
	if f == "" {
		return cgroupFormats[index%len(cgroupFormats)], nil
	}
	for _, known := range cgroupFormats {
		if f == known {
			return f, nil
		}
	}
	v, vp := o.at("cgroup")
	return "", b.d.errf(v, vp, "unknown cgroup format %q (want one of %s)", f, strings.Join(cgroupFormats, ", "))
}

// procSpecAt evaluates a process's spec at t; nil is 0.
func procSpecAt(f *fieldSpec, t time.Duration) float64 {
	if f == nil {
		return 0
	}
	x, _ := f.value(t).Number()
	return max(x, 0)
}

// procRef is one process and the pod (nil for the host) and container
// running it.
type procRef struct {
	proc      *simProcess
	pod       *podTemplate
	container string
	cid       string
}

// podProcesses gives the processes of a pod's containers their cgroup.
func (b *builder) podProcesses(pt *podTemplate, format, qos string) {
	for i := range pt.pod.Containers {
		c := &pt.pod.Containers[i]
		cid := containerID(b.scn.name, pt.pod.UID, c.Name)
		for j := range c.procs {
			c.procs[j].cgroup = cgroupFile(format, qos, pt.pod.UID, cid)
		}
	}
}

// listProcesses flattens the processes into Scenario.procs.
func (b *builder) listProcesses() {
	s := b.scn
	for i := range b.hostProcs {
		s.procs = append(s.procs, procRef{proc: &b.hostProcs[i]})
	}
	for i := range s.pods {
		pt := &s.pods[i]
		for _, c := range pt.pod.Containers {
			cid := containerID(s.name, pt.pod.UID, c.Name)
			for j := range c.procs {
				s.procs = append(s.procs, procRef{proc: &c.procs[j], pod: pt, container: c.Name, cid: cid})
			}
		}
	}
}

// presentAt reports whether the process runs at t: always for the host's,
// while its pod is there for a container's.
func (r *procRef) presentAt(t time.Duration) bool { return r.pod == nil || r.pod.presentAt(t) }

// startAt is the process's start time (clock ticks since boot, /proc/<pid>/stat
// field 22) at t: a pod that comes back (repeat) runs a new process under
// the same PID, as a reused PID would.
func (r *procRef) startAt(t time.Duration) uint64 {
	if r.pod == nil || r.pod.repeat <= 0 {
		return 100
	}
	return 100 + uint64(t/r.pod.repeat)
}

// gpuUtilization is the sum of the SM utilization of the processes on
// whole GPU gpu at t, at most 100; ok is false when the scenario puts no
// process on it.
func (s *Scenario) gpuUtilization(gpu int, t time.Duration) (float64, bool) {
	sum, ok := 0.0, false
	for i := range s.procs {
		r := &s.procs[i]
		if r.proc.gpu != gpu || r.proc.gi != -1 {
			continue
		}
		ok = true // the GPU has processes: its utilization is theirs
		if r.presentAt(t) {
			sum += procSpecAt(r.proc.sm, t)
		}
	}
	return min(sum, 100), ok
}

// processUtilization sets DCGM_FI_DEV_GPU_UTIL of every GPU with processes
// to the sum of theirs (rounded, as the field is an integer percent).
func (s *Source) processUtilization(smp *source.Sample, seg *segment, t time.Duration) {
	if len(s.scn.procs) == 0 {
		return
	}
	col := -1
	for c := range s.set {
		if s.set[c].ID == fieldGPUUtil {
			col = c
		}
	}
	if col < 0 {
		return
	}
	for r, e := range seg.rows {
		ent := &s.scn.entities[e]
		if ent.Kind != source.GPU {
			continue
		}
		if u, ok := s.scn.gpuUtilization(ent.GPU, t); ok {
			smp.Set(r, col, source.IntValue(int64(math.Round(u))))
		}
	}
}
