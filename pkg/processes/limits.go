package processes

import (
	"bytes"
	"strconv"
	"strings"
)

// MaxEnvironBytes caps a /proc/<pid>/environ read: the environment a
// process was started with (execve(2)), read once per process. Larger
// environments are left unread and their limits unknown.
const MaxEnvironBytes = 256 << 10

// Mechanism is the sharing mechanism that set a process's limits, the
// mechanism label of gpu_container_*_limit_*.
type Mechanism uint8

// Mechanisms.
const (
	MechanismNone Mechanism = iota
	// MechanismMPS: NVIDIA's Multi-Process Service client limits.
	MechanismMPS
	// MechanismHAMi: HAMi-core's (libvgpu.so) limits, set by HAMi's
	// device plugin.
	MechanismHAMi
	// MechanismKAI: KAI Scheduler's (formerly Run:ai) GPU fraction, a
	// share of each device's memory that KAI schedules by and does not
	// enforce.
	MechanismKAI
)

// String is the mechanism label value.
func (m Mechanism) String() string {
	switch m {
	case MechanismMPS:
		return "mps"
	case MechanismHAMi:
		return "hami"
	case MechanismKAI:
		return "kai"
	}
	return ""
}

// maxLocalDevices bounds the per-device limits kept per process.
const maxLocalDevices = 8

// hamiMaxDevices is the number of ordinals HAMi-core reads limits for
// (CUDA_DEVICE_MAX_COUNT, Project-HAMi/HAMi-core 8f3a89c6
// src/multiprocess/multiprocess_memory_limit.h).
const hamiMaxDevices = 16

// Limits is what a sharing mechanism gave one process, from the
// environment it was started with. Per-device limits are indexed by the
// device's ordinal inside the container; All* apply to the ordinals
// without one of their own. ForDevice says which apply to one device.
type Limits struct {
	Mechanism Mechanism
	// MemoryBytes[i] is the device memory limit of ordinal i, 0 when none.
	MemoryBytes [maxLocalDevices]uint64
	// AllMemoryBytes applies to the ordinals without one of their own.
	AllMemoryBytes uint64
	// SM[i] is the SM share of ordinal i, a ratio 0-1, 0 when none.
	SM [maxLocalDevices]float64
	// AllSM applies to the ordinals without one of their own.
	AllSM float64
	// MemoryShare is a share of each device's memory (0-1), KAI's
	// GPU_PORTION: whoever knows the device's total memory turns it into
	// bytes. 0 when none.
	MemoryShare float64
	// Visible is the number of GPUs NVIDIA_VISIBLE_DEVICES lists, 0 when
	// unknown ("all", unset, or not a list).
	Visible int
	// CUDAVisible are the device UUIDs CUDA_VISIBLE_DEVICES lists, in
	// its order, when every entry is one ("GPU-…", "MIG-…"; a prefix of
	// one is allowed); nil otherwise.
	CUDAVisible []string
	// unplaced says that a per-device limit was set for an ordinal at or
	// beyond maxLocalDevices: it is not kept, so the ordinals' limits are
	// not all known.
	unplaced bool
}

// Known reports whether a mechanism set any limit.
func (l *Limits) Known() bool { return l.Mechanism != MechanismNone }

// ForDevice returns the memory limit and SM share that apply to the
// process's device uuid (the MIG device's UUID on a MIG instance, else
// the GPU's); 0 where none is known. KAI's MemoryShare applies to every
// device alike and is not part of it.
//
// Limits are indexed by ordinals of the devices as the process
// enumerates them, and which ordinal a device has is known only in these
// cases:
//
//   - MPS: an ordinal of CUDA_MPS_PINNED_DEVICE_MEM_LIMIT is a CUDA device
//     ordinal of the client; when CUDA_VISIBLE_DEVICES lists devices,
//     "they are enumerated in the order of the sequence" (CUDA
//     Programming Guide, "CUDA Environment Variables"; the MPS guide's
//     CUDA_VISIBLE_DEVICES section recommends UUIDs because the MPS server
//     remaps indexes). So when it lists UUIDs, ordinal i is its i-th entry.
//     Without it, CUDA orders the devices by CUDA_DEVICE_ORDER
//     (FASTEST_FIRST by default, a heuristic), not by
//     NVIDIA_VISIBLE_DEVICES, which only says which GPUs the container
//     gets (NVIDIA Container Toolkit, "Specialized Configurations with
//     Docker", GPU Enumeration).
//   - HAMi: HAMi-core indexes its limits by the container's NVML device
//     index (init_device_info records uuids[i] from
//     nvmlDeviceGetHandleByIndex(i), and HAMi's vGPUmonitor pairs
//     DeviceUUID(i) with DeviceMemoryLimit(i): Project-HAMi/HAMi-core
//     8f3a89c6 src/multiprocess/multiprocess_memory_limit.c,
//     Project-HAMi/HAMi 4707fb02 cmd/vGPUmonitor/metrics.go). NVML
//     promises no enumeration order ("no guarantees of consistency
//     between reboots"; "may not correlate with ... the CUDA device
//     index": nvmlDeviceGetHandleByIndex), and HAMi's device plugin
//     numbers CUDA_DEVICE_MEMORY_LIMIT_<i> in its own allocation order,
//     so an ordinal is never placed on a device.
//
// Otherwise an ordinal's limit applies when the container sees one GPU
// (NVIDIA_VISIBLE_DEVICES lists one: it is ordinal 0), and when every
// ordinal the container has (0 to NVIDIA_VISIBLE_DEVICES' count - 1;
// every ordinal when it does not list them) has the same limit, its own
// or the one for all devices: then it is that device's whatever its
// ordinal. Where the ordinals' limits differ, the device's limit is
// unknown and 0 is returned.
func (l *Limits) ForDevice(uuid string) (memory uint64, sm float64) {
	if i, ok := l.cudaOrdinal(uuid); ok && l.Mechanism == MechanismMPS {
		return l.memoryOf(i), l.smOf(i)
	}
	return uniform(l, l.memoryOf, l.AllMemoryBytes), uniform(l, l.smOf, l.AllSM)
}

func (l *Limits) memoryOf(i int) uint64 {
	if v := l.MemoryBytes[i]; v != 0 {
		return v
	}
	return l.AllMemoryBytes
}

func (l *Limits) smOf(i int) float64 {
	if v := l.SM[i]; v != 0 {
		return v
	}
	return l.AllSM
}

// uniform returns the limit every ordinal of the container has (of(i)),
// or 0 when they differ or are not all known. With the number of ordinals
// unknown (NVIDIA_VISIBLE_DEVICES "all" or unset) or beyond the ordinals
// kept, the ordinals past those kept have all, the limit for every
// device, and so must the kept ones.
func uniform[T uint64 | float64](l *Limits, of func(int) T, all T) T {
	n := l.Visible
	v := of(0)
	if n == 0 || n > maxLocalDevices {
		if l.unplaced || v != all {
			return 0
		}
		n = maxLocalDevices
	}
	for i := 1; i < n; i++ {
		if of(i) != v {
			return 0
		}
	}
	return v
}

// cudaOrdinal returns the position of device uuid in CUDA_VISIBLE_DEVICES:
// its CUDA ordinal, when it is below maxLocalDevices.
func (l *Limits) cudaOrdinal(uuid string) (int, bool) {
	if uuid == "" {
		return 0, false
	}
	for i, id := range l.CUDAVisible {
		if strings.HasPrefix(uuid, id) {
			return i, i < maxLocalDevices
		}
	}
	return 0, false
}

// Environment keys read (only these; the rest of the environment is
// skipped without copying).
//
// MPS (docs.nvidia.com/deploy/mps, "Environment Variables"):
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is a percentage of the GPU's threads
// for every device the client uses; CUDA_MPS_PINNED_DEVICE_MEM_LIMIT
// limits the memory the client can allocate on each device it names, a
// comma-separated list of <device ordinal>=<limit>, the limit a number
// with a unit: the guide's example is "0=1G,1=512MB" (1 GB on device 0,
// 512 MB on device 1); without it there is no client limit. The guide
// names no other form. Its units are read as powers of 1024 (K, M, G,
// with or without B): a public MPS walkthrough ("Multi-Process Service
// control GPU hardware resources") shows a client given "0=1G" (and the
// daemon's 2G, 4G) left 1024 (2048, 4096) MiB less the same context, not
// 10^9 bytes.
//
// HAMi: its device plugin sets CUDA_DEVICE_MEMORY_LIMIT_<i>="<MiB>m" per
// allocated device and CUDA_DEVICE_SM_LIMIT="<percent>"
// (Project-HAMi/HAMi 4707fb02, pkg/device-plugin/nvidiadevice/nvinternal/
// plugin/server.go); HAMi-core reads CUDA_DEVICE_MEMORY_LIMIT_<i>, then
// CUDA_DEVICE_MEMORY_LIMIT for every device, each a number with an
// optional K, M or G suffix (binary), and CUDA_DEVICE_SM_LIMIT_<i>, then
// CUDA_DEVICE_SM_LIMIT, a percentage; 0 or empty means no limit
// (Project-HAMi/HAMi-core 8f3a89c6,
// src/multiprocess/multiprocess_memory_limit.c, get_limit_from_env,
// do_init_device_memory_limits, do_init_device_sm_limits). KAI
// Scheduler's opt-in hamicore binder plugin (CHANGELOG.md: v0.16.0; its
// docs/gpu-sharing/hami/README.md asks for v0.17.0) sets
// CUDA_DEVICE_MEMORY_LIMIT="<MiB>m" on a fraction container for
// HAMi-core to enforce (kai-scheduler/KAI-Scheduler d5bc503a,
// pkg/binder/plugins/hamicore/hami_core.go): that process is HAMi's.
//
// KAI Scheduler: for a pod asking for a GPU fraction (annotation
// gpu-fraction, a share of the device's memory, or gpu-memory in MiB,
// which the scheduler turns into a share of the node's GPU memory rounded
// up to hundredths: getGpuMemoryFractionalOnNode), the binder's
// gpusharing plugin sets on the fraction container NVIDIA_VISIBLE_DEVICES
// (the reserved GPUs' UUIDs, or their CDI names), GPU_PORTION and the
// deprecated RUNAI_NUM_OF_GPUS, both the share of each device
// ("%.2f", e.g. "0.50": BindRequest's ReceivedGPU.Portion, "the portion
// size that the pod will receive from each connected GPU device")
// (NVIDIA/KAI-Scheduler 72de64fc, pkg/binder/common/gpu_access.go
// SetGPUPortion, pkg/binder/plugins/gpusharing/gpu_sharing.go,
// pkg/scheduler/cache/cache.go createBindRequest,
// pkg/apis/scheduling/v1alpha2/bindrequest_types.go). GPU_PORTION came
// with v0.7.6 (CHANGELOG.md); RUNAI_NUM_OF_GPUS is read when it is
// missing. KAI "does not enforce memory allocation limit"
// (docs/gpu-sharing/README.md): the share is what it scheduled, which is
// why gpu_container_memory_used_bytes beside it is worth watching.
const (
	envMPSThreads   = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
	envMPSMemory    = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
	envHAMiMemory   = "CUDA_DEVICE_MEMORY_LIMIT"
	envHAMiSM       = "CUDA_DEVICE_SM_LIMIT"
	envKAIPortion   = "GPU_PORTION"
	envKAIPortionBC = "RUNAI_NUM_OF_GPUS"
	envVisible      = "NVIDIA_VISIBLE_DEVICES"
	envCUDAVisible  = "CUDA_VISIBLE_DEVICES"
	envHAMiMemoryI  = envHAMiMemory + "_"
	envHAMiSMI      = envHAMiSM + "_"
)

// ParseEnviron reads the limits of one process from its
// /proc/<pid>/environ (NUL-separated KEY=VALUE). Values it cannot parse
// are left out. One mechanism is kept per process: HAMi's limits win
// over MPS's (HAMi-core enforces them inside the process whatever MPS
// allows), and MPS's over KAI's share (enforced limits over a scheduled
// share).
func ParseEnviron(b []byte) Limits {
	var mps, hami Limits
	var portion, portionBC float64
	var hasPortion, hasPortionBC bool
	visible := 0
	var cudaVisible []string
	for len(b) > 0 {
		var kv []byte
		if i := bytes.IndexByte(b, 0); i >= 0 {
			kv, b = b[:i], b[i+1:]
		} else {
			kv, b = b, nil
		}
		if len(kv) < len("CUDA_") || (kv[0] != 'C' && kv[0] != 'N' && kv[0] != 'G' && kv[0] != 'R') {
			continue
		}
		eq := bytes.IndexByte(kv, '=')
		if eq < 0 {
			continue
		}
		key, val := string(kv[:eq]), string(kv[eq+1:])
		switch {
		case key == envVisible:
			visible = countVisible(val)
		case key == envCUDAVisible:
			cudaVisible = visibleUUIDs(val)
		case key == envKAIPortion:
			portion, hasPortion = parsePortion(val)
		case key == envKAIPortionBC:
			portionBC, hasPortionBC = parsePortion(val)
		case key == envMPSThreads:
			if v, err := strconv.ParseFloat(val, 64); err == nil && v > 0 && v <= 100 {
				mps.AllSM, mps.Mechanism = v/100, MechanismMPS
			}
		case key == envMPSMemory:
			if parseMPSMemory(val, &mps) {
				mps.Mechanism = MechanismMPS
			}
		case key == envHAMiMemory:
			if v, ok := parseHAMiBytes(val); ok {
				hami.AllMemoryBytes, hami.Mechanism = v, MechanismHAMi
			}
		case key == envHAMiSM:
			if v, ok := parseHAMiPercent(val); ok {
				hami.AllSM, hami.Mechanism = v, MechanismHAMi
			}
		case strings.HasPrefix(key, envHAMiMemoryI):
			if v, ok := parseHAMiBytes(val); ok {
				hami.setOrdinal(key[len(envHAMiMemoryI):], func(i int) { hami.MemoryBytes[i] = v })
			}
		case strings.HasPrefix(key, envHAMiSMI):
			if v, ok := parseHAMiPercent(val); ok {
				hami.setOrdinal(key[len(envHAMiSMI):], func(i int) { hami.SM[i] = v })
			}
		}
	}
	var out Limits
	switch {
	case hami.Known():
		out = hami
	case mps.Known():
		out = mps
	case hasPortion:
		out.Mechanism, out.MemoryShare = MechanismKAI, portion
	case hasPortionBC:
		out.Mechanism, out.MemoryShare = MechanismKAI, portionBC
	}
	out.Visible, out.CUDAVisible = visible, cudaVisible
	return out
}

// setOrdinal sets a HAMi per-device limit of the ordinal s names with
// set. HAMi-core reads no ordinal from hamiMaxDevices on, so those are
// ignored; one from maxLocalDevices on is not kept, and marks the
// ordinals' limits incomplete.
func (l *Limits) setOrdinal(s string, set func(int)) {
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= hamiMaxDevices {
		return
	}
	l.Mechanism = MechanismHAMi
	if i >= maxLocalDevices {
		l.unplaced = true
		return
	}
	set(i)
}

// parsePortion reads KAI's GPU_PORTION, a share of each device's memory
// in (0, 1].
func parsePortion(s string) (float64, bool) {
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil && v > 0 && v <= 1
}

// visibleUUIDs returns the entries of CUDA_VISIBLE_DEVICES when every one
// is a GPU or MIG device UUID or a prefix of one (CUDA accepts "enough
// digits from the beginning of the GPU UUID"); nil when any is an index,
// the legacy "MIG-GPU-…/gi/ci" form, or the list is empty.
func visibleUUIDs(v string) []string {
	if v == "" {
		return nil
	}
	var out []string
	for id := range strings.SplitSeq(v, ",") {
		id = strings.TrimSpace(id)
		if len(id) <= len("GPU-") || !(strings.HasPrefix(id, "GPU-") || strings.HasPrefix(id, "MIG-")) || strings.ContainsRune(id, '/') {
			return nil
		}
		out = append(out, id)
	}
	return out
}

// countVisible counts the GPUs of NVIDIA_VISIBLE_DEVICES: a comma list of
// indexes or UUIDs; "all", "none", "void" and empty say nothing here.
func countVisible(v string) int {
	switch v {
	case "", "all", "none", "void":
		return 0
	}
	return strings.Count(v, ",") + 1
}

// parseHAMiBytes reads HAMi-core's memory limit: digits and an optional
// K, M or G suffix (powers of 1024); 0 is no limit.
func parseHAMiBytes(s string) (uint64, bool) {
	v, ok := withUnit(s, false)
	return v, ok && v > 0
}

// parseHAMiPercent reads a percentage 1-100 as a ratio; 0 is no limit.
func parseHAMiPercent(s string) (float64, bool) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil || v == 0 || v > 100 {
		return 0, false
	}
	return float64(v) / 100, true
}

// parseMPSMemory reads "<ordinal>=<limit>[,...]" into l.
func parseMPSMemory(s string, l *Limits) bool {
	found := false
	for part := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(k)
		b, ok := withUnit(v, true)
		if err != nil || i < 0 || !ok || b == 0 {
			continue
		}
		found = true
		if i >= maxLocalDevices {
			l.unplaced = true
			continue
		}
		l.MemoryBytes[i] = b
	}
	return found
}

// withUnit reads digits followed by an optional unit K, M, G (and, when
// bytesSuffix, KB, MB, GB), each a power of 1024.
func withUnit(s string, bytesSuffix bool) (uint64, bool) {
	if bytesSuffix {
		s = strings.TrimSuffix(strings.TrimSuffix(s, "B"), "b")
	}
	scale := uint64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K', 'k':
			scale, s = 1<<10, s[:n-1]
		case 'M', 'm':
			scale, s = 1<<20, s[:n-1]
		case 'G', 'g':
			scale, s = 1<<30, s[:n-1]
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > (1<<64-1)/scale {
		return 0, false
	}
	return v * scale, true
}
