package kubeapi

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
)

// CRDs is the CustomResourceDefinition resource.
var CRDs = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Version is one version of a CRD: its name and whether it is served.
type Version struct {
	Name   string
	Served bool
}

// LocalQueueCRD is Kueue's LocalQueue CRD cut to what the exporter reads:
// group, names, scope and spec.clusterQueue as kubernetes-sigs/kueue
// config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml
// (@ff69552e79ad21652c36caa97038382e55625cf7) declares them, with
// versions (the first one stored). Kueue converts between v1beta1 and
// v1beta2 with a webhook; their spec.clusterQueue is the same, so the API
// server's None strategy (apiVersion rewritten) stands in here.
func LocalQueueCRD(versions ...Version) map[string]any {
	spec := map[string]any{"type": "object", "properties": map[string]any{"clusterQueue": map[string]any{"type": "string"}}}
	return crd("kueue.x-k8s.io", "localqueues", "LocalQueue", spec, versions)
}

// JobSetCRD is JobSet's CRD cut to its names: group jobset.x-k8s.io,
// version v1alpha2, namespaced (kubernetes-sigs/jobset
// config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml
// @08dfbdfd682714a9ab929633eca8dc95315187e7); its spec is kept as given.
func JobSetCRD() map[string]any {
	spec := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	return crd("jobset.x-k8s.io", "jobsets", "JobSet", spec, []Version{{"v1alpha2", true}})
}

func crd(group, plural, kind string, spec map[string]any, versions []Version) map[string]any {
	schema := map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{"spec": spec}}}
	var vs []any
	for i, v := range versions {
		vs = append(vs, map[string]any{"name": v.Name, "served": v.Served, "storage": i == 0, "schema": schema})
	}
	return map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{"group": group, "scope": "Namespaced",
			"names":    map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)},
			"versions": vs}}
}

// WaitServed waits until the server serves (or, with served false, no
// longer serves) the namespaced resource gvr: a CRD's handler serves a
// version only once the CRD is established.
func (s *Server) WaitServed(t testing.TB, gvr schema.GroupVersionResource, served bool) {
	t.Helper()
	c := Dynamic(t, s.Admin()).Resource(gvr).Namespace("default")
	poll.Until(t, gvr.String()+" served or not as wanted", func() bool {
		_, err := c.List(context.Background(), metav1.ListOptions{})
		return (err == nil) == served
	})
}
