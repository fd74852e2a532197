package dashboards_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/dashboards"
	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

var update = flag.Bool("update", false, "rewrite the committed dashboards/*.json from the code")

// TestCommittedJSON fails when the committed JSON is not what the code
// renders; -update rewrites it.
func TestCommittedJSON(t *testing.T) {
	for _, b := range dashboards.All() {
		t.Run(b.File, func(t *testing.T) {
			got, err := dashboards.Render(b)
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(b.File, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(b.File)
			if err != nil {
				t.Fatalf("%v (run go test ./dashboards/... -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from what the code renders; run go test ./dashboards/... -update and commit the result", b.File)
			}
		})
	}
}

// The parts of the dashboard JSON the checks read.
type jsonDashboard struct {
	UID        string      `json:"uid"`
	Title      string      `json:"title"`
	Panels     []jsonPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			AllValue string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
}

type jsonPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
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
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

func loadBoards(t *testing.T) map[string]jsonDashboard {
	t.Helper()
	out := map[string]jsonDashboard{}
	for _, b := range dashboards.All() {
		data, err := dashboards.Render(b)
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

func TestPanels(t *testing.T) {
	t.Parallel()
	for file, d := range loadBoards(t) {
		t.Run(file, func(t *testing.T) {
			ids := map[int]bool{}
			for _, p := range d.Panels {
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
			if !slices.Contains(names, want) {
				t.Errorf("%s: no %s variable", file, want)
			}
		}
		// Every variable a query uses is defined.
		used := regexp.MustCompile(`\$([a-z]+)\b`)
		for _, p := range d.Panels {
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
		for _, p := range d.Panels {
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
