package processes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// listing is a Sampler that returns the same devices and error each time.
type listing struct {
	devs []Device
	err  error
}

func (l listing) Sample(context.Context) ([]Device, error) { return l.devs, l.err }
func (listing) Close() error                               { return nil }

func TestProbeSampler(t *testing.T) {
	t.Parallel()
	const (
		podUID = "aaaaaaaa-0000-4000-8000-00000000000a"
		ctrID  = "d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0"
	)
	inPod := "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + strings.ReplaceAll(podUID, "-", "_") +
		".slice/cri-containerd-" + ctrID + ".scope\n"
	onHost := "0::/system.slice/xorg.service\n"
	procs := func(pids ...uint32) []Process {
		var out []Process
		for _, pid := range pids {
			out = append(out, Process{PID: pid, Type: Compute})
		}
		return out
	}
	gpu := func(i int, pids ...uint32) Device {
		return Device{GPU: i, UUID: fmt.Sprintf("GPU-%d", i), GPUInstance: -1, Processes: procs(pids...)}
	}
	cases := []struct {
		name string
		// tree is the procfs content: pid -> its cgroup file.
		tree    map[uint32]string
		sampler listing
		want    Probe
		wantErr error // errors.Is; nil for none
	}{
		{
			name:    "containers and the host, a process on two GPUs counted once",
			tree:    map[uint32]string{100: inPod, 101: inPod, 200: onHost},
			sampler: listing{devs: []Device{gpu(0, 100, 200), gpu(1, 101, 100)}},
			want:    Probe{Devices: 2, Processes: 3, Containers: 2, Host: 1},
		},
		{
			name:    "PIDs procfs does not have: another PID namespace, or exited",
			tree:    map[uint32]string{100: inPod},
			sampler: listing{devs: []Device{gpu(0, 100, 4242, 4243)}},
			want:    Probe{Devices: 1, Processes: 3, Containers: 1, Missing: 2},
		},
		{
			name:    "a cgroup file that is not understood",
			tree:    map[uint32]string{100: "garbage without colons\n"},
			sampler: listing{devs: []Device{gpu(0, 100)}},
			want:    Probe{Devices: 1, Processes: 1, Unreadable: 1},
		},
		{
			name:    "an idle node",
			sampler: listing{devs: []Device{gpu(0), gpu(1)}},
			want:    Probe{Devices: 2},
		},
		{
			name:    "NVML missing",
			sampler: listing{err: fmt.Errorf("nvml init: %w", ErrUnavailable)},
			wantErr: ErrUnavailable,
		},
		{
			name:    "one device failed, the other answered",
			tree:    map[uint32]string{200: onHost},
			sampler: listing{devs: []Device{gpu(1, 200)}, err: errSomeDevice},
			want:    Probe{Devices: 1, Processes: 1, Host: 1},
			wantErr: errSomeDevice,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			for pid, cg := range tc.tree {
				if err := WriteProcess(root, pid, "worker", 1000, cg); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ProbeSampler(context.Background(), tc.sampler, root)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if got.Unreadable != len(got.Errors) {
				t.Errorf("%d unreadable with %d errors: %q", got.Unreadable, len(got.Errors), got.Errors)
			}
			got.Errors = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("probe %+v, want %+v", got, tc.want)
			}
		})
	}
}

var errSomeDevice = errors.New("GPU-0: nvmlDeviceGetComputeRunningProcesses: GPU is lost")

func TestProbeSamplerNamesTheFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "7"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "7", "stat"), []byte("7 (x) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "7", "cgroup"), []byte("nonsense\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ProbeSampler(context.Background(), listing{devs: []Device{{GPUInstance: -1, Processes: []Process{{PID: 7}}}}}, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Errors) != 1 || !strings.Contains(got.Errors[0], filepath.Join(root, "7", "cgroup")) {
		t.Errorf("errors %q, want one naming %s", got.Errors, filepath.Join(root, "7", "cgroup"))
	}
}
