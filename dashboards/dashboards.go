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
	Build func() (dashboard.Dashboard, error)
}

// Stable UIDs: links, bookmarks and provisioning refer to them.
const (
	ClusterOverviewUID = "gpu-exporter-cluster"
	NodeDetailUID      = "gpu-exporter-node"
	WorkloadsUID       = "gpu-exporter-workloads"
)

// All returns every dashboard, in a fixed order.
func All() []Board {
	return []Board{
		{File: "gpu-cluster-overview.json", UID: ClusterOverviewUID, Build: ClusterOverview},
		{File: "gpu-node-detail.json", UID: NodeDetailUID, Build: NodeDetail},
		{File: "gpu-workloads.json", UID: WorkloadsUID, Build: Workloads},
	}
}

// Render returns the dashboard as indented JSON with a final newline, the
// form it is committed in.
func Render(b Board) ([]byte, error) {
	d, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", b.File, err)
	}
	out, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("dashboard %s: %w", b.File, err)
	}
	return append(out, '\n'), nil
}
