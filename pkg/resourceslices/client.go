package resourceslices

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	"github.com/gpu-exporter/gpu-exporter/pkg/kubejson"
)

// Group is the DRA API group.
const Group = "resource.k8s.io"

// Versions returns the versions of Group whose ResourceSlice this package
// reads, most preferred first: v1 (GA in Kubernetes 1.34), then the betas
// a cluster of 1.32/1.33 serves.
func Versions() []string { return []string{"v1", "v1beta2", "v1beta1"} }

// ErrGroupNotServed is returned when the API server serves none of
// Versions.
var ErrGroupNotServed = errors.New("the API server serves no resource.k8s.io version with ResourceSlices (v1, v1beta2, v1beta1): DRA is off in this cluster")

// maxDiscoveryBytes caps the API group document read (a few hundred bytes
// in practice).
const maxDiscoveryBytes = 64 << 10

// ServedVersion asks the API server which version of Group to use: the
// first of Versions it serves.
func ServedVersion(ctx context.Context, cfg *rest.Config) (string, error) {
	c := rest.CopyConfig(cfg)
	c.NegotiatedSerializer = serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := rc.Get().AbsPath("/apis", Group).DoRaw(ctx)
	if err != nil {
		if isNotFound(err) {
			return "", ErrGroupNotServed
		}
		return "", fmt.Errorf("discover %s: %w", Group, err)
	}
	if len(raw) > maxDiscoveryBytes {
		return "", fmt.Errorf("discover %s: answer over %d bytes", Group, maxDiscoveryBytes)
	}
	var g metav1.APIGroup
	if err := json.Unmarshal(raw, &g); err != nil {
		return "", fmt.Errorf("discover %s: %w", Group, err)
	}
	for _, v := range Versions() {
		if slices.ContainsFunc(g.Versions, func(gv metav1.GroupVersionForDiscovery) bool { return gv.Version == v }) {
			return v, nil
		}
	}
	return "", ErrGroupNotServed
}

// slicesClient lists and watches ResourceSlices of one version
// (GET /apis/resource.k8s.io/<v>/resourceslices, watch=true to watch, as
// client-go's typed client does), decoded into apiSlice.
type slicesClient = kubejson.Client[*apiSliceList]

func newSlicesClient(cfg *rest.Config, version string) (*slicesClient, error) {
	gv := schema.GroupVersion{Group: Group, Version: version}
	return kubejson.New(cfg, gv, "resourceslices", newScheme(gv), func() *apiSliceList { return &apiSliceList{} })
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
