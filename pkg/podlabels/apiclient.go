package podlabels

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

// podsClient lists and watches pods in every namespace over a REST client
// whose scheme knows the v1 Pod and PodList only, decoded into apiPod and
// apiPodList. The requests are those
// client-go's typed pods client sends (kubernetes/typed/core/v1 through
// gentype.Client: GET /api/v1/pods with the list options as query
// parameters, watch=true to watch, the options' timeout as the request's).
type podsClient struct {
	rest   rest.Interface
	params runtime.ParameterCodec
}

// newPodsClient returns a pods client for cfg that accepts JSON only:
// decoding protobuf needs the generated code of k8s.io/api/core/v1, and the
// API server answers every resource in JSON.
func newPodsClient(cfg *rest.Config) (*podsClient, error) {
	scheme := newPodScheme()
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &schema.GroupVersion{Version: "v1"}
	c.APIPath = "/api"
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &podsClient{rest: rc, params: runtime.NewParameterCodec(scheme)}, nil
}

// List lists the pods the options select.
func (c *podsClient) List(ctx context.Context, opts metav1.ListOptions) (*apiPodList, error) {
	list := &apiPodList{}
	err := c.rest.Get().Resource("pods").VersionedParams(&opts, c.params).Timeout(timeout(opts)).Do(ctx).Into(list)
	return list, err
}

// Watch watches the pods the options select.
func (c *podsClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.rest.Get().Resource("pods").VersionedParams(&opts, c.params).Timeout(timeout(opts)).Watch(ctx)
}

func timeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
