package kubelet

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

func start(t *testing.T) (*Server, podresourcesv1.PodResourcesListerClient) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubelet.sock")
	s, err := Start(path)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return s, podresourcesv1.NewPodResourcesListerClient(conn)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestList(t *testing.T) {
	t.Parallel()
	s, client := start(t)
	pods := []Pod{{
		Namespace: "ml", Name: "train", UID: "u1",
		Containers: []Container{{
			Name:    "main",
			Devices: []Device{{Resource: "nvidia.com/gpu", IDs: []string{"GPU-a", "GPU-b"}}},
			Claims: []Claim{{Name: "c", Namespace: "ml", Devices: []ClaimDevice{
				{Driver: "gpu.nvidia.com", Pool: "node", Device: "gpu-0", ShareID: "s", CDIDevices: []string{"k8s.gpu.nvidia.com/device=x"}},
			}}},
		}},
	}}
	s.SetPods(pods)
	pods[0].Name = "mutated after SetPods"
	resp, err := client.List(ctx(t), &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	want := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{{
		Namespace: "ml", Name: "train",
		Containers: []*podresourcesv1.ContainerResources{{
			Name:    "main",
			Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{"GPU-a", "GPU-b"}}},
			DynamicResources: []*podresourcesv1.DynamicResource{{ClaimName: "c", ClaimNamespace: "ml", ClaimResources: []*podresourcesv1.ClaimResource{{
				DriverName: "gpu.nvidia.com", PoolName: "node", DeviceName: "gpu-0", ShareId: proto.String("s"),
				CdiDevices: []*podresourcesv1.CDIDevice{{Name: "k8s.gpu.nvidia.com/device=x"}},
			}}}},
		}},
	}}}
	if !proto.Equal(resp, want) {
		t.Errorf("List =\n%v\nwant\n%v", resp, want)
	}

	calls := 0
	s.SetPodsFunc(func() []Pod {
		calls++
		return nil
	})
	for range 2 {
		if _, err := client.List(ctx(t), &podresourcesv1.ListPodResourcesRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 2 || s.ListCalls() != 3 {
		t.Errorf("pods func called %d times, ListCalls %d; want 2 and 3", calls, s.ListCalls())
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	s, client := start(t)
	s.SetError(status.Error(codes.PermissionDenied, "no"))
	if _, err := client.List(ctx(t), &podresourcesv1.ListPodResourcesRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("List error = %v, want PermissionDenied", err)
	}
	s.SetError(nil)

	s.SetHang(time.Hour)
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := client.List(short, &podresourcesv1.ListPodResourcesRequest{}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("hung List error = %v, want DeadlineExceeded", err)
	}
	s.SetHang(0)

	s.SetRawListReply([]byte{0xff})
	if _, err := client.List(ctx(t), &podresourcesv1.ListPodResourcesRequest{}); status.Code(err) != codes.Internal {
		t.Errorf("raw reply List error = %v, want Internal (does not decode)", err)
	}
	s.SetRawListReply(nil)
	if _, err := client.List(ctx(t), &podresourcesv1.ListPodResourcesRequest{}); err != nil {
		t.Errorf("List after clearing failures: %v", err)
	}
}

func TestAllocatable(t *testing.T) {
	t.Parallel()
	s, client := start(t)
	if _, err := client.GetAllocatableResources(ctx(t), &podresourcesv1.AllocatableResourcesRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("GetAllocatableResources before SetAllocatable = %v, want Unimplemented", err)
	}
	s.SetAllocatable(map[string][]string{"rdma/hca": {"m"}, "nvidia.com/gpu": {"GPU-a"}})
	resp, err := client.GetAllocatableResources(ctx(t), &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := &podresourcesv1.AllocatableResourcesResponse{Devices: []*podresourcesv1.ContainerDevices{
		{ResourceName: "nvidia.com/gpu", DeviceIds: []string{"GPU-a"}},
		{ResourceName: "rdma/hca", DeviceIds: []string{"m"}},
	}}
	if !proto.Equal(resp, want) {
		t.Errorf("GetAllocatableResources = %v, want %v", resp, want)
	}
	if s.AllocatableCalls() != 2 {
		t.Errorf("AllocatableCalls = %d", s.AllocatableCalls())
	}

	// A kubelet with the feature gate off answers a plain error: Unknown.
	s.SetAllocatableError(ErrAllocatableDisabled)
	_, err = client.GetAllocatableResources(ctx(t), &podresourcesv1.AllocatableResourcesRequest{})
	if st := status.Convert(err); st.Code() != codes.Unknown || st.Message() != "Pod Resources API GetAllocatableResources disabled" {
		t.Errorf("gate off: GetAllocatableResources = %v, want Unknown with the kubelet's message", err)
	}
	s.SetAllocatableError(nil)

	calls := 0
	s.SetAllocatableFunc(func() map[string][]string {
		calls++
		if calls == 1 {
			return map[string][]string{"nvidia.com/gpu.shared": {"GPU-a::0", "GPU-a::1"}}
		}
		return nil
	})
	resp, err = client.GetAllocatableResources(ctx(t), &podresourcesv1.AllocatableResourcesRequest{})
	want = &podresourcesv1.AllocatableResourcesResponse{Devices: []*podresourcesv1.ContainerDevices{
		{ResourceName: "nvidia.com/gpu.shared", DeviceIds: []string{"GPU-a::0", "GPU-a::1"}},
	}}
	if err != nil || !proto.Equal(resp, want) {
		t.Errorf("GetAllocatableResources from the func = %v, %v; want %v", resp, err, want)
	}
	if _, err := client.GetAllocatableResources(ctx(t), &podresourcesv1.AllocatableResourcesRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("a func answering nil: %v, want Unimplemented", err)
	}
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "k.sock")
	s, err := Start(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Path() != path {
		t.Errorf("Path = %q", s.Path())
	}
	if _, err := Start(path); err == nil {
		t.Error("a second server started on a live socket")
	}
	s.Stop()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("socket still there after Stop: %v", err)
	}
	again, err := Start(path)
	if err != nil {
		t.Fatalf("restart on the same path: %v", err)
	}
	again.Stop()

	// A socket file nobody serves (a crashed kubelet's) is replaced.
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = lis.Close()
	stale, err := Start(path)
	if err != nil {
		t.Fatalf("Start over a stale socket: %v", err)
	}
	stale.Stop()
}
