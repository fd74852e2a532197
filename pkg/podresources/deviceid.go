package podresources

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrMalformedID is wrapped by every error ParseDeviceID returns.
var ErrMalformedID = errors.New("malformed device id")

// IDType says which device-id forms ParseDeviceID accepts. The forms of the
// different families do not overlap, so IDTypeAuto is unambiguous; the
// narrower types exist to reject ids a misconfigured node should not send.
type IDType uint8

// Id types. The names match dcgm-exporter's --kubernetes-gpu-id-type values
// where they overlap ("uid", "device-name").
const (
	// IDTypeAuto accepts every form below.
	IDTypeAuto IDType = iota
	// IDTypeUID accepts device-plugin ids: GPU and MIG UUIDs, the legacy
	// MIG-GPU-<uuid>/<gi>/<ci> form, "::N" replicas, HAMi's and Volcano's
	// "<GPU uuid>-<n>" slots and index ids.
	IDTypeUID
	// IDTypeDeviceName accepts device node names (nvidiaN) and GKE's
	// nvidiaN/giM and /vgpuN forms.
	IDTypeDeviceName
	// IDTypeDRA accepts NVIDIA DRA driver (gpu.nvidia.com) device names.
	IDTypeDRA
)

// ParseIDType parses "auto", "uid", "device-name" or "dra".
func ParseIDType(s string) (IDType, error) {
	for _, t := range []IDType{IDTypeAuto, IDTypeUID, IDTypeDeviceName, IDTypeDRA} {
		if t.String() == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown device id type %q (want auto, uid, device-name or dra)", s)
}

// String returns the name ParseIDType accepts.
func (t IDType) String() string {
	switch t {
	case IDTypeAuto:
		return "auto"
	case IDTypeUID:
		return "uid"
	case IDTypeDeviceName:
		return "device-name"
	case IDTypeDRA:
		return "dra"
	default:
		return "IDType(" + strconv.Itoa(int(t)) + ")"
	}
}

func (t IDType) valid() bool { return t <= IDTypeDRA }

// DeviceKind is the form a device id was written in.
type DeviceKind uint8

// Device id forms.
const (
	// KindUnknown is the zero DeviceKind; ParseDeviceID never returns it.
	KindUnknown DeviceKind = iota
	// KindGPUUUID is "GPU-<uuid>", optionally "::<replica>" (time-slicing, MPS):
	// NVIDIA's k8s-device-plugin, dev.ID = uuid in internal/rm/devices.go and
	// the replica as fmt.Sprintf("%s::%d", id, replica) in AnnotatedID there
	// (NVIDIA/k8s-device-plugin@1b826acc).
	KindGPUUUID
	// KindMIGUUID is "MIG-<uuid>", optionally "::<replica>": the same plugin
	// with mig-strategy single or mixed (the MIG device's UUID as dev.ID).
	KindMIGUUID
	// KindLegacyMIG is "MIG-GPU-<uuid>/<gi>/<ci>" (drivers before R470).
	KindLegacyMIG
	// KindIndex is a GPU index, "0", optionally "::<replica>": NVIDIA's
	// k8s-device-plugin with --device-id-strategy=index (dev.Index,
	// internal/rm/devices.go).
	KindIndex
	// KindMIGIndex is "<gpu index>:<mig device index>", the same plugin's
	// index strategy for MIG devices (fmt.Sprintf("%v:%v", i, j) in
	// internal/rm/nvml_devices.go). The MIG device index is NVML's
	// enumeration index, not the GPU instance id.
	KindMIGIndex
	// KindDeviceName is "nvidia<minor>" or, with time-sharing,
	// "nvidia<minor>/vgpu<replica>": GKE's device plugin
	// (fmt.Sprintf("nvidia%d", minor) and fmt.Sprintf("%s/vgpu%d", device.ID, i)
	// in pkg/gpu/nvidia/manager.go,
	// GoogleCloudPlatform/container-engine-accelerators@992db812).
	KindDeviceName
	// KindGKEMIG is GKE's "nvidia<minor>/gi<gi>", optionally "/vgpu<replica>"
	// ("nvidia" + gpuID + "/" + giFile.Name() in pkg/gpu/nvidia/mig/mig.go,
	// gpuID being the <minor> of /proc/driver/nvidia/capabilities/gpu<minor>).
	KindGKEMIG
	// KindDRAGPU is the NVIDIA DRA driver's "gpu-<minor>"
	// (fmt.Sprintf("gpu-%d", d.minor) in cmd/gpu-kubelet-plugin/deviceinfo.go,
	// NVIDIA/k8s-dra-driver-gpu@22407113).
	KindDRAGPU
	// KindDRAMIG is the NVIDIA DRA driver's MIG device name: current drivers
	// write "gpu-<minor>-mig-<profile>-<profile id>-<placement start>"
	// (cmd/gpu-kubelet-plugin/mig.go there)
	// (profile "1g.10gb" written "1g10gb"); early ones wrote
	// "gpu-<minor>-mig-<profile id>-<placement start>-<placement size>".
	KindDRAMIG
	// KindDRAVFIO is the NVIDIA DRA driver's "gpu-vfio-<index>"
	// (deviceinfo.go there), a GPU bound to vfio-pci for a VM; no GPU
	// telemetry source sees it.
	KindDRAVFIO
	// KindGPUSplit is "GPU-<uuid>-<n>", slot n of a GPU a vGPU plugin splits
	// into DeviceSplitCount devices: HAMi's device plugin under
	// nvidia.com/gpu (fmt.Sprintf("%v-%v", dev.ID, i) in GetPluginDevices,
	// pkg/device-plugin/nvidiadevice/nvinternal/rm/devices.go,
	// Project-HAMi/HAMi@4707fb02) and Volcano's vGPU device plugin under
	// volcano.sh/vgpu-number (the same form in apiDevices,
	// pkg/plugin/server.go, Project-HAMi/volcano-vgpu-device-plugin@4fb76ba1).
	// Both plugins decide the real GPU from a pod annotation written by
	// their scheduler, not from the id the kubelet picked (see
	// docs/shared-gpus.md); the id names the GPU only where the plugin
	// steers the kubelet's choice or the node has one GPU.
	KindGPUSplit
)

// String names the kind.
func (k DeviceKind) String() string {
	switch k {
	case KindGPUUUID:
		return "gpu-uuid"
	case KindMIGUUID:
		return "mig-uuid"
	case KindLegacyMIG:
		return "legacy-mig"
	case KindIndex:
		return "index"
	case KindMIGIndex:
		return "mig-index"
	case KindDeviceName:
		return "device-name"
	case KindGKEMIG:
		return "gke-mig"
	case KindDRAGPU:
		return "dra-gpu"
	case KindDRAMIG:
		return "dra-mig"
	case KindDRAVFIO:
		return "dra-vfio"
	case KindGPUSplit:
		return "gpu-split"
	default:
		return "unknown"
	}
}

// DeviceID is a parsed device id. Integer fields not used by Kind are -1.
type DeviceID struct {
	Kind DeviceKind
	// UUID is "GPU-<uuid>" (KindGPUUUID, KindGPUSplit, and the parent of
	// KindLegacyMIG) or "MIG-<uuid>" (KindMIGUUID), in the case it was
	// written in.
	UUID string
	// GPU is the GPU index (KindIndex, KindMIGIndex, KindDRAVFIO) or the
	// device minor number (KindDeviceName, KindGKEMIG, KindDRAGPU, KindDRAMIG).
	GPU int
	// GPUInstance and ComputeInstance are the MIG GI and CI ids
	// (KindLegacyMIG; GPUInstance alone for KindGKEMIG).
	GPUInstance     int
	ComputeInstance int
	// MIGIndex is the MIG device index of KindMIGIndex.
	MIGIndex int
	// Profile is the DRA MIG profile as written in the name ("1g10gb"), empty
	// in the early form; ProfileID, PlacementStart and PlacementSize are the
	// numbers of the DRA MIG name (PlacementSize only in the early form).
	Profile        string
	ProfileID      int
	PlacementStart int
	PlacementSize  int
	// Replica is the shared-device replica ("::N", "/vgpuN", the slot n of
	// KindGPUSplit), -1 if none.
	Replica int
}

// Shared reports whether the id names one replica of a shared device.
func (d DeviceID) Shared() bool { return d.Replica >= 0 }

// String writes the id back in the form it was parsed from.
func (d DeviceID) String() string {
	var s string
	switch d.Kind {
	case KindGPUUUID, KindMIGUUID:
		s = d.UUID
	case KindLegacyMIG:
		s = "MIG-" + d.UUID + "/" + strconv.Itoa(d.GPUInstance) + "/" + strconv.Itoa(d.ComputeInstance)
	case KindIndex:
		s = strconv.Itoa(d.GPU)
	case KindMIGIndex:
		s = strconv.Itoa(d.GPU) + ":" + strconv.Itoa(d.MIGIndex)
	case KindDeviceName:
		s = "nvidia" + strconv.Itoa(d.GPU)
	case KindGKEMIG:
		s = "nvidia" + strconv.Itoa(d.GPU) + "/gi" + strconv.Itoa(d.GPUInstance)
	case KindGPUSplit:
		return d.UUID + "-" + strconv.Itoa(d.Replica)
	case KindDRAGPU:
		return "gpu-" + strconv.Itoa(d.GPU)
	case KindDRAVFIO:
		return "gpu-vfio-" + strconv.Itoa(d.GPU)
	case KindDRAMIG:
		s = "gpu-" + strconv.Itoa(d.GPU) + "-mig-"
		if d.Profile == "" {
			return s + strconv.Itoa(d.ProfileID) + "-" + strconv.Itoa(d.PlacementStart) + "-" + strconv.Itoa(d.PlacementSize)
		}
		return s + d.Profile + "-" + strconv.Itoa(d.ProfileID) + "-" + strconv.Itoa(d.PlacementStart)
	default:
		return ""
	}
	if d.Replica >= 0 {
		if d.Kind == KindDeviceName || d.Kind == KindGKEMIG {
			return s + "/vgpu" + strconv.Itoa(d.Replica)
		}
		return s + "::" + strconv.Itoa(d.Replica)
	}
	return s
}

// maxIDLen bounds the ids ParseDeviceID looks at; real ids are under 100 bytes.
const maxIDLen = 256

// ParseDeviceID parses a device id reported by the kubelet for a device
// plugin resource (or a DRA device name) in any of the forms idType allows.
// Numbers must be written canonically (no sign, no leading zeros), so a
// parsed id's String() is the id itself. Errors wrap ErrMalformedID and
// quote the id.
func ParseDeviceID(id string, idType IDType) (DeviceID, error) {
	d, reason := parseDeviceID(id, idType)
	if reason != "" {
		if len(id) > maxIDLen {
			id = id[:32] + "…"
		}
		return DeviceID{}, fmt.Errorf("%w %q: %s", ErrMalformedID, id, reason)
	}
	return d, nil
}

// parseDeviceID is ParseDeviceID with the failure as a reason instead of an
// error. Reasons come from a small fixed set and never quote the id, so
// that they can name the cause of a log line (see Client.diagnose).
func parseDeviceID(id string, idType IDType) (DeviceID, string) {
	if !idType.valid() {
		return DeviceID{}, "unknown id type " + idType.String()
	}
	if id == "" {
		return DeviceID{}, "empty"
	}
	if len(id) > maxIDLen {
		return DeviceID{}, "longer than " + strconv.Itoa(maxIDLen) + " bytes"
	}
	family, parse := IDTypeUID, parseUID
	switch {
	case strings.HasPrefix(id, "nvidia"):
		family, parse = IDTypeDeviceName, parseDeviceName
	case strings.HasPrefix(id, "gpu-"):
		family, parse = IDTypeDRA, parseDRA
	}
	if idType != IDTypeAuto && idType != family {
		return DeviceID{}, "a " + family.String() + " id, but the id type is " + idType.String()
	}
	d := DeviceID{GPU: -1, GPUInstance: -1, ComputeInstance: -1, MIGIndex: -1,
		ProfileID: -1, PlacementStart: -1, PlacementSize: -1, Replica: -1}
	if reason := parse(id, &d); reason != "" {
		return DeviceID{}, reason
	}
	return d, ""
}

// splitAt is where the "-<n>" of a KindGPUSplit id starts: after "GPU-"
// and the 36 characters of the UUID.
const splitAt = len("GPU-") + 36

// parseUID parses the device-plugin forms; it returns a reason on failure.
func parseUID(id string, d *DeviceID) string {
	base := id
	if i := strings.Index(id, "::"); i >= 0 {
		base = id[:i]
		n, ok := number(id[i+2:])
		if !ok {
			return "replica after \"::\" is not a number"
		}
		d.Replica = n
	}
	switch {
	case strings.HasPrefix(base, "MIG-GPU-"):
		parts := strings.Split(base[len("MIG-"):], "/")
		if len(parts) != 3 {
			return "legacy MIG id is not MIG-GPU-<uuid>/<gi>/<ci>"
		}
		if !isUUID(parts[0][len("GPU-"):]) {
			return "GPU UUID is not 8-4-4-4-12 hex digits"
		}
		gi, ok1 := number(parts[1])
		ci, ok2 := number(parts[2])
		if !ok1 || !ok2 {
			return "legacy MIG GPU or compute instance is not a number"
		}
		d.Kind, d.UUID, d.GPUInstance, d.ComputeInstance = KindLegacyMIG, parts[0], gi, ci
	case strings.HasPrefix(base, "GPU-") && len(base) > splitAt && base[splitAt] == '-':
		if d.Replica >= 0 {
			return "a split GPU slot \"-<n>\" with a \"::\" replica"
		}
		if !isUUID(base[4:splitAt]) {
			return "UUID is not 8-4-4-4-12 hex digits"
		}
		n, ok := number(base[splitAt+1:])
		if !ok {
			return "split GPU slot after the UUID is not \"-<number>\""
		}
		d.Kind, d.UUID, d.Replica = KindGPUSplit, base[:splitAt], n
	case strings.HasPrefix(base, "GPU-"), strings.HasPrefix(base, "MIG-"):
		if !isUUID(base[4:]) {
			return "UUID is not 8-4-4-4-12 hex digits"
		}
		d.Kind, d.UUID = KindGPUUUID, base
		if base[0] == 'M' {
			d.Kind = KindMIGUUID
		}
	case base != "" && base[0] >= '0' && base[0] <= '9':
		gpu, mig, isMIG := strings.Cut(base, ":")
		n, ok := number(gpu)
		if !ok {
			return "index is not a number"
		}
		d.Kind, d.GPU = KindIndex, n
		if isMIG {
			m, ok := number(mig)
			if !ok {
				return "MIG index after \":\" is not a number"
			}
			d.Kind, d.MIGIndex = KindMIGIndex, m
		}
	default:
		return "not a GPU-/MIG- UUID, legacy MIG id or index"
	}
	return ""
}

// parseDeviceName parses nvidiaN, nvidiaN/vgpuR, nvidiaN/giM, nvidiaN/giM/vgpuR.
func parseDeviceName(id string, d *DeviceID) string {
	parts := strings.Split(id, "/")
	n, ok := number(strings.TrimPrefix(parts[0], "nvidia"))
	if !ok {
		return "device name is not nvidia<minor>"
	}
	d.Kind, d.GPU = KindDeviceName, n
	rest := parts[1:]
	if len(rest) > 0 && strings.HasPrefix(rest[0], "gi") {
		gi, ok := number(rest[0][2:])
		if !ok {
			return "GPU instance is not gi<number>"
		}
		d.Kind, d.GPUInstance = KindGKEMIG, gi
		rest = rest[1:]
	}
	if len(rest) > 0 && strings.HasPrefix(rest[0], "vgpu") {
		r, ok := number(rest[0][4:])
		if !ok {
			return "shared replica is not vgpu<number>"
		}
		d.Replica = r
		rest = rest[1:]
	}
	if len(rest) > 0 {
		return "expected nvidia<minor>[/gi<id>][/vgpu<n>]"
	}
	return ""
}

// parseDRA parses the NVIDIA DRA driver's device names.
func parseDRA(id string, d *DeviceID) string {
	rest := id[len("gpu-"):]
	if v, ok := strings.CutPrefix(rest, "vfio-"); ok {
		n, ok := number(v)
		if !ok {
			return "expected gpu-vfio-<index>"
		}
		d.Kind, d.GPU = KindDRAVFIO, n
		return ""
	}
	minor, mig, isMIG := strings.Cut(rest, "-mig-")
	n, ok := number(minor)
	if !ok {
		return "expected gpu-<minor>[-mig-…]"
	}
	d.Kind, d.GPU = KindDRAGPU, n
	if !isMIG {
		return ""
	}
	d.Kind = KindDRAMIG
	parts := strings.Split(mig, "-")
	if len(parts) == 3 {
		id, ok1 := number(parts[0])
		start, ok2 := number(parts[1])
		size, ok3 := number(parts[2])
		if ok1 && ok2 && ok3 {
			d.ProfileID, d.PlacementStart, d.PlacementSize = id, start, size
			return ""
		}
	}
	if len(parts) < 3 {
		return "expected gpu-<minor>-mig-<profile>-<profile id>-<placement start>"
	}
	profileID, ok1 := number(parts[len(parts)-2])
	start, ok2 := number(parts[len(parts)-1])
	if !ok1 || !ok2 {
		return "MIG profile id and placement start are not numbers"
	}
	profile := strings.Join(parts[:len(parts)-2], "-")
	if !isProfileName(profile) {
		return "MIG profile is not lower-case letters, digits and dashes"
	}
	d.Profile, d.ProfileID, d.PlacementStart = profile, profileID, start
	return ""
}

// number parses a canonical non-negative decimal of at most 9 digits.
func number(s string) (int, bool) {
	if s == "" || len(s) > 9 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// isUUID reports whether s is 8-4-4-4-12 hexadecimal digits, as NVML writes
// GPU and MIG UUIDs after their prefix.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// isProfileName accepts what the DRA driver makes of a MIG profile: lower
// case letters and digits in dash-separated words, starting with a digit and
// holding a letter ("1g10gb", "1g24gb-gfx").
func isProfileName(s string) bool {
	if s == "" || s[0] < '0' || s[0] > '9' || s[len(s)-1] == '-' {
		return false
	}
	letter := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			letter = true
		case c >= '0' && c <= '9':
		case c == '-' && s[i-1] != '-':
		default:
			return false
		}
	}
	return letter
}
