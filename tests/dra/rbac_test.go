package dra

import (
	"context"
	"os"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gpu-exporter/gpu-exporter/tests/kubeapi"
)

func TestMain(m *testing.M) { os.Exit(kubeapi.Main(m)) }

// chartNamespace is the namespace the chart is rendered into.
const chartNamespace = "gpu-exporter"

// renderChart renders the chart as `helm install` would on a cluster that
// serves resource.k8s.io/v1, with sets, and returns its objects.
func renderChart(t *testing.T, sets ...string) []map[string]any {
	t.Helper()
	args := []string{"--api-versions", "resource.k8s.io/v1"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return kubeapi.RenderChart(t, "gpu", chartNamespace, args...)
}

// The chart's DRA RBAC, rendered and applied to a real API server, lets
// the exporter's ServiceAccount get, list (with the node's field selector)
// and watch ResourceSlices, and nothing else: every other verb on them,
// other DRA objects and other resources answer 403.
func TestChartRBACIsSufficientAndMinimal(t *testing.T) {
	srv := kubeapi.Shared(t)
	sa := chartAccount(t, srv)
	srv.Create(t, kubeapi.ResourceSlices, sliceObject("rbac-node-gpu", "rbac-node", gpuDev("0", gpuUUIDs[0])))
	c := kubeapi.Dynamic(t, srv.Config(srv.Token(t, chartNamespace, sa)))
	ctx := context.Background()
	slices := c.Resource(kubeapi.ResourceSlices)
	byNode := metav1.ListOptions{FieldSelector: "spec.nodeName=rbac-node"}
	allowed := map[string]func() error{
		"get resourceslices": func() error { _, err := slices.Get(ctx, "rbac-node-gpu", metav1.GetOptions{}); return err },
		"list resourceslices of the node": func() error {
			l, err := slices.List(ctx, byNode)
			if err == nil && len(l.Items) != 1 {
				t.Errorf("list by node: %d slices, want 1", len(l.Items))
			}
			return err
		},
		"watch resourceslices of the node": func() error {
			w, err := slices.Watch(ctx, byNode)
			if err == nil {
				w.Stop()
			}
			return err
		},
	}
	for name, call := range allowed {
		if err := call(); err != nil {
			t.Errorf("%s: %v, want allowed", name, err)
		}
	}
	gvr := func(group, version, resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
	}
	list := func(r schema.GroupVersionResource, ns string) func() error {
		return func() error {
			var ri dynamic.ResourceInterface = c.Resource(r)
			if ns != "" {
				ri = c.Resource(r).Namespace(ns)
			}
			_, err := ri.List(ctx, metav1.ListOptions{})
			return err
		}
	}
	slice := &unstructured.Unstructured{Object: sliceObject("rbac-created", "rbac-node", gpuDev("1", gpuUUIDs[1]))}
	denied := map[string]func() error{
		"create resourceslices": func() error { _, err := slices.Create(ctx, slice, metav1.CreateOptions{}); return err },
		"delete resourceslices": func() error { return slices.Delete(ctx, "rbac-node-gpu", metav1.DeleteOptions{}) },
		"deletecollection resourceslices": func() error {
			return slices.DeleteCollection(ctx, metav1.DeleteOptions{}, byNode)
		},
		"patch resourceslices": func() error {
			_, err := slices.Patch(ctx, "rbac-node-gpu", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
			return err
		},
		"list resourceclaims":        list(gvr("resource.k8s.io", "v1", "resourceclaims"), ""),
		"list deviceclasses":         list(gvr("resource.k8s.io", "v1", "deviceclasses"), ""),
		"list pods":                  list(kubeapi.Pods, ""),
		"list nodes":                 list(gvr("", "v1", "nodes"), ""),
		"list secrets of its own":    list(gvr("", "v1", "secrets"), chartNamespace),
		"list configmaps of its own": list(gvr("", "v1", "configmaps"), chartNamespace),
	}
	for name, call := range denied {
		if err := call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want 403 Forbidden", name, err)
		}
	}
}
