// Package resourceslices keeps the ResourceSlices of this node's DRA
// drivers, read through one node-scoped informer, and maps a device the
// kubelet names by (driver, pool, device) to the GPU or MIG device it is,
// through the attributes NVIDIA's DRA driver publishes. Nothing here runs
// on the scrape path: the informer updates an immutable index, and lookups
// read it.
package resourceslices

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpu-exporter/gpu-exporter/pkg/kubejson"
)

// apiSlice is the part of a resource.k8s.io ResourceSlice the index reads,
// decoded from the API server's JSON, so that the binary links no
// k8s.io/api package (as pkg/podlabels decodes pods). One type reads the
// three served versions: v1 and v1beta2 put a device's attributes on the
// device, v1beta1 under device.basic (k8s.io/api v0.37.2
// resource/v1/types.go ResourceSliceSpec.driver, .pool, .nodeName,
// .devices, Device.name, .attributes; resource/v1beta1/types.go
// Device.basic, BasicDevice.attributes).
type apiSlice struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec apiSliceSpec `json:"spec"`
}

type apiSliceSpec struct {
	Driver   string      `json:"driver"`
	Pool     apiPool     `json:"pool"`
	NodeName *string     `json:"nodeName,omitempty"`
	Devices  []apiDevice `json:"devices,omitempty"`
}

// apiPool is a ResourcePool: a pool is published as ResourceSliceCount
// slices of one Generation; a slice of an older generation is stale.
type apiPool struct {
	Name               string `json:"name"`
	Generation         int64  `json:"generation"`
	ResourceSliceCount int64  `json:"resourceSliceCount"`
}

type apiDevice struct {
	Name       string                  `json:"name"`
	Attributes map[string]apiAttribute `json:"attributes,omitempty"`
	Basic      *apiBasicDevice         `json:"basic,omitempty"` // v1beta1
}

type apiBasicDevice struct {
	Attributes map[string]apiAttribute `json:"attributes,omitempty"`
}

// apiAttribute is a DeviceAttribute: exactly one of its values is set.
type apiAttribute struct {
	Int     *int64  `json:"int,omitempty"`
	Bool    *bool   `json:"bool,omitempty"`
	String  *string `json:"string,omitempty"`
	Version *string `json:"version,omitempty"`
}

type apiSliceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []apiSlice `json:"items"`
}

// DeepCopyObject implements runtime.Object. The informer hands out the
// objects it caches; the index reads them and never modifies one, so the
// copy shares the devices.
func (s *apiSlice) DeepCopyObject() runtime.Object {
	if s == nil {
		return nil
	}
	out := &apiSlice{TypeMeta: s.TypeMeta, Spec: s.Spec}
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *apiSliceList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &apiSliceList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]apiSlice, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].DeepCopyObject().(*apiSlice)
		}
	}
	return out
}

// newScheme returns a scheme that decodes ResourceSlice and
// ResourceSliceList of gv into apiSlice and apiSliceList, with the meta/v1
// types a client needs.
func newScheme(gv schema.GroupVersion) *runtime.Scheme {
	return kubejson.Scheme(gv, "ResourceSlice", &apiSlice{}, &apiSliceList{})
}
