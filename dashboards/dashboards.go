// Package dashboards builds gpu-exporter's Grafana dashboards with the
// grafana-foundation-sdk. The JSON they render is committed next to this
// file (dashboards/*.json) and shipped by the Helm chart; a test fails when
// the committed JSON differs from what the code renders, and
// `go test ./dashboards/... -update` (or `go run ./dashboards/generate`)
// rewrites it.
//
// The dashboards read the recording rules of rules/recording.yaml where
// those exist, so that shared GPUs are counted once and MIG instances by
// their share of a GPU, and read the field catalog (pkg/fields) to give every
// default field a panel of the right unit.
package dashboards

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Board is one dashboard: the file it is committed as and its builder.
type Board struct {
	// File is the file name under dashboards/.
	File string
	// UID is the dashboard's stable Grafana UID.
	UID string
	// Build assembles the dashboard.
	Build func(Options) (dashboard.Dashboard, error)
}

// Options are what a deployment changes in the dashboards.
type Options struct {
	// NamespaceLabel is the label that names the namespace of the pod
	// holding a GPU: "namespace" as the exporter writes it, or
	// "exported_namespace" where the Helm chart renames it on scrape
	// because prometheus-operator enforces `namespace`
	// (monitoring.namespaceLabel). kube-state-metrics series keep
	// `namespace`.
	NamespaceLabel string
}

// DefaultNamespaceLabel is the label the exporter writes.
const DefaultNamespaceLabel = "namespace"

// NamespaceLabels are the namespace labels the dashboards are committed
// for: dashboards/*.json for the default, dashboards/<label>/*.json for
// the others. The chart's monitoring.namespaceLabel takes one of them.
var NamespaceLabels = []string{DefaultNamespaceLabel, "exported_namespace"}

// Dir is the directory, relative to dashboards/, that holds the
// dashboards rendered for a namespace label.
func (o Options) Dir() string {
	if o.ns() == DefaultNamespaceLabel {
		return "."
	}
	return o.ns()
}

func (o Options) ns() string {
	if o.NamespaceLabel == "" {
		return DefaultNamespaceLabel
	}
	return o.NamespaceLabel
}

// Stable UIDs: links, bookmarks and provisioning refer to them.
const (
	ClusterOverviewUID = "gpu-exporter-cluster"
	NodeDetailUID      = "gpu-exporter-node"
	WorkloadsUID       = "gpu-exporter-workloads"
	RightsizingUID     = "gpu-exporter-rightsizing"
)

// All returns every dashboard, in a fixed order.
func All() []Board {
	return []Board{
		{File: "gpu-cluster-overview.json", UID: ClusterOverviewUID, Build: ClusterOverview},
		{File: "gpu-node-detail.json", UID: NodeDetailUID, Build: NodeDetail},
		{File: "gpu-workloads.json", UID: WorkloadsUID, Build: Workloads},
		{File: "gpu-rightsizing.json", UID: RightsizingUID, Build: Rightsizing},
	}
}

// detailLink is a data link into the node and GPU dashboard for the node
// (and, when gpuField is set, the GPU) of a table row; fields are named by
// their column titles. It keeps the time range, the data source and the
// cluster.
func detailLink(title, nodeField, gpuField string) *link {
	url := "/d/" + NodeDetailUID + "?${__url_time_range}&${datasource:queryparam}&${cluster:queryparam}" +
		"&var-node=${__data.fields[\"" + nodeField + "\"]}"
	if gpuField != "" {
		url += "&var-gpu=${__data.fields[\"" + gpuField + "\"]}"
	}
	return &link{title: title, url: url}
}

// Render returns the dashboard as indented JSON with a final newline, the
// form it is committed in.
func Render(b Board, o Options) ([]byte, error) {
	d, err := b.Build(o)
	if err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", b.File, err)
	}
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", b.File, err)
	}
	return append(out, '\n'), nil
}
