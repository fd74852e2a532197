//go:build cgo && linux

package doctor

import (
	"context"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim/kubelet"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
	"github.com/gpu-exporter/gpu-exporter/pkg/source/dcgm"
	"github.com/gpu-exporter/gpu-exporter/tests/fakedcgm"
)

// TestDoctorOnFakeDCGM runs the doctor through the real go-dcgm path on the
// fake libdcgm with injected faults. The fake reads its state from the
// environment (t.Setenv) and go-dcgm holds one connection per process, so
// the cases run one after the other.
func TestDoctorOnFakeDCGM(t *testing.T) {
	fakedcgm.Load(t)
	const uuid = "GPU-aaaaaaaa-bbbb-cccc-dddd-000000000000"
	healthy := func() fakedcgm.State {
		return fakedcgm.State{
			Driver: "570.86.15",
			GPUs:   []fakedcgm.GPU{{ID: 0, UUID: uuid, Name: "NVIDIA H100 80GB HBM3", BusID: "00000000:18:00.0", Minor: 0, FBMiB: 81559, Profiling: []int{1002}}},
			Values: []fakedcgm.Value{
				fakedcgm.Int(fakedcgm.EntityGPU, 0, 150, 41),
				fakedcgm.Float(fakedcgm.EntityGPU, 0, 155, 120.5),
				fakedcgm.Float(fakedcgm.EntityGPU, 0, 1002, 0.5),
			},
		}
	}
	cat := catalog(t)
	var set []fields.Field
	for _, name := range []string{"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_PROF_SM_ACTIVE"} {
		f, ok := cat.Lookup(name)
		if !ok {
			t.Fatalf("catalog lacks %s", name)
		}
		set = append(set, f)
	}
	cases := []struct {
		name    string
		state   func(fakedcgm.State) fakedcgm.State
		kubelet func(*kubelet.Server)
		// noSysAdmin: the process lacks CAP_SYS_ADMIN.
		noSysAdmin bool
		checks     []check
		failed     bool
	}{
		{
			name: "healthy",
			kubelet: func(k *kubelet.Server) {
				k.SetPods([]kubelet.Pod{{Namespace: "ml", Name: "train", Containers: []kubelet.Container{{Name: "c", Devices: []kubelet.Device{{Resource: "nvidia.com/gpu", IDs: []string{uuid}}}}}}})
			},
			checks: []check{
				{CheckSource, OK, []string{"uses dcgm (embedded hostengine)", "1 GPUs (1× NVIDIA H100 80GB HBM3), driver 570.86.15"}},
				{CheckFields, OK, []string{"all 3 fields"}},
				{CheckKubelet, OK, []string{"held by ml/train container c"}},
				{CheckProfiling, OK, []string{"holds CAP_SYS_ADMIN"}},
			},
		},
		{
			name:   "hostengine down",
			state:  func(s fakedcgm.State) fakedcgm.State { s.Down = true; return s },
			checks: []check{{CheckSource, Fail, []string{"inventory", "source unavailable", "embedded hostengine did not start"}}},
			failed: true,
		},
		{
			name: "no profiling support, no CAP_SYS_ADMIN",
			state: func(s fakedcgm.State) fakedcgm.State {
				s.GPUs[0].Profiling = nil
				return s
			},
			noSysAdmin: true,
			checks: []check{
				{CheckFields, Warn, []string{"2 of 3 fields have values", "DCGM_FI_PROF_SM_ACTIVE", "need DCGM, a GPU with DCP support and CAP_SYS_ADMIN"}},
				{CheckProfiling, Warn, []string{"lacks CAP_SYS_ADMIN"}},
			},
		},
		{
			name: "values not permitted",
			state: func(s fakedcgm.State) fakedcgm.State {
				s.Values = []fakedcgm.Value{
					fakedcgm.Sentinel(fakedcgm.EntityGPU, 0, 150, "i", "notperm"),
					fakedcgm.Sentinel(fakedcgm.EntityGPU, 0, 155, "d", "notperm"),
					fakedcgm.Sentinel(fakedcgm.EntityGPU, 0, 1002, "d", "notperm"),
				}
				return s
			},
			checks: []check{{CheckFields, Fail, []string{"no value for any of 3 fields"}}},
			failed: true,
		},
		{
			name: "kubelet ids of another node's GPUs",
			kubelet: func(k *kubelet.Server) {
				k.SetPods([]kubelet.Pod{{Namespace: "ml", Name: "train", Containers: []kubelet.Container{{Name: "c", Devices: []kubelet.Device{{Resource: "nvidia.com/gpu", IDs: []string{"GPU-ffffffff-bbbb-cccc-dddd-000000000000"}}}}}}})
			},
			checks: []check{{CheckKubelet, Warn, []string{"1 unmatched device ids: unknown_gpu", "GPU-ffffffff-bbbb-cccc-dddd-000000000000"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := healthy()
			if tc.state != nil {
				st = tc.state(st)
			}
			fakedcgm.NewEnv(t, st).Setenv(t)
			socket := "/nonexistent/kubelet.sock"
			if tc.kubelet != nil {
				k := startKubelet(t)
				tc.kubelet(k)
				socket = k.Path()
			}
			var opened source.Source
			cfg := nvmlConfig(t, nil, socket)
			cfg.Source, cfg.Traits, cfg.DefaultFields = "dcgm", traits(t, "--source=dcgm"), set
			cfg.Open = func(context.Context) (source.Source, string, error) {
				src, err := dcgm.New(dcgm.Config{Mode: dcgm.ModeEmbedded, Interval: time.Second, CallTimeout: 2 * time.Second, Health: true}, nil)
				if src != nil {
					opened = src
				}
				return src, "", err
			}
			if tc.noSysAdmin {
				cfg.Host.CapSysAdmin = func() (bool, error) { return false, nil }
			}
			r := Run(context.Background(), cfg)
			if opened != nil {
				if err := opened.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
			expectReport(t, r, tc.failed, tc.checks)
		})
	}
}
