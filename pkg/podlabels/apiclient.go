package podlabels

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// podsClient lists and watches pods in every namespace over a REST client
// whose scheme knows the core/v1 API group only. The requests are those
// client-go's typed pods client sends (kubernetes/typed/core/v1 through
// gentype.Client: GET /api/v1/pods with the list options as query
// parameters, watch=true to watch, the options' timeout as the request's).
type podsClient struct {
	rest   rest.Interface
	params runtime.ParameterCodec
}

// newPodsClient returns a pods client for cfg, asking for protobuf (as the
// typed clients may) and accepting JSON.
func newPodsClient(cfg *rest.Config) (*podsClient, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil { // also registers the meta/v1 list and watch types
		return nil, err
	}
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &podsClient{rest: rc, params: runtime.NewParameterCodec(scheme)}, nil
}

// List lists the pods the options select.
func (c *podsClient) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	list := &corev1.PodList{}
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
