package processes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func environ(kv ...string) []byte { return []byte(strings.Join(kv, "\x00") + "\x00") }

// TestParseEnviron: the values are the forms their producers write: HAMi's
// device plugin "3000m" and "50" (Project-HAMi/HAMi 4707fb02,
// plugin/server_test.go expects CUDA_DEVICE_MEMORY_LIMIT_0=3000m,
// CUDA_DEVICE_SM_LIMIT=50), HAMi-core's README "1g" for every device,
// MPS's "<ordinal>=<limit>" list (the MPS guide's "0=1G,1=512MB"), and KAI
// Scheduler's GPU_PORTION "%.2f" with the reserved GPU's UUID in
// NVIDIA_VISIBLE_DEVICES (NVIDIA/KAI-Scheduler 72de64fc,
// pkg/binder/common/gpu_access.go, pkg/scheduler/cache/cache.go); the
// device asked about is devA unless a case says otherwise.
func TestParseEnviron(t *testing.T) {
	t.Parallel()
	const mib, gib = 1 << 20, 1 << 30
	const devA, devB = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", "GPU-2c1c7e4a-0b5e-8a3c-1e7d-5f6a7b8c9d0e"
	cases := []struct {
		name    string
		env     []byte
		dev     string
		mech    Mechanism
		memory  uint64
		sm      float64
		share   float64
		visible int
	}{
		{"none", environ("PATH=/usr/bin", "HOME=/root"), "", MechanismNone, 0, 0, 0, 0},
		{"hami one device", environ("NVIDIA_VISIBLE_DEVICES=GPU-1", "CUDA_DEVICE_MEMORY_LIMIT_0=3000m", "CUDA_DEVICE_SM_LIMIT=50"), "", MechanismHAMi, 3000 * mib, 0.5, 0, 1},
		{"hami every device", environ("CUDA_DEVICE_MEMORY_LIMIT=1g"), "", MechanismHAMi, gib, 0, 0, 0},
		{"hami 0 is no limit", environ("CUDA_DEVICE_SM_LIMIT=0", "CUDA_DEVICE_MEMORY_LIMIT=0"), "", MechanismNone, 0, 0, 0, 0},
		{"hami per-device SM", environ("NVIDIA_VISIBLE_DEVICES=0", "CUDA_DEVICE_SM_LIMIT_0=30", "CUDA_DEVICE_SM_LIMIT=50"), "", MechanismHAMi, 0, 0.3, 0, 1},
		{"hami ordinal of two GPUs is not placed", environ("NVIDIA_VISIBLE_DEVICES=GPU-1,GPU-2", "CUDA_DEVICE_MEMORY_LIMIT_0=3000m", "CUDA_DEVICE_SM_LIMIT=50"), "", MechanismHAMi, 0, 0.5, 0, 2},
		// HAMi's device plugin gives each device of a container the same
		// gpumem: whatever the ordinals' order, each GPU has it.
		{"hami two GPUs, same limit each", environ("NVIDIA_VISIBLE_DEVICES="+devA+","+devB, "CUDA_DEVICE_MEMORY_LIMIT_0=3000m", "CUDA_DEVICE_MEMORY_LIMIT_1=3000m", "CUDA_DEVICE_SM_LIMIT=50"), devB, MechanismHAMi, 3000 * mib, 0.5, 0, 2},
		{"hami two GPUs, different limits", environ("NVIDIA_VISIBLE_DEVICES="+devA+","+devB, "CUDA_DEVICE_MEMORY_LIMIT_0=3000m", "CUDA_DEVICE_MEMORY_LIMIT_1=5000m"), devA, MechanismHAMi, 0, 0, 0, 2},
		// Regression: the limit for all devices is not the one of an
		// ordinal that has its own; which GPU is ordinal 0 is unknown.
		{"hami own limit beside the one for all, two GPUs", environ("NVIDIA_VISIBLE_DEVICES="+devA+","+devB, "CUDA_DEVICE_MEMORY_LIMIT=1g", "CUDA_DEVICE_MEMORY_LIMIT_0=3000m"), devB, MechanismHAMi, 0, 0, 0, 2},
		{"hami own limit beside the one for all, GPUs unlisted", environ("NVIDIA_VISIBLE_DEVICES=all", "CUDA_DEVICE_SM_LIMIT=50", "CUDA_DEVICE_SM_LIMIT_1=20"), devB, MechanismHAMi, 0, 0, 0, 0},
		{"hami own limits equal to the one for all, GPUs unlisted", environ("CUDA_DEVICE_MEMORY_LIMIT=1g", "CUDA_DEVICE_MEMORY_LIMIT_1=1024m"), devB, MechanismHAMi, gib, 0, 0, 0},
		// HAMi-core reads ordinals up to 15: one past the kept eight makes
		// the others' agreement unknowable.
		{"hami ordinal 9", environ("CUDA_DEVICE_MEMORY_LIMIT=1g", "CUDA_DEVICE_MEMORY_LIMIT_9=2g"), "", MechanismHAMi, 0, 0, 0, 0},
		// Ten GPUs, the eight kept ordinals alike: ordinals 8 and 9 have
		// the limit for all devices, which differs.
		{"hami ten GPUs, eight own limits", environ("NVIDIA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7,8,9", "CUDA_DEVICE_MEMORY_LIMIT=1g",
			"CUDA_DEVICE_MEMORY_LIMIT_0=2g", "CUDA_DEVICE_MEMORY_LIMIT_1=2g", "CUDA_DEVICE_MEMORY_LIMIT_2=2g", "CUDA_DEVICE_MEMORY_LIMIT_3=2g",
			"CUDA_DEVICE_MEMORY_LIMIT_4=2g", "CUDA_DEVICE_MEMORY_LIMIT_5=2g", "CUDA_DEVICE_MEMORY_LIMIT_6=2g", "CUDA_DEVICE_MEMORY_LIMIT_7=2g"), "", MechanismHAMi, 0, 0, 0, 10},
		{"hami eight GPUs, eight own limits", environ("NVIDIA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "CUDA_DEVICE_MEMORY_LIMIT=1g",
			"CUDA_DEVICE_MEMORY_LIMIT_0=2g", "CUDA_DEVICE_MEMORY_LIMIT_1=2g", "CUDA_DEVICE_MEMORY_LIMIT_2=2g", "CUDA_DEVICE_MEMORY_LIMIT_3=2g",
			"CUDA_DEVICE_MEMORY_LIMIT_4=2g", "CUDA_DEVICE_MEMORY_LIMIT_5=2g", "CUDA_DEVICE_MEMORY_LIMIT_6=2g", "CUDA_DEVICE_MEMORY_LIMIT_7=2g"), "", MechanismHAMi, 2 * gib, 0, 0, 8},
		{"hami ordinal 8 of ten listed GPUs", environ("NVIDIA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7,8,9", "CUDA_DEVICE_MEMORY_LIMIT=1g", "CUDA_DEVICE_MEMORY_LIMIT_8=2g"), "", MechanismHAMi, 0, 0, 0, 10},
		{"mps", environ("NVIDIA_VISIBLE_DEVICES=GPU-1", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G,1=512MB"), "", MechanismMPS, gib, 0.25, 0, 1},
		{"mps MB", environ("NVIDIA_VISIBLE_DEVICES=GPU-1", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=512MB"), "", MechanismMPS, 512 * mib, 0, 0, 1},
		// MPS ordinals are CUDA's: CUDA_VISIBLE_DEVICES' UUIDs in order
		// place them, an abbreviated UUID too.
		{"mps ordinal placed by CUDA_VISIBLE_DEVICES", environ("NVIDIA_VISIBLE_DEVICES="+devA+","+devB, "CUDA_VISIBLE_DEVICES="+devB+","+devA, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G,1=512MB"), devA, MechanismMPS, 512 * mib, 0, 0, 2},
		{"mps ordinal 0 placed by an abbreviated UUID", environ("CUDA_VISIBLE_DEVICES=GPU-2c1c7e4a,"+devA, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G,1=512MB"), devB, MechanismMPS, gib, 0, 0, 0},
		// Ordinals past the eight kept, and "GPU-" (a prefix of every
		// UUID), place nothing.
		{"mps ordinal 8 by CUDA_VISIBLE_DEVICES", environ("CUDA_VISIBLE_DEVICES=GPU-0,GPU-1,GPU-2,GPU-3,GPU-4,GPU-5,GPU-6,GPU-7,"+devA, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G"), devA, MechanismMPS, 0, 0, 0, 0},
		{"mps ordinal 8", environ("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=8=1G"), "", MechanismMPS, 0, 0, 0, 0},
		{"mps GPU- is no UUID", environ("CUDA_VISIBLE_DEVICES=GPU-,"+devA, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G,1=512M"), devA, MechanismMPS, 0, 0, 0, 0},
		{"mps ordinals by index are not placed", environ("NVIDIA_VISIBLE_DEVICES="+devA+","+devB, "CUDA_VISIBLE_DEVICES=1,0", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G,1=512MB"), devA, MechanismMPS, 0, 0, 0, 2},
		{"mps two GPUs in NVIDIA_VISIBLE_DEVICES order are not placed", environ("NVIDIA_VISIBLE_DEVICES="+devA+","+devB, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G,1=512MB"), devB, MechanismMPS, 0, 0, 0, 2},
		{"mps two GPUs, same limit each", environ("NVIDIA_VISIBLE_DEVICES="+devA+","+devB, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2G,1=2048M"), devB, MechanismMPS, 2 * gib, 0, 0, 2},
		{"hami wins over mps", environ("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25", "CUDA_DEVICE_SM_LIMIT=40"), "", MechanismHAMi, 0, 0.4, 0, 0},
		{"kai fraction", environ("NVIDIA_VISIBLE_DEVICES="+devA, "RUNAI_NUM_OF_GPUS=0.50", "GPU_PORTION=0.50"), "", MechanismKAI, 0, 0, 0.5, 1},
		// A fraction of several devices: GPU_PORTION is each one's share.
		{"kai fraction of two GPUs", environ("NVIDIA_VISIBLE_DEVICES="+devA+","+devB, "GPU_PORTION=0.25"), devB, MechanismKAI, 0, 0, 0.25, 2},
		{"kai whole GPU", environ("NVIDIA_VISIBLE_DEVICES="+devA, "GPU_PORTION=1.00"), "", MechanismKAI, 0, 0, 1, 1},
		{"kai before v0.7.6", environ("NVIDIA_VISIBLE_DEVICES="+devA, "RUNAI_NUM_OF_GPUS=0.30"), "", MechanismKAI, 0, 0, 0.3, 1},
		{"kai GPU_PORTION wins", environ("RUNAI_NUM_OF_GPUS=0.30", "GPU_PORTION=0.40"), "", MechanismKAI, 0, 0, 0.4, 0},
		{"kai CDI device names", environ("NVIDIA_VISIBLE_DEVICES=k8s.device-plugin.nvidia.com/gpu="+devA, "GPU_PORTION=0.75"), "", MechanismKAI, 0, 0, 0.75, 1},
		// KAI's hamicore plugin: HAMi-core enforces the limit.
		{"kai with hamicore", environ("NVIDIA_VISIBLE_DEVICES="+devA, "GPU_PORTION=0.27", "CUDA_DEVICE_MEMORY_LIMIT=4147m"), "", MechanismHAMi, 4147 * mib, 0, 0, 1},
		{"mps wins over kai", environ("NVIDIA_VISIBLE_DEVICES="+devA, "GPU_PORTION=0.50", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50"), "", MechanismMPS, 0, 0.5, 0, 1},
		{"kai no share", environ("GPU_PORTION=0.00", "RUNAI_NUM_OF_GPUS=2"), "", MechanismNone, 0, 0, 0, 0},
		{"garbage", environ("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=lots", "CUDA_DEVICE_MEMORY_LIMIT_16=1g", "CUDA_DEVICE_MEMORY_LIMIT=12x", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=1G", "GPU_PORTION=half"), "", MechanismNone, 0, 0, 0, 0},
		{"no trailing NUL", []byte("CUDA_DEVICE_SM_LIMIT=20"), "", MechanismHAMi, 0, 0.2, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := ParseEnviron(tc.env)
			dev := tc.dev
			if dev == "" {
				dev = devA
			}
			mem, sm := l.ForDevice(dev)
			if l.Mechanism != tc.mech || mem != tc.memory || sm != tc.sm || l.MemoryShare != tc.share || l.Visible != tc.visible {
				t.Errorf("got %s %d %g share %g visible %d; want %s %d %g share %g visible %d",
					l.Mechanism, mem, sm, l.MemoryShare, l.Visible, tc.mech, tc.memory, tc.sm, tc.share, tc.visible)
			}
		})
	}
}

// TestAccountantLimits: a container's processes carry their limits into
// its row, read once from environ; an unreadable environment leaves them
// out without failing attribution.
func TestAccountantLimits(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s, pods := scaleNode(t, root, 1, 4)
	for pid := uint32(1000); pid < 1004; pid++ {
		env := []string{"NVIDIA_VISIBLE_DEVICES=GPU-0", "CUDA_DEVICE_MEMORY_LIMIT_0=3000m", "CUDA_DEVICE_SM_LIMIT=50"}
		switch pid {
		case 1001:
			env = []string{"NVIDIA_VISIBLE_DEVICES=GPU-0", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2G"}
		case 1002: // a KAI Scheduler fraction container
			env = []string{"NVIDIA_VISIBLE_DEVICES=GPU-0", "RUNAI_NUM_OF_GPUS=0.50", "GPU_PORTION=0.50"}
		}
		if pid == 1003 { // no environ file: limits unknown
			if err := os.Remove(filepath.Join(root, "1003", "environ")); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := WriteEnviron(root, pid, env); err != nil {
			t.Fatal(err)
		}
	}
	a, err := NewAccountant(Config{Procfs: root, Mode: ModeContainer, Pods: pods}, s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		devs, err := a.Collect(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]Usage{}
		for _, c := range devs[0].Containers {
			got[c.Pod] = c
		}
		want := map[string]Usage{
			"pod-0-0": {Mechanism: MechanismHAMi, MemoryLimitBytes: 3000 << 20, SMLimit: 0.5},
			"pod-0-1": {Mechanism: MechanismMPS, MemoryLimitBytes: 2 << 30, SMLimit: 0.25},
			"pod-0-2": {Mechanism: MechanismKAI, MemoryShare: 0.5},
			"pod-0-3": {},
		}
		for pod, w := range want {
			g := got[pod]
			if g.Processes != 1 || g.Mechanism != w.Mechanism || g.MemoryLimitBytes != w.MemoryLimitBytes || g.SMLimit != w.SMLimit || g.MemoryShare != w.MemoryShare {
				t.Errorf("round %d %s: %+v, want %+v", round, pod, g, w)
			}
		}
	}
}

// TestAccountantPerDeviceLimits: one MPS client on two GPUs, its CUDA
// ordinals placed by CUDA_VISIBLE_DEVICES (listed in the other order than
// the GPUs), gets each GPU's own limit; a client on a MIG device is
// placed by the MIG device's UUID, not its GPU's.
func TestAccountantPerDeviceLimits(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const uid, cidA, cidB = "00000000-0000-4000-8000-000000000001", "a1", "b2"
	pods := podTable{
		uid + "/" + strings.Repeat(cidA, 32): {Namespace: "ns", Pod: "multi", Container: "main"},
		uid + "/" + strings.Repeat(cidB, 32): {Namespace: "ns", Pod: "mig", Container: "main"},
	}
	envs := map[uint32][]string{
		2000: {"NVIDIA_VISIBLE_DEVICES=GPU-a,GPU-b", "CUDA_VISIBLE_DEVICES=GPU-b,GPU-a", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G,1=512M"},
		2001: {"CUDA_VISIBLE_DEVICES=GPU-a,MIG-c1", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G,1=256M"},
	}
	for pid, cid := range map[uint32]string{2000: cidA, 2001: cidB} {
		if err := WriteProcess(root, pid, "python", 1, cgroupOf(uid, strings.Repeat(cid, 32))); err != nil {
			t.Fatal(err)
		}
		if err := WriteEnviron(root, pid, envs[pid]); err != nil {
			t.Fatal(err)
		}
	}
	proc := func(pid uint32) []Process {
		return []Process{{PID: pid, Type: Compute, UsedBytes: 1 << 20, UsedKnown: true}}
	}
	s := &fixedSampler{devs: []Device{
		{GPU: 0, UUID: "GPU-a", GPUInstance: -1, Processes: proc(2000)},
		{GPU: 1, UUID: "GPU-b", GPUInstance: -1, Processes: proc(2000)},
		{GPU: 2, UUID: "GPU-c", GPUInstance: 1, MIGUUID: "MIG-c1", Processes: proc(2001)},
	}}
	a, err := NewAccountant(Config{Procfs: root, Mode: ModeContainer, Pods: pods}, s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	devs, err := a.Collect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"GPU-a": 512 << 20, "GPU-b": 1 << 30, "GPU-c": 256 << 20}
	for _, d := range devs {
		if len(d.Containers) != 1 {
			t.Fatalf("%s: %+v", d.UUID, d.Containers)
		}
		if c := d.Containers[0]; c.Mechanism != MechanismMPS || c.MemoryLimitBytes != want[d.UUID] {
			t.Errorf("%s: %s %d, want mps %d", d.UUID, c.Mechanism, c.MemoryLimitBytes, want[d.UUID])
		}
	}
}

// FuzzParseEnviron: any environment parses without panicking, and what
// it gives a device is a limit: an SM share and a memory share within
// 0-1, a mechanism when any is set.
func FuzzParseEnviron(f *testing.F) {
	f.Add([]byte("NVIDIA_VISIBLE_DEVICES=GPU-a,GPU-b\x00CUDA_VISIBLE_DEVICES=GPU-b,GPU-a\x00CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G,1=512MB\x00"), "GPU-a")
	f.Add([]byte("CUDA_DEVICE_MEMORY_LIMIT_15=1g\x00CUDA_DEVICE_SM_LIMIT_3=20\x00CUDA_DEVICE_MEMORY_LIMIT=3000m\x00"), "GPU-x")
	f.Add([]byte("NVIDIA_VISIBLE_DEVICES=MIG-c1\x00GPU_PORTION=0.25\x00RUNAI_NUM_OF_GPUS=0.25"), "MIG-c1")
	f.Fuzz(func(t *testing.T, env []byte, dev string) {
		l := ParseEnviron(env)
		mem, sm := l.ForDevice(dev)
		if sm < 0 || sm > 1 || !(l.MemoryShare >= 0 && l.MemoryShare <= 1) {
			t.Errorf("sm %g share %g out of 0-1", sm, l.MemoryShare)
		}
		if (mem != 0 || sm != 0 || l.MemoryShare != 0) && !l.Known() {
			t.Errorf("limits %d %g %g without a mechanism", mem, sm, l.MemoryShare)
		}
	})
}
