package podresources

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/sim/kubelet"
)

// testClock is a clock the test moves by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// withClock gives the harness's client a clock that stands still until the
// test advances it.
func withClock(h *harness) *testClock {
	clk := &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	h.c.now = clk.now
	return clk
}

// A kubelet that reports new malformed ids on every List (issue 15 defect 5:
// 92,001 lines in 20 s) costs one line per cause (resource and reason) per
// window, and the errors counter still counts every new id.
func TestClientMalformedIDFloodIsRateLimited(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	clk := withClock(h)
	var mu sync.Mutex
	list := 0
	h.srv.SetPodsFunc(func() []kubelet.Pod {
		mu.Lock()
		defer mu.Unlock()
		list++
		var gpu, mig []string
		for i := range 10 {
			gpu = append(gpu, fmt.Sprintf("GPU-%d-%d", list, i), fmt.Sprintf("x%d-%d", list, i))
			mig = append(mig, fmt.Sprintf("MIG-%d-%d", list, i))
		}
		return []kubelet.Pod{
			gpuPod("ml", "train", "nvidia.com/gpu", append(gpu, uuid0)...),
			gpuPod("ml", "infer", "nvidia.com/mig-1g.10gb", mig...),
		}
	})
	const refreshes, causes, perCause = 100, 3, 10 // GPU- and x under nvidia.com/gpu, MIG- under mig-1g.10gb
	for range refreshes {
		h.mustRefresh()
	}
	if n := h.logs.count("does not parse"); n != causes {
		t.Errorf("%d refreshes with %d new malformed ids each: %d log lines, want %d (one per cause):\n%s",
			refreshes, causes*perCause, n, causes, h.logs)
	}
	if got, want := h.metric("gpu_exporter_podresources_errors_total", "reason", "malformed_id"), float64(refreshes*causes*perCause); got != want {
		t.Errorf("malformed_id errors = %v, want %v (every new id counted)", got, want)
	}
	if got, want := h.metric("gpu_exporter_podresources_log_lines_suppressed_total"), float64(refreshes*causes*perCause-causes); got != want {
		t.Errorf("suppressed lines = %v, want %v", got, want)
	}
	if got := names(h.c.Table().Holders(&testInventory().Entities[0])); !slices.Equal(got, []string{"ml/train/main"}) {
		t.Errorf("attribution lost in the flood: holders %q", got)
	}

	// After the window, the next line of each cause says how many were held back.
	clk.advance(logWindow)
	h.mustRefresh()
	if n, want := h.logs.count("does not parse"), 2*causes; n != want {
		t.Errorf("after the window: %d lines, want %d:\n%s", n, want, h.logs)
	}
	if n, want := h.logs.count(fmt.Sprintf("suppressed=%d", refreshes*perCause-1)), causes; n != want {
		t.Errorf("%d lines carry suppressed=%d, want %d:\n%s", n, refreshes*perCause-1, want, h.logs)
	}
}

// A kubelet that flaps between failing and answering logs each transition
// once per window, not once per refresh.
func TestClientFlappingKubeletIsRateLimited(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	clk := withClock(h)
	const flaps = 50
	flap := func() {
		h.srv.SetError(errors.New("boom"))
		_ = h.refresh()
		h.srv.SetError(nil)
		h.mustRefresh()
	}
	for range flaps {
		flap()
	}
	for _, msg := range []string{"pod-resources unavailable", "pod attribution on"} {
		if n := h.logs.count(msg); n != 1 {
			t.Errorf("%d flaps: %d %q lines, want 1:\n%s", flaps, n, msg, h.logs)
		}
	}
	clk.advance(logWindow)
	flap()
	if n := h.logs.count(fmt.Sprintf("suppressed=%d", flaps-1)); n != 2 {
		t.Errorf("after the window: %d lines carry suppressed=%d, want 2 (down and up):\n%s", n, flaps-1, h.logs)
	}
}

// invalidPod is a pod whose every string holds a marker, replaced on the
// wire by bytes that are not UTF-8 (see invalidReply).
func invalidPod() kubelet.Pod {
	return kubelet.Pod{Namespace: "ns-@0@", Name: "train-@1@", Containers: []kubelet.Container{{
		Name: "main-@2@",
		Devices: []kubelet.Device{
			{Resource: "nvidia.com/gpu", IDs: []string{uuid0, "GPU-@3@"}},
			{Resource: "nvidia.com/mig-@4@", IDs: []string{mig0}},
		},
		Claims: []kubelet.Claim{{Name: "claim-@5@", Namespace: "ns", Devices: []kubelet.ClaimDevice{
			{Driver: "gpu.nvidia.com", Pool: "pool-@6@", Device: "gpu-1", CDIDevices: []string{"k8s.gpu.nvidia.com/device=@7@"}},
		}}},
	}}}
}

const invalidMarkers = 8

// invalidReply encodes pods as List would and then replaces each marker
// "@N@" by three bytes that are not UTF-8, as a kubelet that does not check
// what it sends could write them. Lengths are unchanged, so the reply stays
// well-formed protobuf.
func invalidReply(t *testing.T, pods []kubelet.Pod) []byte {
	t.Helper()
	resp := &podresourcesv1.ListPodResourcesResponse{}
	for _, p := range pods {
		pr := &podresourcesv1.PodResources{Namespace: p.Namespace, Name: p.Name}
		for _, c := range p.Containers {
			cr := &podresourcesv1.ContainerResources{Name: c.Name}
			for _, d := range c.Devices {
				cr.Devices = append(cr.Devices, &podresourcesv1.ContainerDevices{ResourceName: d.Resource, DeviceIds: d.IDs})
			}
			for _, cl := range c.Claims {
				dr := &podresourcesv1.DynamicResource{ClaimName: cl.Name, ClaimNamespace: cl.Namespace}
				for _, d := range cl.Devices {
					res := &podresourcesv1.ClaimResource{DriverName: d.Driver, PoolName: d.Pool, DeviceName: d.Device}
					for _, n := range d.CDIDevices {
						res.CdiDevices = append(res.CdiDevices, &podresourcesv1.CDIDevice{Name: n})
					}
					dr.ClaimResources = append(dr.ClaimResources, res)
				}
				cr.DynamicResources = append(cr.DynamicResources, dr)
			}
			pr.Containers = append(pr.Containers, cr)
		}
		resp.PodResources = append(resp.PodResources, pr)
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	for i := range invalidMarkers {
		marker := []byte(fmt.Sprintf("@%d@", i))
		if !bytes.Contains(b, marker) {
			t.Fatalf("marker %s not in the encoded reply", marker)
		}
		b = bytes.ReplaceAll(b, marker, []byte{0xff, 0xfe, 'a' + byte(i)})
	}
	return b
}

// A kubelet reply with bytes that are not UTF-8 in its strings is used, with
// U+FFFD in place of those bytes, instead of failing the whole List (Go's
// protobuf refuses such proto3 strings) or reaching labels as they are.
func TestClientInvalidUTF8FromKubelet(t *testing.T) {
	t.Parallel()
	h := newHarness(t, true, nil)
	h.srv.SetRawListReply(invalidReply(t, []kubelet.Pod{invalidPod()}))
	h.mustRefresh()
	inv := testInventory()
	hs := h.c.Table().Holders(&inv.Entities[0])
	if len(hs) != 1 {
		t.Fatalf("GPU 0 holders %+v, want the pod with the invalid name", hs)
	}
	want := Holder{Namespace: "ns-\uFFFDa", Pod: "train-\uFFFDb", Container: "main-\uFFFDc", Resource: "nvidia.com/gpu"}
	if hs[0] != want {
		t.Errorf("holder %+v, want %+v", hs[0], want)
	}
	if u := h.c.Table().Unmatched(inv); !slices.Equal(u, []string{"GPU-\uFFFDd"}) {
		t.Errorf("Unmatched = %q, want the sanitized id", u)
	}
	// Every string in the reply: namespace, pod, container, the id, the MIG
	// resource name, claim name, pool and CDI name.
	if got := h.metric("gpu_exporter_podresources_invalid_utf8_strings"); got != invalidMarkers {
		t.Errorf("invalid_utf8_strings = %v, want %d", got, invalidMarkers)
	}
	if !utf8.ValidString(h.logs.String()) {
		t.Errorf("log output is not valid UTF-8:\n%q", h.logs)
	}
	h.srv.SetRawListReply(nil)
	h.srv.SetPods([]kubelet.Pod{gpuPod("ml", "train", "nvidia.com/gpu", uuid0)})
	h.mustRefresh()
	if got := h.metric("gpu_exporter_podresources_invalid_utf8_strings"); got != 0 {
		t.Errorf("invalid_utf8_strings = %v after a clean reply, want 0", got)
	}
}

// NewTable makes every string it takes valid UTF-8, for responses built in
// process as well as those decoded from the wire.
func TestNewTableInvalidUTF8(t *testing.T) {
	t.Parallel()
	bad := func(s string) string { return s + "\xff" }
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{{
		Namespace: bad("ns"), Name: bad("pod"),
		Containers: []*podresourcesv1.ContainerResources{{
			Name: bad("ctr"),
			Devices: []*podresourcesv1.ContainerDevices{
				{ResourceName: "nvidia.com/gpu", DeviceIds: []string{uuid0, bad("GPU-")}},
				{ResourceName: bad("nvidia.com/mig-"), DeviceIds: []string{mig0}},
			},
			DynamicResources: []*podresourcesv1.DynamicResource{{ClaimResources: []*podresourcesv1.ClaimResource{
				{DriverName: "gpu.nvidia.com", DeviceName: bad("gpu-1")},
			}}},
		}},
	}}}
	tab := NewTable(resp, DefaultResourceNames(), IDTypeAuto)
	if tab.invalidUTF8 != 6 {
		t.Errorf("invalidUTF8 = %d, want 6", tab.invalidUTF8)
	}
	inv := testInventory()
	for i := range inv.Entities {
		for _, h := range tab.Holders(&inv.Entities[i]) {
			for _, s := range []string{h.Namespace, h.Pod, h.Container, h.Resource} {
				if !utf8.ValidString(s) {
					t.Errorf("holder string %q is not valid UTF-8", s)
				}
			}
		}
	}
	for _, e := range tab.entries {
		if !utf8.ValidString(e.Raw) || !utf8.ValidString(e.Holder.Resource) {
			t.Errorf("entry %q (%q) is not valid UTF-8", e.Raw, e.Holder.Resource)
		}
	}
	for _, m := range tab.malformed {
		if !utf8.ValidString(m.ID) || !strings.Contains(m.ID, "\uFFFD") {
			t.Errorf("malformed id %q not sanitized", m.ID)
		}
	}
}

func TestTableUnmatchedCounts(t *testing.T) {
	t.Parallel()
	unknownGPU := "GPU-99999999-0000-1111-2222-333344445555"
	tests := []struct {
		name string
		ids  []string
		want UnmatchedCounts
	}{
		{"all matched", []string{uuid0, "1", "nvidia1"}, UnmatchedCounts{}},
		{"malformed", []string{uuid0, "GPU-bogus", "weird", "weird"}, UnmatchedCounts{Malformed: 2}},
		{"unsupported forms", []string{"0:1", "gpu-0-mig-1g10gb-19-0", "gpu-vfio-0"}, UnmatchedCounts{UnsupportedForm: 3}},
		{"unknown GPUs", []string{unknownGPU, unknownGPU + "::1", "7", "nvidia9", "MIG-GPU-" + uuid0[4:] + "/3/0"}, UnmatchedCounts{UnknownGPU: 5}},
		{"legacy MIG id of a whole instance", []string{"MIG-GPU-" + uuid1[4:] + "/1/4"}, UnmatchedCounts{}},
		{"mixed", []string{uuid0, "bad", "0:0", unknownGPU}, UnmatchedCounts{Malformed: 1, UnsupportedForm: 1, UnknownGPU: 1}},
	}
	inv := testInventory()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{{
				Namespace: "ns", Name: "pod", Containers: []*podresourcesv1.ContainerResources{{
					Name: "c", Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: tt.ids}},
				}},
			}}}
			tab := NewTable(resp, DefaultResourceNames(), IDTypeAuto)
			got := tab.UnmatchedCounts(inv)
			if got != tt.want {
				t.Errorf("UnmatchedCounts = %+v, want %+v", got, tt.want)
			}
			if n := got.Malformed + got.UnsupportedForm + got.UnknownGPU + got.NoResourceSlice; n != len(tab.Unmatched(inv)) {
				t.Errorf("counts sum to %d, Unmatched has %d: %q", n, len(tab.Unmatched(inv)), tab.Unmatched(inv))
			}
		})
	}
	var nilTable *Table
	if got := nilTable.UnmatchedCounts(inv); got != (UnmatchedCounts{}) {
		t.Errorf("nil table counts %+v", got)
	}
	var reasons []string
	UnmatchedCounts{}.ByReason(func(r string, _ int) { reasons = append(reasons, r) })
	if !slices.Equal(reasons, []string{UnmatchedMalformed, UnmatchedUnsupportedForm, UnmatchedUnknownGPU, UnmatchedNoResourceSlice}) {
		t.Errorf("reasons %q", reasons)
	}
}
