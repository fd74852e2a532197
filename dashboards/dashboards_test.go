package dashboards_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/dashboards"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

var update = flag.Bool("update", false, "rewrite the committed dashboards/*.json from the code")

// TestCommittedJSON fails when the committed JSON is not what the code
// renders, for every namespace label; -update rewrites it.
func TestCommittedJSON(t *testing.T) {
	for _, label := range dashboards.NamespaceLabels {
		o := dashboards.Options{NamespaceLabel: label}
		for _, b := range dashboards.All() {
			path := filepath.Join(o.Dir(), b.File)
			t.Run(path, func(t *testing.T) {
				got, err := dashboards.Render(b, o)
				if err != nil {
					t.Fatal(err)
				}
				if *update {
					if err := os.MkdirAll(o.Dir(), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./dashboards/... -update)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from what the code renders; run go test ./dashboards/... -update and commit the result", path)
				}
			})
		}
	}
}

// The parts of the dashboard JSON the checks read.
type jsonDashboard struct {
	UID        string      `json:"uid"`
	Title      string      `json:"title"`
	Panels     []jsonPanel `json:"panels"`
	Templating struct {
		List []jsonVariable `json:"list"`
	} `json:"templating"`
}

type jsonVariable struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	AllValue   string `json:"allValue"`
	Query      any    `json:"query"`
	Multi      bool   `json:"multi"`
	IncludeAll bool   `json:"includeAll"`
}

type jsonThresholds struct {
	Steps []struct {
		Color string   `json:"color"`
		Value *float64 `json:"value"`
	} `json:"steps"`
}

type jsonPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Collapsed  bool   `json:"collapsed"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		Expr         string `json:"expr"`
		RefID        string `json:"refId"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit       string          `json:"unit"`
			Thresholds *jsonThresholds `json:"thresholds"`
			Color      *struct {
				Mode string `json:"mode"`
			} `json:"color"`
			Custom struct {
				ThresholdsStyle *struct {
					Mode string `json:"mode"`
				} `json:"thresholdsStyle"`
			} `json:"custom"`
		} `json:"defaults"`
		Overrides []struct {
			Matcher struct {
				ID      string `json:"id"`
				Options string `json:"options"`
			} `json:"matcher"`
			Properties []struct {
				ID    string          `json:"id"`
				Value json.RawMessage `json:"value"`
			} `json:"properties"`
		} `json:"overrides"`
	} `json:"fieldConfig"`
	Options struct {
		ColorMode string `json:"colorMode"`
	} `json:"options"`
	Transformations []struct {
		ID      string `json:"id"`
		Options struct {
			Include struct {
				Names []string `json:"names"`
			} `json:"include"`
			RenameByName map[string]string `json:"renameByName"`
		} `json:"options"`
	} `json:"transformations"`
	// Panels are the panels of a collapsed row.
	Panels []jsonPanel `json:"panels"`
}

// all returns the dashboard's panels, those of collapsed rows included,
// each with the title of its row ("" above the first row).
func (d jsonDashboard) all() []rowPanel {
	var out []rowPanel
	row := ""
	for _, p := range d.Panels {
		if p.Type == "row" {
			row = p.Title
			out = append(out, rowPanel{row, p})
			for _, c := range p.Panels {
				out = append(out, rowPanel{row, c})
			}
			continue
		}
		out = append(out, rowPanel{row, p})
	}
	return out
}

type rowPanel struct {
	row string
	jsonPanel
}

// fields returns the fields (labels, values) a table shows.
func (p jsonPanel) fields() []string {
	var names []string
	for _, tr := range p.Transformations {
		names = append(names, tr.Options.Include.Names...)
	}
	return names
}

// columns returns a table's columns as the reader sees them: the
// included fields, renamed.
func (p jsonPanel) columns() []string {
	names := p.fields()
	rename := map[string]string{}
	for _, tr := range p.Transformations {
		for k, v := range tr.Options.RenameByName {
			rename[k] = v
		}
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if r, ok := rename[n]; ok {
			n = r
		}
		out = append(out, n)
	}
	return out
}

// override returns the value of property id of the column named name.
func (p jsonPanel) override(name, id string) json.RawMessage {
	for _, o := range p.FieldConfig.Overrides {
		if o.Matcher.ID != "byName" || o.Matcher.Options != name {
			continue
		}
		for _, prop := range o.Properties {
			if prop.ID == id {
				return prop.Value
			}
		}
	}
	return nil
}

func (p jsonPanel) reads(metrics *regexp.Regexp) bool {
	for _, tg := range p.Targets {
		if metrics.MatchString(tg.Expr) {
			return true
		}
	}
	return false
}

func loadBoardsFor(t *testing.T, o dashboards.Options) map[string]jsonDashboard {
	t.Helper()
	out := map[string]jsonDashboard{}
	for _, b := range dashboards.All() {
		data, err := dashboards.Render(b, o)
		if err != nil {
			t.Fatal(err)
		}
		var d jsonDashboard
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", b.File, err)
		}
		if d.UID != b.UID {
			t.Errorf("%s: uid %q, want %q", b.File, d.UID, b.UID)
		}
		out[b.File] = d
	}
	return out
}

func loadBoards(t *testing.T) map[string]jsonDashboard {
	t.Helper()
	return loadBoardsFor(t, dashboards.Options{})
}

func TestPanels(t *testing.T) {
	t.Parallel()
	for file, d := range loadBoards(t) {
		t.Run(file, func(t *testing.T) {
			ids := map[int]bool{}
			for _, p := range d.all() {
				if ids[p.ID] || p.ID == 0 {
					t.Errorf("panel %q: id %d missing or not unique", p.Title, p.ID)
				}
				ids[p.ID] = true
				if p.GridPos.X+p.GridPos.W > 24 {
					t.Errorf("panel %q overflows the grid", p.Title)
				}
				if p.Type == "row" {
					continue
				}
				if !slices.Contains([]string{"timeseries", "stat", "table", "heatmap"}, p.Type) {
					t.Errorf("panel %q: type %s is not a current panel type", p.Title, p.Type)
				}
				if p.FieldConfig.Defaults.Unit == "" {
					t.Errorf("panel %q has no unit", p.Title)
				}
				if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q does not use the datasource variable", p.Title)
				}
				if len(p.Targets) == 0 {
					t.Errorf("panel %q has no query", p.Title)
				}
				// Without thresholds of its own a coloured stat takes
				// Grafana's default (red from 80): 80 GPUs would be red.
				if p.Type == "stat" && p.Options.ColorMode != "none" && p.FieldConfig.Defaults.Thresholds == nil {
					t.Errorf("stat %q is coloured (%s) without thresholds", p.Title, p.Options.ColorMode)
				}
				for _, tg := range p.Targets {
					if tg.Expr == "" || tg.RefID == "" {
						t.Errorf("panel %q: target without expr or refId", p.Title)
					}
					if (p.Type == "timeseries" || p.Type == "heatmap") && tg.LegendFormat == "" {
						t.Errorf("panel %q: target %s has no legend", p.Title, tg.RefID)
					}
					// A series of one GPU names the node and the GPU.
					if strings.Contains(tg.LegendFormat, "{{gpu}}") && !strings.Contains(tg.LegendFormat, "{{node}}") {
						t.Errorf("panel %q: legend %q names the GPU but not the node", p.Title, tg.LegendFormat)
					}
				}
			}
		})
	}
}

func TestVariables(t *testing.T) {
	t.Parallel()
	all := map[string]bool{}
	for file, d := range loadBoards(t) {
		var names []string
		for _, v := range d.Templating.List {
			names = append(names, v.Name)
			all[v.Name] = true
			if v.Type == "query" && v.AllValue != ".*" {
				t.Errorf("%s: variable %s: All must be .* so series without the label match", file, v.Name)
			}
		}
		for _, want := range []string{"datasource", "cluster", "node"} {
			if want == "node" && file == "gpu-rightsizing.json" {
				continue // its figures are per namespace and workload, across nodes
			}
			if !slices.Contains(names, want) {
				t.Errorf("%s: no %s variable", file, want)
			}
		}
		// Every variable a query uses is defined.
		used := regexp.MustCompile(`\$([a-z]+)\b`)
		for _, p := range d.all() {
			for _, tg := range p.Targets {
				for _, m := range used.FindAllStringSubmatch(tg.Expr, -1) {
					if !slices.Contains(names, m[1]) {
						t.Errorf("%s: panel %q uses undefined variable $%s", file, p.Title, m[1])
					}
				}
			}
		}
	}
	for _, want := range []string{"datasource", "cluster", "node", "namespace", "pod", "gpu"} {
		if !all[want] {
			t.Errorf("no dashboard has a %s variable", want)
		}
	}
}

// TestNodeDetailHasEveryDefaultField: each default field of the catalog has
// a panel of its own in the node dashboard.
func TestNodeDetailHasEveryDefaultField(t *testing.T) {
	t.Parallel()
	d := loadBoards(t)["gpu-node-detail.json"]
	for _, f := range fields.MustNew().Defaults() {
		metric := regexp.MustCompile(`(^|[^a-z_:])` + f.Name + `\{`)
		found := false
		for _, p := range d.all() {
			for _, tg := range p.Targets {
				if metric.MatchString(tg.Expr) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("default field %s has no panel in the node dashboard", f.Name)
		}
	}
}

// colourMetrics are the families whose colour means something: idle or
// busy GPUs, memory near full, heat.
var colourMetrics = regexp.MustCompile(`(^|[^a-z_])(gpu_utilization_ratio|gpu_graphics_engine_active_ratio|gpu_memory_used_bytes|gpu_temperature_celsius)`)

// TestColourCarryingPanelsHaveThresholds: every time series, stat or
// table of utilization, memory share or temperature colours its values by
// thresholds of its own (a table: on a column). Heatmaps are coloured by
// density and panels in bytes show sizes, not states.
func TestColourCarryingPanelsHaveThresholds(t *testing.T) {
	t.Parallel()
	for file, d := range loadBoards(t) {
		for _, p := range d.all() {
			if !p.reads(colourMetrics) || p.Type == "heatmap" || p.Type == "row" {
				continue
			}
			switch p.Type {
			case "timeseries", "stat":
				if u := p.FieldConfig.Defaults.Unit; u != "percentunit" && u != "celsius" {
					continue
				}
				th := p.FieldConfig.Defaults.Thresholds
				if th == nil || len(th.Steps) < 2 {
					t.Errorf("%s: panel %q (%s) has no thresholds", file, p.Title, p.FieldConfig.Defaults.Unit)
					continue
				}
				if p.Type == "timeseries" && (p.FieldConfig.Defaults.Custom.ThresholdsStyle == nil || p.FieldConfig.Defaults.Custom.ThresholdsStyle.Mode == "off") {
					t.Errorf("%s: panel %q does not draw its thresholds", file, p.Title)
				}
				if p.Type == "stat" && (p.Options.ColorMode == "none" || p.FieldConfig.Defaults.Color == nil || p.FieldConfig.Defaults.Color.Mode != "thresholds") {
					t.Errorf("%s: stat %q is not coloured by its thresholds", file, p.Title)
				}
			case "table":
				coloured := false
				for _, c := range p.columns() {
					if p.override(c, "thresholds") != nil && p.override(c, "custom.cellOptions") != nil {
						coloured = true
					}
				}
				if !coloured {
					t.Errorf("%s: table %q colours no column by thresholds", file, p.Title)
				}
			}
		}
	}
}

// TestHealthRows: the fleet and node dashboards have a GPU-health row and
// an exporter-health row that read every health family.
func TestHealthRows(t *testing.T) {
	t.Parallel()
	rows := []struct {
		row      *regexp.Regexp
		families []string
	}{
		{regexp.MustCompile(`^GPU health$`), []string{
			"gpu_lost_since_timestamp_seconds", "gpu_health_status", "gpu_xid_errors_total",
			"gpu_ecc_double_bit_volatile_errors_total", "gpu_row_remap_failure", "gpu_recovery_action",
		}},
		{regexp.MustCompile(`^Exporters?$`), []string{
			"gpu_exporter_source_up", "gpu_exporter_podresources_up", "gpu_exporter_collection_errors_total",
			"gpu_exporter_last_collection_timestamp_seconds", "gpu_exporter_gpus",
		}},
	}
	boards := loadBoards(t)
	for _, file := range []string{"gpu-cluster-overview.json", "gpu-node-detail.json"} {
		for _, r := range rows {
			read := map[string]bool{}
			found := false
			for _, p := range boards[file].all() {
				if !r.row.MatchString(p.row) {
					continue
				}
				found = true
				for _, f := range r.families {
					if p.reads(regexp.MustCompile(`(^|[^a-z_:])` + f + `\{`)) {
						read[f] = true
					}
				}
			}
			if !found {
				t.Errorf("%s: no row matching %s", file, r.row)
				continue
			}
			for _, f := range r.families {
				if !read[f] {
					t.Errorf("%s: row %s reads no %s", file, r.row, f)
				}
			}
		}
	}
}

var (
	linkTarget = regexp.MustCompile(`^/d/([a-z0-9-]+)\?`)
	linkField  = regexp.MustCompile(`\$\{__data\.fields\["([^"]+)"\]\}`)
)

// TestTableLinks: the fleet tables that show a node link it to the node
// dashboard (and a GPU to the GPU), and every link names an existing
// dashboard and columns of its own table.
func TestTableLinks(t *testing.T) {
	t.Parallel()
	uids := map[string]bool{}
	for _, b := range dashboards.All() {
		uids[b.UID] = true
	}
	for file, d := range loadBoards(t) {
		for _, p := range d.all() {
			if p.Type != "table" {
				continue
			}
			cols := p.columns()
			linked := map[string]bool{}
			for _, c := range cols {
				raw := p.override(c, "links")
				if raw == nil {
					continue
				}
				var links []struct{ Title, URL string }
				if err := json.Unmarshal(raw, &links); err != nil {
					t.Fatalf("%s: table %q: column %s: links: %v", file, p.Title, c, err)
				}
				for _, l := range links {
					m := linkTarget.FindStringSubmatch(l.URL)
					if m == nil || !uids[m[1]] {
						t.Errorf("%s: table %q: column %s links to %q, no dashboard of this project", file, p.Title, c, l.URL)
					}
					for _, f := range linkField.FindAllStringSubmatch(l.URL, -1) {
						if !slices.Contains(cols, f[1]) {
							t.Errorf("%s: table %q: link %q names column %q, not one of %v", file, p.Title, l.URL, f[1], cols)
						}
					}
					if !strings.Contains(l.URL, "${__url_time_range}") {
						t.Errorf("%s: table %q: link %q loses the time range", file, p.Title, l.URL)
					}
				}
				linked[c] = true
			}
			if file == "gpu-node-detail.json" {
				continue // the detail dashboard is where the links lead
			}
			for _, c := range []string{"node", "GPU"} {
				if slices.Contains(cols, c) && !linked[c] {
					t.Errorf("%s: fleet table %q shows %s without a link to its detail", file, p.Title, c)
				}
			}
		}
	}
}

// TestHeavyDashboardsOpenCollapsed: a dashboard of many panels opens
// with most rows closed, so Grafana runs few queries until a row is
// opened; a closed row holds its panels.
func TestHeavyDashboardsOpenCollapsed(t *testing.T) {
	t.Parallel()
	const heavy, openMax = 40, 25
	for file, d := range loadBoards(t) {
		total, open := 0, 0
		for _, p := range d.Panels {
			if p.Type == "row" {
				if p.Collapsed && len(p.Panels) == 0 {
					t.Errorf("%s: closed row %q holds no panels", file, p.Title)
				}
				if !p.Collapsed && len(p.Panels) > 0 {
					t.Errorf("%s: open row %q holds panels of its own", file, p.Title)
				}
				total += len(p.Panels)
				continue
			}
			total++
			open++
		}
		if total > heavy && open > openMax {
			t.Errorf("%s: %d panels, %d of them open: close rows (at most %d open)", file, total, open, openMax)
		}
	}
}

// TestNodeDetailOpensOnOneNode: the detail dashboard selects a single node,
// never All.
func TestNodeDetailOpensOnOneNode(t *testing.T) {
	t.Parallel()
	d := loadBoards(t)["gpu-node-detail.json"]
	for _, v := range d.Templating.List {
		if v.Name == "node" && (v.Multi || v.IncludeAll) {
			t.Errorf("node variable: multi=%v includeAll=%v, want a single node", v.Multi, v.IncludeAll)
		}
	}
}

// attributionNamespace finds `namespace` used as a label name: not the
// recording rules' namespace: level prefix, not $namespace, not part of
// exported_namespace or namespace_pod.
var attributionNamespace = regexp.MustCompile(`(^|[^a-zA-Z0-9_:$])namespace([^a-zA-Z0-9_:]|$)`)

// TestNamespaceLabel: rendered for exported_namespace (the chart's
// monitoring.namespaceLabel under prometheus-operator's namespace
// enforcement), no query, legend or variable of GPU series uses
// `namespace`; only kube-state-metrics series keep it.
func TestNamespaceLabel(t *testing.T) {
	t.Parallel()
	const label = "exported_namespace"
	for file, d := range loadBoardsFor(t, dashboards.Options{NamespaceLabel: label}) {
		uses := 0
		for _, p := range d.all() {
			for _, tg := range p.Targets {
				uses += strings.Count(tg.Expr, label)
				if attributionNamespace.MatchString(tg.Expr) && !strings.Contains(tg.Expr, "kube_") {
					t.Errorf("%s: panel %q uses namespace on GPU series: %s", file, p.Title, tg.Expr)
				}
				if strings.Contains(tg.LegendFormat, "{{namespace}}") {
					t.Errorf("%s: panel %q: legend %q", file, p.Title, tg.LegendFormat)
				}
			}
			if slices.Contains(p.fields(), label) {
				uses++ // a table column names the holder's namespace
			}
			if slices.Contains(p.fields(), "namespace") && !p.reads(regexp.MustCompile(`kube_`)) {
				t.Errorf("%s: table %q shows the namespace label, not %s", file, p.Title, label)
			}
		}
		for _, v := range d.Templating.List {
			if q, ok := v.Query.(string); ok && attributionNamespace.MatchString(q) {
				t.Errorf("%s: variable %s: %s", file, v.Name, q)
			}
		}
		if file != "gpu-node-detail.json" && uses == 0 {
			t.Errorf("%s: no query uses %s", file, label)
		}
	}
	for file, d := range loadBoards(t) {
		for _, p := range d.all() {
			for _, tg := range p.Targets {
				if strings.Contains(tg.Expr, label) {
					t.Errorf("%s: panel %q uses %s by default", file, p.Title, label)
				}
			}
		}
	}
}

// TestWorkloadsBoardShowsSharing: the workloads dashboard shows issue 36's
// figures: energy per namespace and workload (and its cost, energy times
// the $price variable), shares given versus used per container, orphan
// processes and their memory per GPU.
func TestWorkloadsBoardShowsSharing(t *testing.T) {
	t.Parallel()
	d := loadBoards(t)["gpu-workloads.json"]
	wants := []string{
		"namespace:gpu_container_energy_joules:rate5m",
		"workload:gpu_container_energy_joules:rate5m",
		"node:gpu_idle_energy_joules:rate5m",
		"gpu_container:gpu_sm_share_used:ratio",
		"gpu_container:gpu_memory_share_used:ratio",
		"gpu_orphan_processes",
		"gpu_orphan_memory_used_bytes",
	}
	for _, want := range wants {
		read := regexp.MustCompile(`(^|[^a-zA-Z0-9_:])` + regexp.QuoteMeta(want) + `\{`)
		found := false
		for _, p := range d.all() {
			found = found || p.reads(read)
		}
		if !found {
			t.Errorf("no panel of gpu-workloads.json reads %s", want)
		}
	}
	costs := 0
	for _, p := range d.all() {
		for _, tg := range p.Targets {
			if strings.Contains(tg.Expr, "energy_joules") && strings.Contains(tg.Expr, "* $price") {
				costs++
			}
		}
	}
	if costs < 2 {
		t.Errorf("%d cost queries (energy x $price), want one per namespace and one per workload", costs)
	}
}
