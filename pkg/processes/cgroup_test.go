package processes

import (
	"strings"
	"testing"
)

// Fixtures follow the formats ParseCgroup's comment cites: cgroups(7) for
// the line format, the Kubernetes "Container runtimes" page and the
// kubelet's QoS hierarchy for the paths, systemd.slice(5) for the "-"
// nesting that makes the kubelet write UIDs with "_".
const (
	uid       = "6b3c8a4e-1f2d-4c5b-9a8e-7d6f5e4c3b2a"
	uidUnder  = "6b3c8a4e_1f2d_4c5b_9a8e_7d6f5e4c3b2a"
	staticUID = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	cid       = "9f2e4c1a7b3d5e6f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7"
)

// v1 lays the path out the way a cgroup v1 host lists every hierarchy.
func v1(path string) string {
	return "12:pids:" + path + "\n11:memory:" + path + "\n10:cpu,cpuacct:" + path + "\n1:name=systemd:" + path + "\n"
}

func TestParseCgroup(t *testing.T) {
	t.Parallel()
	pod := Owner{PodUID: uid, ContainerID: cid}
	cases := []struct {
		name    string
		content string
		want    Owner
	}{
		// cgroup v2, systemd driver, each runtime and QoS class.
		{"v2 systemd containerd burstable", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidUnder + ".slice/cri-containerd-" + cid + ".scope\n", pod},
		{"v2 systemd containerd besteffort", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidUnder + ".slice/cri-containerd-" + cid + ".scope\n", pod},
		{"v2 systemd containerd guaranteed", "0::/kubepods.slice/kubepods-pod" + uidUnder + ".slice/cri-containerd-" + cid + ".scope\n", pod},
		{"v2 systemd crio burstable", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidUnder + ".slice/crio-" + cid + ".scope\n", pod},
		{"v2 systemd docker guaranteed", "0::/kubepods.slice/kubepods-pod" + uidUnder + ".slice/docker-" + cid + ".scope\n", pod},
		{"v2 systemd crio conmon is no container", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidUnder + ".slice/crio-conmon-" + cid + ".scope\n", Owner{PodUID: uid}},
		// cgroup v2, cgroupfs driver.
		{"v2 cgroupfs containerd burstable", "0::/kubepods/burstable/pod" + uid + "/" + cid + "\n", pod},
		{"v2 cgroupfs containerd besteffort", "0::/kubepods/besteffort/pod" + uid + "/" + cid + "\n", pod},
		{"v2 cgroupfs guaranteed", "0::/kubepods/pod" + uid + "/" + cid + "\n", pod},
		{"v2 cgroupfs crio", "0::/kubepods/burstable/pod" + uid + "/crio-" + cid + "\n", pod},
		// cgroup v1: one line per hierarchy.
		{"v1 cgroupfs containerd", v1("/kubepods/burstable/pod" + uid + "/" + cid), pod},
		{"v1 cgroupfs docker guaranteed", v1("/kubepods/pod" + uid + "/" + cid), pod},
		{"v1 systemd containerd", v1("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidUnder + ".slice/cri-containerd-" + cid + ".scope"), pod},
		{"v1 systemd crio", v1("/kubepods.slice/kubepods-pod" + uidUnder + ".slice/crio-" + cid + ".scope"), pod},
		{"v1 systemd docker", v1("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidUnder + ".slice/docker-" + cid + ".scope"), pod},
		// Hybrid: v1 hierarchies plus systemd's unified one.
		{"hybrid", "0::/kubepods.slice/kubepods-pod" + uidUnder + ".slice/cri-containerd-" + cid + ".scope\n" + v1("/kubepods.slice/kubepods-pod"+uidUnder+".slice/cri-containerd-"+cid+".scope"), pod},
		{"hybrid unified without pod", "0::/init.scope\n" + v1("/kubepods/pod"+uid+"/"+cid), pod},
		// --cgroup-root and cgroup namespaces.
		{"cgroup root cgroupfs", "0::/kubelet/kubepods/burstable/pod" + uid + "/" + cid + "\n", pod},
		{"cgroup root systemd", "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" + uidUnder + ".slice/cri-containerd-" + cid + ".scope\n", pod},
		{"cgroup namespace relative", "0::/../../kubepods-burstable-pod" + uidUnder + ".slice/cri-containerd-" + cid + ".scope\n", pod},
		// cgroupfs driver seen from the exporter's own cgroup namespace
		// (cgroup_namespaces(7): paths are relative to the reader's
		// namespace root): the exporter in /kubepods/burstable/podA/cidA
		// sees its ancestors as "..", so "kubepods" may not show.
		{"cgroup namespace relative cgroupfs other QoS", "0::/../../../besteffort/pod" + uid + "/" + cid + "\n", pod},
		{"cgroup namespace relative cgroupfs same QoS", "0::/../../pod" + uid + "/" + cid + "\n", pod},
		{"cgroup namespace relative host process", "0::/../../../../../system.slice/podman-" + cid + ".scope\n", Owner{}},
		// runc's systemd cgroupsPath "slice:prefix:name" (runc
		// docs/systemd.md) used as a path, as containerd leaves it on
		// cgroup v1 hosts (seen in /proc/self/cgroup of pods:
		// elastic/apm-agent-nodejs issue 3550, open-telemetry/
		// opentelemetry-java issue 4507).
		{"v1 cgroupsPath literal under containerd.service", v1("/system.slice/containerd.service/kubepods-burstable-pod" + uidUnder + ".slice:cri-containerd:" + cid), pod},
		{"v1 cgroupsPath literal at the root", v1("/kubepods-besteffort-pod" + uidUnder + ".slice:cri-containerd:" + cid), pod},
		{"v2 cgroupsPath literal crio guaranteed", "0::/kubepods-pod" + uidUnder + ".slice:crio:" + cid + "\n", pod},
		{"cgroupsPath literal outside kubepods", "0::/system.slice/containerd.service/app.slice:docker:" + cid + "\n", Owner{}},
		// Static pods: the kubelet's hash as UID.
		{"static pod", "0::/kubepods/burstable/pod" + staticUID + "/" + cid + "\n", Owner{PodUID: staticUID, ContainerID: cid}},
		// Processes in the pod cgroup itself, or below the container.
		{"pod level", "0::/kubepods/burstable/pod" + uid + "\n", Owner{PodUID: uid}},
		{"sub-cgroup of container", "0::/kubepods.slice/kubepods-pod" + uidUnder + ".slice/cri-containerd-" + cid + ".scope/app\n", pod},
		// A removed cgroup (issue 30, defect 6): the kernel appends
		// " (deleted)" on the unified hierarchy (proc_cgroup_show).
		{"v2 deleted systemd containerd", "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidUnder + ".slice/cri-containerd-" + cid + ".scope (deleted)\n", pod},
		{"v2 deleted cgroupfs", "0::/kubepods/besteffort/pod" + uid + "/" + cid + " (deleted)\n", pod},
		{"hybrid deleted unified", "0::/kubepods/pod" + uid + "/" + cid + " (deleted)\n" + v1("/kubepods/pod"+uid+"/"+cid), pod},
		// Host processes.
		{"host v2 root", "0::/\n", Owner{}},
		{"host systemd service", "0::/system.slice/nvidia-persistenced.service\n", Owner{}},
		{"host user session", v1("/user.slice/user-1000.slice/session-3.scope"), Owner{}},
		{"docker outside kubernetes", "0::/system.slice/docker-" + cid + ".scope\n", Owner{}},
		{"pod-like name outside kubepods", "0::/pod" + uid + "/x\n", Owner{}},
		{"kubepods QoS level", "0::/kubepods.slice/kubepods-burstable.slice\n", Owner{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseCgroup([]byte(tc.content))
			if err != nil {
				t.Fatalf("ParseCgroup: %v", err)
			}
			if got != tc.want {
				t.Errorf("ParseCgroup = %+v, want %+v", got, tc.want)
			}
			if got.Host() != (tc.want.PodUID == "") {
				t.Errorf("Host() = %v", got.Host())
			}
		})
	}
}

func TestParseCgroupRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, content, wantErr string
	}{
		{"empty", "", "empty"},
		{"blank", "\n", "empty"},
		{"no fields", "garbage\n", "line 1"},
		{"relative path", "0::kubepods\n", "line 1"},
		{"second line bad", "0::/\nbad\n", "line 2"},
		{"bad systemd uid", "0::/kubepods.slice/kubepods-podnot_a_uid.slice/x.scope\n", "holds no pod UID"},
		{"bad cgroupfs uid", "0::/kubepods/burstable/pod1234/" + cid + "\n", "holds no pod UID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseCgroup([]byte(tc.content))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("ParseCgroup(%q) error = %v, want one containing %q", tc.content, err, tc.wantErr)
			}
		})
	}
}

func FuzzParseCgroup(f *testing.F) {
	f.Add([]byte("0::/kubepods.slice/kubepods-pod" + uidUnder + ".slice/cri-containerd-" + cid + ".scope\n"))
	f.Add([]byte(v1("/kubepods/burstable/pod" + uid + "/" + cid)))
	f.Add([]byte(v1("/system.slice/containerd.service/kubepods-pod" + uidUnder + ".slice:cri-containerd:" + cid)))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := ParseCgroup(b)
		if err == nil && o.PodUID != "" && !validUID(o.PodUID) {
			t.Errorf("accepted pod UID %q", o.PodUID)
		}
	})
}
