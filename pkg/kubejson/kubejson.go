// Package kubejson lists and watches one resource of the Kubernetes API
// with client-go's REST client, decoding the API server's JSON into types
// of the caller's own: the few fields the exporter reads, so that the
// binary links no k8s.io/api package (their generated code is most of a
// client's size). The requests are those client-go's typed clients send
// (GET <apiPath>/<group>/<version>/<resource> with the list options as
// query parameters, watch=true to watch, the options' timeout as the
// request's).
package kubejson

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Client lists and watches one resource, decoding each list into a new L.
type Client[L runtime.Object] struct {
	rest     rest.Interface
	params   runtime.ParameterCodec
	resource string
	newList  func() L
}

// Scheme returns a scheme that decodes kind and kind+"List" of gv into obj
// and list, with the meta/v1 types a client needs (list options as query
// parameters, watch events, Status errors), as the generated AddToScheme
// functions register them.
func Scheme(gv schema.GroupVersion, kind string, obj, list runtime.Object) *runtime.Scheme {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gv.WithKind(kind), obj)
	scheme.AddKnownTypeWithName(gv.WithKind(kind+"List"), list)
	metav1.AddToGroupVersion(scheme, gv)
	return scheme
}

// New returns a client of resource (plural, as in the URL) of gv for cfg,
// whose objects scheme decodes (Scheme), accepting JSON only: decoding
// protobuf needs the generated code, and the API server answers every
// resource in JSON. newList makes the list a List decodes into.
func New[L runtime.Object](cfg *rest.Config, gv schema.GroupVersion, resource string, scheme *runtime.Scheme, newList func() L) (*Client[L], error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	if gv.Group == "" {
		c.APIPath = "/api" // the core group
	}
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &Client[L]{rest: rc, params: runtime.NewParameterCodec(scheme), resource: resource, newList: newList}, nil
}

// List lists the objects the options select.
func (c *Client[L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	list := c.newList()
	err := c.rest.Get().Resource(c.resource).VersionedParams(&opts, c.params).Timeout(timeout(opts)).Do(ctx).Into(list)
	return list, err
}

// Watch watches the objects the options select.
func (c *Client[L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.rest.Get().Resource(c.resource).VersionedParams(&opts, c.params).Timeout(timeout(opts)).Watch(ctx)
}

func timeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
