package processes

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Owner is who runs a process, as its cgroup tells: a container of a
// Kubernetes pod, or the host (PodUID empty).
type Owner struct {
	// PodUID is the pod's metadata.uid with dashes ("6b3c…-…"); empty for a
	// process outside every pod.
	PodUID string
	// ContainerID is the container runtime's id of the container, without
	// the runtime's prefix ("cri-containerd-", "crio-", "docker-"); empty
	// when the process sits in the pod's cgroup itself (the runtime's
	// monitor, for example).
	ContainerID string
}

// Host reports whether the process runs outside every pod.
func (o Owner) Host() bool { return o.PodUID == "" }

// deletedSuffix is what the kernel appends to a unified-hierarchy path
// whose cgroup was removed while the process lingers (a zombie, or a
// process the runtime has not reaped yet): proc_cgroup_show in
// kernel/cgroup/cgroup.c writes " (deleted)" after the path when
// cgroup_on_dfl(cgrp) && cgroup_is_dead(cgrp) (torvalds/linux@5ab3ecd4,
// GPL-2.0). The path before it is still the cgroup's, so the pod and
// container are read from it.
const deletedSuffix = " (deleted)"

// errNoCgroup reports an empty /proc/<pid>/cgroup: the kernel writes one
// line per hierarchy, so an empty file means the process is exiting.
var errNoCgroup = errors.New("empty cgroup file")

// ParseCgroup reads the content of /proc/<pid>/cgroup and tells which pod
// and container the process belongs to.
//
// The file has one line per hierarchy, "hierarchy-ID:controller-list:path"
// (cgroups(7), "/proc/[pid]/cgroup"); on cgroup v2 alone it is the single
// line "0::<path>". Every hierarchy holds a Kubernetes container at the
// same place, so the first line whose path names a pod decides; the
// unified (v2) line is looked at first.
//
// Paths are those the kubelet creates (Kubernetes docs, "Container
// runtimes", section "cgroup drivers"; the kubelet's QoS cgroup hierarchy,
// design proposal "node-allocatable"): under a root named kubepods, an
// optional QoS level (burstable, besteffort; guaranteed pods sit directly
// under the root), a pod level, then one cgroup per container.
//
//   - cgroupfs driver: /kubepods/burstable/pod<uid>/<container-id>, where
//     <uid> keeps its dashes; CRI-O names the container "crio-<id>".
//   - systemd driver: /kubepods.slice/kubepods-burstable.slice/
//     kubepods-burstable-pod<uid>.slice/<runtime>-<id>.scope. systemd unit
//     names use "-" to mean nesting (systemd.slice(5)), so the kubelet
//     writes the UID's dashes as "_"; the runtime's scope is
//     "cri-containerd-<id>.scope" (containerd), "crio-<id>.scope" (CRI-O)
//     or "docker-<id>.scope" (Docker through cri-dockerd).
//   - runc's systemd cgroupsPath taken as a path (cgroup v1 hosts with
//     containerd): /system.slice/containerd.service/
//     kubepods-burstable-pod<uid>.slice:cri-containerd:<id>.
//
// A kubelet --cgroup-root adds components before kubepods ("/kubelet/
// kubepods/…", "kubelet-kubepods-….slice"), and a cgroup namespace shows
// the path relative to the reader's root ("/../../kubepods-…"): both are
// found by looking for the pod component anywhere in the path (with the
// cgroupfs driver, a relative path may not show "kubepods": "/../../../
// besteffort/pod<uid>/<id>" seen from a pod of another QoS class). A process
// in no pod's cgroup is a host process (Owner{}), not an error.
func ParseCgroup(content []byte) (Owner, error) {
	if len(bytes.TrimSpace(content)) == 0 {
		return Owner{}, errNoCgroup
	}
	lines := strings.Split(strings.TrimRight(string(content), "\n"), "\n")
	paths := make([]string, 0, len(lines))
	for i, line := range lines {
		id, rest, ok1 := strings.Cut(line, ":")
		_, path, ok2 := strings.Cut(rest, ":")
		path = strings.TrimSuffix(path, deletedSuffix)
		if !ok1 || !ok2 || id == "" || !strings.HasPrefix(path, "/") {
			return Owner{}, fmt.Errorf("cgroup line %d: %q is not hierarchy-ID:controllers:path", i+1, line)
		}
		if id == "0" && strings.HasPrefix(rest, ":") {
			// The unified hierarchy: look at it first.
			paths = append([]string{path}, paths...)
			continue
		}
		paths = append(paths, path)
	}
	for _, p := range paths {
		o, found, err := parsePath(p)
		if err != nil {
			return Owner{}, err
		}
		if found {
			return o, nil
		}
	}
	return Owner{}, nil
}

// parsePath finds the pod and container components of one cgroup path.
// found is false when the path is in no pod.
func parsePath(path string) (o Owner, found bool, err error) {
	parts := strings.Split(path, "/")
	inKubepods := false
	// A path outside the reader's cgroup namespace starts with ".."
	// (cgroup_namespaces(7)); the exporter's own pod cgroup is its root,
	// so the kubepods component of a cgroupfs path may be among the
	// ancestors written "..": "pod<uid>" components count, if they hold a
	// UID, without it.
	relative := len(parts) > 1 && parts[1] == ".."
	for i, part := range parts {
		slice, leaf, literal := cgroupsPathLiteral(part)
		if literal {
			part = slice
		}
		uid, isPod := podComponent(part, inKubepods || relative)
		if isPod && !inKubepods && relative && !strings.HasSuffix(part, ".slice") && !validUID(uid) {
			continue // a cgroup named pod… outside kubepods
		}
		if !isPod {
			if part == "kubepods" || strings.HasSuffix(part, "kubepods.slice") || strings.HasPrefix(part, "kubepods-") ||
				strings.Contains(part, "-kubepods-") {
				inKubepods = true
			}
			continue
		}
		if !validUID(uid) {
			return Owner{}, false, fmt.Errorf("cgroup path %q: pod component %q holds no pod UID", path, part)
		}
		o.PodUID = uid
		switch {
		case literal:
			o.ContainerID = containerID(leaf)
		case i+1 < len(parts):
			o.ContainerID = containerID(parts[i+1])
		}
		return o, true, nil
	}
	return Owner{}, false, nil
}

// cgroupsPathLiteral splits a cgroup named after runc's systemd
// cgroupsPath, "slice:prefix:name" (runc docs/systemd.md): containerd
// passes the kubelet's "kubepods-<qos>-pod<uid>.slice:cri-containerd:<id>"
// and, on cgroup v1 hosts where the path is not turned into systemd units,
// the container's cgroup keeps that name ("/system.slice/containerd.service/
// kubepods-…-pod<uid>.slice:cri-containerd:<id>", as pods read it in
// /proc/self/cgroup). It returns the slice and the name (the container id).
func cgroupsPathLiteral(part string) (slice, name string, ok bool) {
	slice, rest, ok := strings.Cut(part, ":")
	if !ok || !strings.HasSuffix(slice, ".slice") {
		return "", "", false
	}
	_, name, ok = strings.Cut(rest, ":")
	if !ok || strings.Contains(name, ":") {
		return "", "", false
	}
	return slice, name, true
}

// podComponent returns the pod UID of a pod-level cgroup name, with dashes:
// "pod<uid>" (cgroupfs, below a kubepods component) or
// "<root>kubepods[-<qos>]-pod<uid_with_underscores>.slice" (systemd).
func podComponent(part string, inKubepods bool) (string, bool) {
	if name, ok := strings.CutSuffix(part, ".slice"); ok {
		i := strings.LastIndex(name, "-pod")
		if i < 0 || !strings.Contains(name[:i+1], "kubepods") {
			return "", false
		}
		return strings.ReplaceAll(name[i+len("-pod"):], "_", "-"), true
	}
	if inKubepods {
		if uid, ok := strings.CutPrefix(part, "pod"); ok && uid != "" {
			return uid, true
		}
	}
	return "", false
}

// runtimePrefixes are the scope and cgroup name prefixes container
// runtimes put before a container id (see ParseCgroup).
var runtimePrefixes = []string{"cri-containerd-", "crio-", "docker-", "containerd-"}

// containerID returns the container id of a container-level cgroup name,
// or "" when it names no container (CRI-O's conmon scope, a sub-cgroup
// the kubelet does not create).
func containerID(part string) string {
	name := strings.TrimSuffix(part, ".scope")
	if strings.HasPrefix(name, "crio-conmon-") {
		return "" // CRI-O's container monitor, not the container
	}
	for _, p := range runtimePrefixes {
		if id, ok := strings.CutPrefix(name, p); ok {
			name = id
			break
		}
	}
	if !isHex(name) {
		return ""
	}
	return name
}

// validUID accepts what the kubelet writes as a pod UID: a UUID
// (8-4-4-4-12 hex digits) for API pods, and the 32 hex digits of the hash
// the kubelet gives a static pod.
func validUID(uid string) bool {
	if len(uid) == 32 {
		return isHex(uid)
	}
	if len(uid) != 36 {
		return false
	}
	for i := 0; i < len(uid); i++ {
		switch i {
		case 8, 13, 18, 23:
			if uid[i] != '-' {
				return false
			}
		default:
			if !isHexByte(uid[i]) {
				return false
			}
		}
	}
	return true
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isHexByte(s[i]) {
			return false
		}
	}
	return true
}

func isHexByte(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
