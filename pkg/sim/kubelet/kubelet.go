// Package kubelet serves the kubelet pod-resources v1 API (PodResourcesLister)
// over a real gRPC server on a unix socket, with pods set by the caller. Tests
// and the demo (the simulator) use it so that the real client code path runs.
package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/bounded"
)

// Pod is one pod as List reports it. UID is not sent: pod-resources v1 has
// no field for it.
type Pod struct {
	Namespace, Name, UID string
	Containers           []Container
}

// Container is one container and the devices it holds.
type Container struct {
	Name    string
	Devices []Device
	// Claims are the DRA devices allocated to the container.
	Claims []Claim
}

// Device is the ids allocated to a container from one device-plugin
// resource.
type Device struct {
	Resource string
	IDs      []string
}

// Claim is one DRA resource claim used by a container.
type Claim struct {
	Name, Namespace string
	Devices         []ClaimDevice
}

// ClaimDevice is one device allocated through a claim.
type ClaimDevice struct {
	Driver, Pool, Device string
	// ShareID, when set, marks a device shared by several claims.
	ShareID string
	// CDIDevices are fully qualified CDI device names.
	CDIDevices []string
}

// Server is a running fake kubelet pod-resources endpoint.
type Server struct {
	path string
	grpc *grpc.Server
	done chan struct{}

	listCalls  atomic.Int64
	allocCalls atomic.Int64

	mu          sync.Mutex
	pods        []Pod
	podsFunc    func() []Pod
	allocatable map[string][]string
	allocFunc   func() map[string][]string
	allocErr    error
	hang        time.Duration
	err         error
	raw         []byte
}

// Start listens on socketPath (replacing a stale socket file there, failing
// if another server answers on it) and serves until Stop. A path of 108 bytes or more does not fit a unix socket
// address and fails.
func Start(socketPath string) (*Server, error) {
	if fi, err := bounded.Lstat(context.Background(), socketPath, time.Second); err == nil && fi.Mode()&fs.ModeSocket != 0 {
		if conn, err := net.DialTimeout("unix", socketPath, time.Second); err == nil {
			_ = conn.Close()
			return nil, fmt.Errorf("fake pod-resources: %s is in use by another server", socketPath)
		}
		if err := os.Remove(socketPath); err != nil {
			return nil, fmt.Errorf("fake pod-resources: removing stale socket: %w", err)
		}
	}
	lis, err := net.Listen("unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("fake pod-resources: %w", err)
	}
	s := &Server{path: socketPath, done: make(chan struct{})}
	s.grpc = grpc.NewServer(
		grpc.ForceServerCodec(rawCodec{}),
		grpc.UnaryInterceptor(s.intercept),
	)
	podresourcesv1.RegisterPodResourcesListerServer(s.grpc, &lister{s: s})
	go func() {
		defer close(s.done)
		_ = s.grpc.Serve(lis)
	}()
	return s, nil
}

// Path returns the socket path.
func (s *Server) Path() string { return s.path }

// SetPods sets what List returns from now on; it replaces SetPodsFunc.
func (s *Server) SetPods(pods []Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods, s.podsFunc = clonePods(pods), nil
}

// SetPodsFunc makes every List call f for its pods; it replaces SetPods.
// f runs outside the server's lock and must be safe for concurrent calls.
func (s *Server) SetPodsFunc(f func() []Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods, s.podsFunc = nil, f
}

// SetAllocatable sets, per resource name, the device ids that
// GetAllocatableResources returns. Until it is called with a non-nil map,
// GetAllocatableResources answers Unimplemented, like an old kubelet.
// It replaces SetAllocatableFunc.
func (s *Server) SetAllocatable(ids map[string][]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allocFunc = nil
	if ids == nil {
		s.allocatable = nil
		return
	}
	s.allocatable = make(map[string][]string, len(ids))
	for k, v := range ids {
		s.allocatable[k] = append([]string(nil), v...)
	}
}

// SetAllocatableFunc makes every GetAllocatableResources call f for its
// ids, as SetAllocatable sets them (nil: Unimplemented); it replaces
// SetAllocatable. f runs outside the server's lock and must be safe for
// concurrent calls.
func (s *Server) SetAllocatableFunc(f func() map[string][]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allocatable, s.allocFunc = nil, f
}

// SetAllocatableError makes GetAllocatableResources fail with err (a gRPC
// status error keeps its code; others become Unknown, as a real kubelet's
// plain errors do: ErrAllocatableDisabled is the one it answers with its
// feature gate off); nil turns it off.
func (s *Server) SetAllocatableError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allocErr = err
}

// ErrAllocatableDisabled is the error a kubelet with the
// KubeletPodResourcesGetAllocatable feature gate off answers
// GetAllocatableResources with: a plain error, so code Unknown
// (v1PodResourcesServer.GetAllocatableResources,
// pkg/kubelet/apis/podresources/server_v1.go, kubernetes/kubernetes).
var ErrAllocatableDisabled = errors.New("Pod Resources API GetAllocatableResources disabled") //nolint:staticcheck // the kubelet's own words

// SetHang makes each List block for d, or until the caller gives up, before
// answering; 0 turns it off.
func (s *Server) SetHang(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hang = d
}

// SetError makes List fail with err (a gRPC status error keeps its code;
// others become Unknown); nil turns it off.
func (s *Server) SetError(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

// SetRawListReply makes List answer with b instead of an encoded
// ListPodResourcesResponse, to simulate a reply that does not decode; nil
// turns it off.
func (s *Server) SetRawListReply(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw = append([]byte(nil), b...)
	if b == nil {
		s.raw = nil
	}
}

// ListCalls returns how many List calls the server received.
func (s *Server) ListCalls() int64 { return s.listCalls.Load() }

// AllocatableCalls returns how many GetAllocatableResources calls the server
// received.
func (s *Server) AllocatableCalls() int64 { return s.allocCalls.Load() }

// Stop closes every connection, stops serving and removes the socket.
func (s *Server) Stop() {
	s.grpc.Stop()
	<-s.done
	// Closing the listener normally removed it already; this covers the rest.
	_ = os.Remove(s.path)
}

// rawReply is a List answer sent as is, bypassing protobuf encoding.
type rawReply []byte

// intercept substitutes the raw List reply when one is set.
func (s *Server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil || info.FullMethod != podresourcesv1.PodResourcesLister_List_FullMethodName {
		return resp, err
	}
	s.mu.Lock()
	raw := s.raw
	s.mu.Unlock()
	if raw != nil {
		return rawReply(raw), nil
	}
	return resp, nil
}

// rawCodec is the protobuf codec, except that it writes a rawReply verbatim.
type rawCodec struct{}

var _ encoding.Codec = rawCodec{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case rawReply:
		return m, nil
	case proto.Message:
		return proto.Marshal(m)
	default:
		return nil, fmt.Errorf("fake pod-resources: cannot encode %T", v)
	}
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("fake pod-resources: cannot decode into %T", v)
	}
	return proto.Unmarshal(data, m)
}

func (rawCodec) Name() string { return "proto" }

type lister struct {
	podresourcesv1.UnimplementedPodResourcesListerServer
	s *Server
}

func (l *lister) List(ctx context.Context, _ *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	s := l.s
	s.listCalls.Add(1)
	s.mu.Lock()
	hang, err, pods, podsFunc := s.hang, s.err, s.pods, s.podsFunc
	s.mu.Unlock()
	if hang > 0 {
		t := time.NewTimer(hang)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-t.C:
		}
	}
	if err != nil {
		return nil, err
	}
	if podsFunc != nil {
		pods = podsFunc()
	}
	return &podresourcesv1.ListPodResourcesResponse{PodResources: encodePods(pods)}, nil
}

func (l *lister) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	s := l.s
	s.allocCalls.Add(1)
	s.mu.Lock()
	allocErr, allocatable, allocFunc := s.allocErr, s.allocatable, s.allocFunc
	s.mu.Unlock()
	if allocErr != nil {
		return nil, allocErr
	}
	if allocFunc != nil {
		allocatable = allocFunc()
	}
	// A kubelet that predates the call answers Unimplemented (the method
	// is absent from its PodResourcesLister service).
	if allocatable == nil {
		return nil, status.Error(codes.Unimplemented, "GetAllocatableResources is not enabled on this fake kubelet")
	}
	// The kubelet lists every healthy device of every resource, allocated
	// or not (ManagerImpl.GetAllocatableDevices,
	// pkg/kubelet/cm/devicemanager/manager.go, kubernetes/kubernetes), in
	// ContainerDevices as List does (k8s.io/kubelet podresources v1
	// AllocatableResourcesResponse.devices).
	resp := &podresourcesv1.AllocatableResourcesResponse{}
	for _, name := range sortedKeys(allocatable) {
		resp.Devices = append(resp.Devices, &podresourcesv1.ContainerDevices{
			ResourceName: name,
			DeviceIds:    append([]string(nil), allocatable[name]...),
		})
	}
	return resp, nil
}

func encodePods(pods []Pod) []*podresourcesv1.PodResources {
	out := make([]*podresourcesv1.PodResources, 0, len(pods))
	for _, p := range pods {
		pr := &podresourcesv1.PodResources{Name: p.Name, Namespace: p.Namespace}
		for _, c := range p.Containers {
			cr := &podresourcesv1.ContainerResources{Name: c.Name}
			for _, d := range c.Devices {
				cr.Devices = append(cr.Devices, &podresourcesv1.ContainerDevices{
					ResourceName: d.Resource,
					DeviceIds:    append([]string(nil), d.IDs...),
				})
			}
			for _, cl := range c.Claims {
				dr := &podresourcesv1.DynamicResource{ClaimName: cl.Name, ClaimNamespace: cl.Namespace}
				for _, d := range cl.Devices {
					res := &podresourcesv1.ClaimResource{DriverName: d.Driver, PoolName: d.Pool, DeviceName: d.Device}
					if d.ShareID != "" {
						res.ShareId = proto.String(d.ShareID)
					}
					for _, name := range d.CDIDevices {
						res.CdiDevices = append(res.CdiDevices, &podresourcesv1.CDIDevice{Name: name})
					}
					dr.ClaimResources = append(dr.ClaimResources, res)
				}
				cr.DynamicResources = append(cr.DynamicResources, dr)
			}
			pr.Containers = append(pr.Containers, cr)
		}
		out = append(out, pr)
	}
	return out
}

func clonePods(pods []Pod) []Pod {
	out := make([]Pod, len(pods))
	for i, p := range pods {
		out[i] = p
		out[i].Containers = make([]Container, len(p.Containers))
		for j, c := range p.Containers {
			c.Devices = slices.Clone(c.Devices)
			for k := range c.Devices {
				c.Devices[k].IDs = slices.Clone(c.Devices[k].IDs)
			}
			c.Claims = slices.Clone(c.Claims)
			for k := range c.Claims {
				c.Claims[k].Devices = slices.Clone(c.Claims[k].Devices)
			}
			out[i].Containers[j] = c
		}
	}
	return out
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
