package kubelet

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
)

func TestFromSimKeepsEveryDevice(t *testing.T) {
	t.Parallel()
	scn, err := sim.LoadBuiltin("timeslicing")
	if err != nil {
		t.Fatal(err)
	}
	in := scn.PodsAt(time.Minute)
	out := FromSim(in)
	if len(out) != len(in) || len(in) == 0 {
		t.Fatalf("%d pods became %d", len(in), len(out))
	}
	for i, p := range in {
		if out[i].Namespace != p.Namespace || out[i].Name != p.Name || out[i].UID != p.UID || len(out[i].Containers) != len(p.Containers) {
			t.Fatalf("pod %d: %+v became %+v", i, p, out[i])
		}
		for j, c := range p.Containers {
			got := out[i].Containers[j]
			if got.Name != c.Name || len(got.Devices) != len(c.Devices) {
				t.Fatalf("container %s: %+v became %+v", c.Name, c, got)
			}
			for k, d := range c.Devices {
				if got.Devices[k].Resource != d.Resource || len(got.Devices[k].IDs) != len(d.IDs) {
					t.Fatalf("device %+v became %+v", d, got.Devices[k])
				}
			}
		}
	}
}

// The dra scenario's claims reach List as DynamicResources: claim, pod's
// namespace by default, NVIDIA's driver by default, pool and device.
func TestFromSimKeepsClaims(t *testing.T) {
	t.Parallel()
	scn, err := sim.LoadBuiltin("dra")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range FromSim(scn.PodsAt(time.Minute)) {
		for _, c := range p.Containers {
			for _, cl := range c.Claims {
				for _, d := range cl.Devices {
					got = append(got, p.Name+" "+cl.Namespace+"/"+cl.Name+" "+d.Driver+"/"+d.Pool+"/"+d.Device)
				}
			}
		}
	}
	want := []string{
		"train ml/train-gpu gpu.nvidia.com/dra-node/gpu-0",
		"infer-a ml/shared-gpu gpu.nvidia.com/dra-node/gpu-1",
		"infer-b ml/shared-gpu gpu.nvidia.com/dra-node/gpu-1",
		"notebook ml/notebook-mig gpu.nvidia.com/dra-node/gpu-2-mig-1g10gb-19-0",
		"finetune ml/finetune-mig gpu.nvidia.com/dra-node/gpu-2-mig-3g40gb-9-4",
		"video ml/video-mig gpu.nvidia.com/dra-node/gpu-2-mig-1g10gb-me-20-1",
	}
	if len(got) != len(want) {
		t.Fatalf("claims %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("claim %d = %q, want %q", i, got[i], want[i])
		}
	}
}

// FollowSim serves the scenario's allocatable devices: the time-slicing
// scenario's replicas, and Unimplemented for a scenario without sharing.
func TestFollowSimServesAllocatable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scenario string
		replicas int // listed "::N" ids; -1: Unimplemented
	}{{"timeslicing", 12}, {"demo", -1}} {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			scn, err := sim.LoadBuiltin(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			s, client := start(t)
			s.FollowSim(sim.New(scn))
			resp, err := client.GetAllocatableResources(ctx(t), &podresourcesv1.AllocatableResourcesRequest{})
			if tc.replicas < 0 {
				if status.Code(err) != codes.Unimplemented {
					t.Errorf("GetAllocatableResources = %v, want Unimplemented", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, d := range resp.GetDevices() {
				for _, id := range d.GetDeviceIds() {
					if strings.Contains(id, "::") {
						n++
					}
				}
			}
			if n != tc.replicas {
				t.Errorf("%d replica ids listed, want %d: %v", n, tc.replicas, resp)
			}
		})
	}
}
