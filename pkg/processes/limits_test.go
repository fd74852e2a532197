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
// CUDA_DEVICE_SM_LIMIT=50), HAMi-core's README "1g" for every device, and
// MPS's "<ordinal>=<limit>" list ("0=1G", "0=512M" in public uses).
func TestParseEnviron(t *testing.T) {
	t.Parallel()
	const mib, gib = 1 << 20, 1 << 30
	cases := []struct {
		name    string
		env     []byte
		mech    Mechanism
		memory  uint64
		sm      float64
		visible int
	}{
		{"none", environ("PATH=/usr/bin", "HOME=/root"), MechanismNone, 0, 0, 0},
		{"hami one device", environ("NVIDIA_VISIBLE_DEVICES=GPU-1", "CUDA_DEVICE_MEMORY_LIMIT_0=3000m", "CUDA_DEVICE_SM_LIMIT=50"), MechanismHAMi, 3000 * mib, 0.5, 1},
		{"hami every device", environ("CUDA_DEVICE_MEMORY_LIMIT=1g"), MechanismHAMi, gib, 0, 0},
		{"hami 0 is no limit", environ("CUDA_DEVICE_SM_LIMIT=0", "CUDA_DEVICE_MEMORY_LIMIT=0"), MechanismNone, 0, 0, 0},
		{"hami per-device SM", environ("NVIDIA_VISIBLE_DEVICES=0", "CUDA_DEVICE_SM_LIMIT_0=30", "CUDA_DEVICE_SM_LIMIT=50"), MechanismHAMi, 0, 0.3, 1},
		{"hami ordinal of two GPUs is not placed", environ("NVIDIA_VISIBLE_DEVICES=GPU-1,GPU-2", "CUDA_DEVICE_MEMORY_LIMIT_0=3000m", "CUDA_DEVICE_SM_LIMIT=50"), MechanismHAMi, 0, 0.5, 2},
		{"mps", environ("NVIDIA_VISIBLE_DEVICES=GPU-1", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G,1=512M"), MechanismMPS, gib, 0.25, 1},
		{"mps MB", environ("NVIDIA_VISIBLE_DEVICES=GPU-1", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=512MB"), MechanismMPS, 512 * mib, 0, 1},
		{"hami wins over mps", environ("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25", "CUDA_DEVICE_SM_LIMIT=40"), MechanismHAMi, 0, 0.4, 0},
		{"garbage", environ("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=lots", "CUDA_DEVICE_MEMORY_LIMIT_9=1g", "CUDA_DEVICE_MEMORY_LIMIT=12x", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=1G"), MechanismNone, 0, 0, 0},
		{"no trailing NUL", []byte("CUDA_DEVICE_SM_LIMIT=20"), MechanismHAMi, 0, 0.2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := ParseEnviron(tc.env)
			mem, sm := l.ForDevice()
			if l.Mechanism != tc.mech || mem != tc.memory || sm != tc.sm || l.Visible != tc.visible {
				t.Errorf("got %s %d %g visible %d; want %s %d %g visible %d", l.Mechanism, mem, sm, l.Visible, tc.mech, tc.memory, tc.sm, tc.visible)
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
		if pid == 1001 {
			env = []string{"NVIDIA_VISIBLE_DEVICES=GPU-0", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2G"}
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
			"pod-0-2": {Mechanism: MechanismHAMi, MemoryLimitBytes: 3000 << 20, SMLimit: 0.5},
			"pod-0-3": {},
		}
		for pod, w := range want {
			g := got[pod]
			if g.Processes != 1 || g.Mechanism != w.Mechanism || g.MemoryLimitBytes != w.MemoryLimitBytes || g.SMLimit != w.SMLimit {
				t.Errorf("round %d %s: %+v, want %+v", round, pod, g, w)
			}
		}
	}
}
