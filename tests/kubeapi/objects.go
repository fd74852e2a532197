package kubeapi

import (
	"context"
	"fmt"
	"testing"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Resources the tests create, by group, version and resource.
var (
	Namespaces      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	ServiceAccounts = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	Pods            = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	ResourceSlices  = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceslices"}
	ClusterRoles    = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	ClusterBindings = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}
	Roles           = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}
	RoleBindings    = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// byKind maps the kinds Apply creates to their resources.
func byKind(apiVersion, kind string) (schema.GroupVersionResource, bool) {
	for _, r := range []struct {
		apiVersion, kind string
		gvr              schema.GroupVersionResource
	}{
		{"v1", "Namespace", Namespaces}, {"v1", "ServiceAccount", ServiceAccounts}, {"v1", "Pod", Pods},
		{"resource.k8s.io/v1", "ResourceSlice", ResourceSlices},
		{"rbac.authorization.k8s.io/v1", "ClusterRole", ClusterRoles},
		{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", ClusterBindings},
		{"rbac.authorization.k8s.io/v1", "Role", Roles},
		{"rbac.authorization.k8s.io/v1", "RoleBinding", RoleBindings},
	} {
		if r.apiVersion == apiVersion && r.kind == kind {
			return r.gvr, true
		}
	}
	return schema.GroupVersionResource{}, false
}

// Apply creates obj (a decoded manifest: a rendered chart's document) as
// the administrator, its resource chosen by apiVersion and kind; a kind
// Apply does not know fails the test.
func (s *Server) Apply(t testing.TB, obj map[string]any) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	gvr, ok := byKind(u.GetAPIVersion(), u.GetKind())
	if !ok {
		t.Fatalf("kubeapi.Apply: unknown kind %s %s", u.GetAPIVersion(), u.GetKind())
	}
	return s.Create(t, gvr, obj)
}

// Dynamic returns a dynamic client for cfg.
func Dynamic(t testing.TB, cfg *rest.Config) *dynamic.DynamicClient {
	t.Helper()
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Create creates obj (a JSON-shaped map with apiVersion, kind and
// metadata) as the administrator, in its metadata.namespace if it has one,
// and returns what the server stored.
func (s *Server) Create(t testing.TB, gvr schema.GroupVersionResource, obj map[string]any) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	var r dynamic.ResourceInterface = Dynamic(t, s.Admin()).Resource(gvr)
	if ns := u.GetNamespace(); ns != "" {
		r = Dynamic(t, s.Admin()).Resource(gvr).Namespace(ns)
	}
	out, err := r.Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", gvr.Resource, u.GetNamespace(), u.GetName(), err)
	}
	return out
}

// CreateNamespace creates a namespace and its default ServiceAccount
// (the controller-manager's job in a cluster).
func (s *Server) CreateNamespace(t testing.TB, name string) {
	t.Helper()
	s.Create(t, Namespaces, map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name}})
	s.CreateServiceAccount(t, name, "default")
}

// CreateServiceAccount creates a ServiceAccount.
func (s *Server) CreateServiceAccount(t testing.TB, namespace, name string) {
	t.Helper()
	s.Create(t, ServiceAccounts, map[string]any{"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": map[string]any{"name": name, "namespace": namespace}})
}

// Token returns a token of the ServiceAccount namespace/name, through the
// TokenRequest API as the kubelet gets a projected token.
func (s *Server) Token(t testing.TB, namespace, name string) string {
	t.Helper()
	req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{}}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(req)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: raw}
	u.SetAPIVersion("authentication.k8s.io/v1")
	u.SetKind("TokenRequest")
	u.SetName(name)
	out, err := Dynamic(t, s.Admin()).Resource(ServiceAccounts).Namespace(namespace).
		Create(context.Background(), u, metav1.CreateOptions{}, "token")
	if err != nil {
		t.Fatalf("token of %s/%s: %v", namespace, name, err)
	}
	tok, _, _ := unstructured.NestedString(out.Object, "status", "token")
	if tok == "" {
		t.Fatalf("token of %s/%s: empty: %v", namespace, name, fmt.Sprint(out.Object))
	}
	return tok
}
