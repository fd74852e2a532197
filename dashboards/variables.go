package dashboards

import (
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Label matchers for the template variables. Every query variable offers
// "All", whose value is ".*": it also matches series without the label, so
// the dashboards work where Prometheus adds no `cluster` label.
const (
	mCluster   = `cluster=~"$cluster"`
	mNode      = `node=~"$node"`
	mGPU       = `gpu=~"$gpu"`
	mNamespace = `namespace=~"$namespace"`
	mPod       = `pod=~"$pod"`
)

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

func namespaceVar() cog.Builder[dashboard.VariableModel] {
	return queryVar("namespace", "Namespace", `label_values(gpu_pod_allocation_info{`+sel(mCluster, mNode)+`}, namespace)`)
}

func podVar() cog.Builder[dashboard.VariableModel] {
	return queryVar("pod", "Pod", `label_values(gpu_pod_allocation_info{`+sel(mCluster, mNode, mNamespace)+`}, pod)`)
}
