package collector

import (
	"testing"
	"time"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/podlabels"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
)

// kaiPods are a KAI Scheduler GPU group as KAI's binder leaves it
// (NVIDIA/KAI-Scheduler@72de64fc,
// pkg/binder/binding/resourcereservation/resource_reservation.go): the
// reservation pod, labelled with the group, whose only container
// "resource-reservation" requests one nvidia.com/gpu; and fractional pods
// with the same runai-gpu-group label and no device, the GPU going to
// their first container or to the one gpu-fraction-container-name names
// (pkg/binder/common/gpu_access.go).
func kaiPods(fractional bool) []podlabels.StaticPod {
	pods := []podlabels.StaticPod{{Namespace: "kai-resource-reservation", Name: "gpu-reservation-node-a-x7k2q",
		Labels:     map[string]string{"app": "kai-resource-reservation", "runai-gpu-group": "0f4c6e3a-6b7d-11f0-9d2e-0242ac120002"},
		Containers: []string{"resource-reservation"}}}
	if fractional {
		pods = append(pods,
			podlabels.StaticPod{Namespace: "ml", Name: "frac-a", Containers: []string{"main"},
				Labels: map[string]string{"runai-gpu-group": "0f4c6e3a-6b7d-11f0-9d2e-0242ac120002"}},
			podlabels.StaticPod{Namespace: "research", Name: "frac-b", Containers: []string{"sidecar", "nb"},
				Labels:      map[string]string{"runai-gpu-group": "0f4c6e3a-6b7d-11f0-9d2e-0242ac120002"},
				Annotations: map[string]string{"gpu-fraction": "0.25", "gpu-fraction-container-name": "nb"}})
	}
	return pods
}

// TestKAIReservationPodGivesWayToWorkloads: the kubelet reports the GPU
// held by KAI's reservation pod; with the pod informer, the GPU's series
// name the fractional pods' containers instead, each shared.
func TestKAIReservationPodGivesWayToWorkloads(t *testing.T) {
	t.Parallel()
	src := newFakeSource(2)
	gpu0 := src.inv.Entities[0].UUID
	// The kubelet's answer: the reservation pod holds GPU 0; the fractional
	// pods run, without devices.
	resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		{Name: "gpu-reservation-node-a-x7k2q", Namespace: "kai-resource-reservation",
			Containers: []*podresourcesv1.ContainerResources{{Name: "resource-reservation",
				Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{gpu0}}}}}},
		{Name: "frac-a", Namespace: "ml", Containers: []*podresourcesv1.ContainerResources{{Name: "main"}}},
		{Name: "frac-b", Namespace: "research", Containers: []*podresourcesv1.ContainerResources{{Name: "sidecar"}, {Name: "nb"}}},
	}}
	table := podresources.NewTable(resp, []string{"nvidia.com/gpu"}, podresources.IDTypeUID)
	entity := `gpu="0",uuid="` + gpu0 + `",device="nvidia0",model="NVIDIA H100 80GB HBM3"`
	reservation := `gpu_pod_allocation_info{` + entity + `,namespace="kai-resource-reservation",pod="gpu-reservation-node-a-x7k2q",container="resource-reservation",shared="false"} 1`

	for _, tc := range []struct {
		name      string
		info      PodInfo // nil: no pod informer
		want, not []string
	}{
		{name: "workload pods hold the GPU", info: podlabels.NewStatic(kaiPods(true), nil),
			want: []string{
				`gpu_pod_allocation_info{` + entity + `,namespace="ml",pod="frac-a",container="main",shared="true"} 1`,
				`gpu_pod_allocation_info{` + entity + `,namespace="research",pod="frac-b",container="nb",shared="true"} 1`,
				`gpu_temperature_celsius{` + entity + `,namespace="ml",pod="frac-a",container="main"}`,
			},
			not: []string{`pod="gpu-reservation-node-a-x7k2q"`, `container="sidecar"`}},
		{name: "reservation only: the reservation pod stays the holder", info: podlabels.NewStatic(kaiPods(false), nil),
			want: []string{reservation}, not: []string{`pod="frac-a"`}},
		{name: "no pod informer: the kubelet's holder", want: []string{reservation}, not: []string{`pod="frac-a"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Interval: time.Hour, Fields: testFields(t)}
			if tc.info != nil {
				cfg.PodInfo = tc.info
			}
			expectParts(t, collectText(t, cfg, src, staticAttribution{table}), tc.want, tc.not)
		})
	}
}

// fixedFractions answers KAIWorkloads from a map.
type fixedFractions map[string][]podlabels.ContainerRef

func (f fixedFractions) KAIWorkloads(ns, pod string) []podlabels.ContainerRef { return f[ns+"/"+pod] }

func TestThroughReservations(t *testing.T) {
	t.Parallel()
	hs := []podresources.Holder{
		{Namespace: "a", Pod: "whole", Container: "c", Resource: "nvidia.com/gpu"},
		{Namespace: "kai", Pod: "res", Container: "resource-reservation", Resource: "nvidia.com/gpu"},
	}
	f := fixedFractions{"kai/res": {{Namespace: "ml", Pod: "p", Container: "main"}}}
	got := throughReservations(f, hs)
	want := []podresources.Holder{hs[0], {Namespace: "ml", Pod: "p", Container: "main", Resource: "nvidia.com/gpu", Shared: true}}
	if len(got) != len(want) || got[0] != want[0] || got[1].Pod != want[1].Pod || !got[1].Shared || got[1].Container != "main" {
		t.Errorf("throughReservations = %+v, want %+v", got, want)
	}
	if hs[1].Pod != "res" {
		t.Error("throughReservations changed its argument")
	}
	if got := throughReservations(fixedFractions{}, hs); &got[0] != &hs[0] {
		t.Error("throughReservations copied holders without a reservation pod")
	}
}
