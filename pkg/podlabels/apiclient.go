package podlabels

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/gpu-exporter/gpu-exporter/pkg/kubejson"
)

// podsClient lists and watches pods in every namespace, decoded into
// apiPod and apiPodList (client-go's typed pods client sends the same
// requests: kubernetes/typed/core/v1 through gentype.Client).
type podsClient = kubejson.Client[*apiPodList]

// newPodsClient returns a pods client for cfg.
func newPodsClient(cfg *rest.Config) (*podsClient, error) {
	return kubejson.New(cfg, schema.GroupVersion{Version: "v1"}, "pods", newPodScheme(), func() *apiPodList { return &apiPodList{} })
}
