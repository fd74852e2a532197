//go:build cgo && linux

package doctor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
)

// mockNVML is go-nvml's mock of a driver with one GPU running pids as
// compute processes, or of a host where nvmlInit answers initRet.
func mockNVML(initRet nvml.Return, pids ...uint32) *mock.Interface {
	var infos []nvml.ProcessInfo
	for _, pid := range pids {
		// GpuInstanceId/ComputeInstanceId 0xFFFFFFFF: not a MIG device
		// (nvmlProcessInfo_t).
		infos = append(infos, nvml.ProcessInfo{Pid: pid, UsedGpuMemory: 1 << 30, GpuInstanceId: 0xFFFFFFFF, ComputeInstanceId: 0xFFFFFFFF})
	}
	gpu := &mock.Device{
		GetUUIDFunc: func() (string, nvml.Return) { return testUUID, nvml.SUCCESS },
		// A GPU without MIG answers NOT_SUPPORTED (nvmlDeviceGetMigMode).
		GetMigModeFunc:                  func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED },
		GetComputeRunningProcessesFunc:  func() ([]nvml.ProcessInfo, nvml.Return) { return infos, nvml.SUCCESS },
		GetGraphicsRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS },
		// "If no valid sample entries are found since the
		// lastSeenTimeStamp, NVML_ERROR_NOT_FOUND is returned"
		// (nvmlDeviceGetProcessUtilization).
		GetProcessUtilizationFunc: func(uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) { return nil, nvml.ERROR_NOT_FOUND },
	}
	return &mock.Interface{
		InitFunc:                   func() nvml.Return { return initRet },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return 1, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) { return gpu, nvml.SUCCESS },
		// The MPS listing is looked up before use; this driver lacks it.
		ExtensionsFunc: func() nvml.ExtendedInterface {
			return &mock.ExtendedInterface{LookupSymbolFunc: func(string) error { return nvml.ERROR_FUNCTION_NOT_FOUND }}
		},
	}
}

// TestCheckProcessesNVML runs the exporter's NVML sampler on go-nvml's mock
// and a fake procfs: the check reaches the GPUs' processes through the
// same code the exporter samples with.
func TestCheckProcessesNVML(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		lib     *mock.Interface
		pid2    string
		want    Status
		found   string
		details string
	}{
		{"host PIDs resolve", mockNVML(nvml.SUCCESS, 100, 200), kthreadd, OK,
			"1 devices sampled, 2 GPU processes", "1 in pods' containers, 1 on the host, 0 not in procfs"},
		{"no libnvidia-ml.so.1", mockNVML(nvml.ERROR_LIBRARY_NOT_FOUND), kthreadd, Fail,
			"NVML cannot be loaded or initialised", "the host's PID namespace"},
		{"no driver", mockNVML(nvml.ERROR_DRIVER_NOT_LOADED), kthreadd, Fail,
			"ERROR_DRIVER_NOT_LOADED", ""},
		{"a container's procfs", mockNVML(nvml.SUCCESS, 100), containerPID2, Fail,
			"shows a container's PID namespace", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := processes.NewNVML(processes.NVMLConfig{Library: tc.lib, CallTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			procfs := procTree(t, tc.pid2, map[uint32]string{100: podCgroup, 200: hostCgroup})
			cfg := Config{NodeName: "node-1", Timeout: 5 * time.Second, Processes: Processes{
				Mode: processes.ModeContainer, Given: true, Runs: true,
				Sampling: func() *ProcessSampling { return &ProcessSampling{Sampler: s, Procfs: procfs, HostPIDs: true} },
			}}
			res := checkProcesses(context.Background(), cfg)
			if res.Status != tc.want || !strings.Contains(res.Found, tc.found) {
				t.Errorf("%s %q, want %s %q", res.Status, res.Found, tc.want, tc.found)
			}
			if d := strings.Join(res.Details, "\n"); !strings.Contains(d, tc.details) {
				t.Errorf("details %q, want %q", d, tc.details)
			}
		})
	}
}
