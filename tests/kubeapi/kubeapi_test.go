package kubeapi

import (
	"context"
	"os"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// The server reports the version the ldflags set (clients parse it), and
// a ServiceAccount without a role is refused what RBAC does not grant.
func TestServer(t *testing.T) {
	s := Shared(t)
	dc, err := discovery.NewDiscoveryClientForConfig(s.Admin())
	if err != nil {
		t.Fatal(err)
	}
	v, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != "v1.37.2" || v.Major != "1" || v.Minor != "37" {
		t.Errorf("server version %+v, want v1.37.2", v)
	}
	if _, err := dc.ServerResourcesForGroupVersion("resource.k8s.io/v1"); err != nil {
		t.Errorf("resource.k8s.io/v1 not served: %v", err)
	}

	s.CreateNamespace(t, "smoke")
	s.CreateServiceAccount(t, "smoke", "nobody")
	tok := s.Token(t, "smoke", "nobody")
	_, err = Dynamic(t, s.Config(tok)).Resource(Pods).List(context.Background(), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("list pods without a role: %v, want 403 Forbidden", err)
	}
}
