package dashboards

import (
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"

	"github.com/gpu-exporter/gpu-exporter/rules"
)

// Label matchers for the template variables. Every query variable offers
// "All", whose value is ".*": it also matches series without the label, so
// the dashboards work where Prometheus adds no `cluster` label.
const (
	mCluster = `cluster=~"$cluster"`
	mNode    = `node=~"$node"`
	mGPU     = `gpu=~"$gpu"`
	mPod     = `pod=~"$pod"`
	// mKSMNamespace selects kube-state-metrics series, whose namespace
	// label prometheus-operator's namespace enforcement does not concern
	// here (see Options.NamespaceLabel).
	mKSMNamespace = `namespace=~"$namespace"`
)

// mNamespace selects GPU series by the namespace of their holder.
func (o Options) mNamespace() string { return o.ns() + `=~"$namespace"` }

// gpuMax collapses the holders' copies of a GPU family into one series
// per GPU, MIG instance or link: `max by` the GPU's identity
// (rules.GPULabels, the labels the gpu:* recordings keep) and the
// family's own extra labels (a throttle reason). By, not without: a
// GPU's copies differ in holder labels only the user's configuration
// knows (pod_uid, label_<key> per allowed pod label, hpc_*), and in the
// scrape's instance across an exporter rollout, and `without` can only
// name the labels it knows.
func gpuMax(extra ...string) string {
	return `max by (` + strings.Join(append(rules.GPULabels(), extra...), ", ") + `) `
}

// sel joins label matchers into the inside of a selector's braces; empty
// ones are left out.
func sel(matchers ...string) string {
	var kept []string
	for _, m := range matchers {
		if m != "" {
			kept = append(kept, m)
		}
	}
	return strings.Join(kept, ", ")
}

func datasourceVar() cog.Builder[dashboard.VariableModel] {
	return dashboard.NewDatasourceVariableBuilder("datasource").
		Label("Data source").
		Type("prometheus")
}

func queryVar(name, label, q string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Query(dashboard.StringOrMap{String: cog.ToPtr(q)}).
		Definition(q).
		Datasource(datasourceRef()).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortNaturalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(".*")
}

func clusterVar() cog.Builder[dashboard.VariableModel] {
	return queryVar("cluster", "Cluster", "label_values(gpu_info, cluster)").Multi(false)
}

func nodeVar() cog.Builder[dashboard.VariableModel] {
	return queryVar("node", "Node", `label_values(gpu_info{`+mCluster+`}, node)`)
}

func gpuVar() cog.Builder[dashboard.VariableModel] {
	return queryVar("gpu", "GPU", `label_values(gpu_info{`+sel(mCluster, mNode)+`}, gpu)`)
}

// singleNodeVar selects one node, the first, when the dashboard opens: a
// detail dashboard over every node of a large fleet runs its heaviest
// queries over every GPU.
func singleNodeVar() cog.Builder[dashboard.VariableModel] {
	return queryVar("node", "Node", `label_values(gpu_info{`+mCluster+`}, node)`).
		Multi(false).
		IncludeAll(false)
}

func namespaceVar(o Options) cog.Builder[dashboard.VariableModel] {
	return queryVar("namespace", "Namespace", `label_values(gpu_pod_allocation_info{`+sel(mCluster, mNode)+`}, `+o.ns()+`)`)
}

func podVar(o Options) cog.Builder[dashboard.VariableModel] {
	return queryVar("pod", "Pod", `label_values(gpu_pod_allocation_info{`+sel(mCluster, mNode, o.mNamespace())+`}, pod)`)
}
