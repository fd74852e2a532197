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
)

// String is the mechanism label value.
func (m Mechanism) String() string {
	switch m {
	case MechanismMPS:
		return "mps"
	case MechanismHAMi:
		return "hami"
	}
	return ""
}

// maxLocalDevices bounds the per-device limits kept per process.
const maxLocalDevices = 8

// Limits is what a sharing mechanism gave one process, from the
// environment it was started with. Per-device limits are indexed by the
// device's ordinal inside the container; All* apply to every device.
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
	// Visible is the number of GPUs NVIDIA_VISIBLE_DEVICES lists, 0 when
	// unknown ("all", unset, or not a list).
	Visible int
}

// Known reports whether a mechanism set any limit.
func (l *Limits) Known() bool { return l.Mechanism != MechanismNone }

// ForDevice returns the memory limit and SM share that apply to the
// process's GPU. An ordinal's own limit is used only when the container
// sees exactly one GPU (NVIDIA_VISIBLE_DEVICES lists one): ordinals follow
// the container's enumeration order, which the exporter cannot rebuild
// for several GPUs; limits for all devices apply whatever the count.
func (l *Limits) ForDevice() (memory uint64, sm float64) {
	memory, sm = l.AllMemoryBytes, l.AllSM
	if l.Visible == 1 {
		if l.MemoryBytes[0] != 0 {
			memory = l.MemoryBytes[0]
		}
		if l.SM[0] != 0 {
			sm = l.SM[0]
		}
	}
	return memory, sm
}

// Environment keys read (only these; the rest of the environment is
// skipped without copying).
//
// MPS (docs.nvidia.com/deploy/mps, "Environment Variables"):
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is a percentage of the GPU's threads
// for every device the client uses; CUDA_MPS_PINNED_DEVICE_MEM_LIMIT is a
// comma-separated list of <device ordinal>=<limit>, the limit a number
// with a unit (e.g. "0=1G,1=512M").
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
// do_init_device_memory_limits, do_init_device_sm_limits).
const (
	envMPSThreads  = "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
	envMPSMemory   = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"
	envHAMiMemory  = "CUDA_DEVICE_MEMORY_LIMIT"
	envHAMiSM      = "CUDA_DEVICE_SM_LIMIT"
	envVisible     = "NVIDIA_VISIBLE_DEVICES"
	envHAMiMemoryI = envHAMiMemory + "_"
	envHAMiSMI     = envHAMiSM + "_"
)

// ParseEnviron reads the limits of one process from its
// /proc/<pid>/environ (NUL-separated KEY=VALUE). Values it cannot parse
// are left out. HAMi's limits win over MPS's when both are set: HAMi-core
// enforces them inside the process whatever MPS allows.
func ParseEnviron(b []byte) Limits {
	var mps, hami Limits
	visible := 0
	for len(b) > 0 {
		var kv []byte
		if i := bytes.IndexByte(b, 0); i >= 0 {
			kv, b = b[:i], b[i+1:]
		} else {
			kv, b = b, nil
		}
		if len(kv) < len("CUDA_") || (kv[0] != 'C' && kv[0] != 'N') {
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
			if i, ok := ordinal(key[len(envHAMiMemoryI):]); ok {
				if v, ok := parseHAMiBytes(val); ok {
					hami.MemoryBytes[i], hami.Mechanism = v, MechanismHAMi
				}
			}
		case strings.HasPrefix(key, envHAMiSMI):
			if i, ok := ordinal(key[len(envHAMiSMI):]); ok {
				if v, ok := parseHAMiPercent(val); ok {
					hami.SM[i], hami.Mechanism = v, MechanismHAMi
				}
			}
		}
	}
	out := mps
	if hami.Known() {
		out = hami
	}
	out.Visible = visible
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

func ordinal(s string) (int, bool) {
	i, err := strconv.Atoi(s)
	return i, err == nil && i >= 0 && i < maxLocalDevices
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
		i, ok := ordinal(k)
		if !ok {
			continue
		}
		if b, ok := withUnit(v, true); ok && b > 0 {
			l.MemoryBytes[i], found = b, true
		}
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
