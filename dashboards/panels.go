package dashboards

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// tag marks every dashboard of the project; the dashboards link to each
// other through it.
const tag = "gpu-exporter"

// gridWidth is Grafana's dashboard width in grid columns.
const gridWidth = 24

// Legends: a GPU's series name its node and index; MIG instances add the
// instance and profile.
const (
	legendGPU         = "{{node}} GPU {{gpu}}"
	legendMIGInstance = "{{node}} GPU {{gpu}} GI {{gpu_instance}} ({{mig_profile}})"
	legendNode        = "{{node}}"
)

// Units (Grafana unit ids) used here.
const (
	unitCount     = "short"
	unitRatio     = "percentunit"
	unitBytes     = "bytes"
	unitBytesRate = "Bps"
	unitWatts     = "watt"
	unitCelsius   = "celsius"
	unitHertz     = "hertz"
	unitPerSecond = "cps"
	unitState     = "bool_on_off"
	unitCode      = "none"
	unitGPUHours  = "suffix: GPU-h"
	unitGPUs      = "suffix: GPUs"
)

func datasourceRef() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
}

// query is one PromQL target of a panel.
type query struct {
	expr   string
	legend string
}

// panel describes one panel; zero fields take the defaults.
type panel struct {
	title       string
	description string
	unit        string
	w, h        uint32
	queries     []query
	min, max    *float64
	decimals    *float64
	// steps draws values as steps (states, codes, counts).
	steps bool
	// thresholds colour the values (stat, table) or draw dashed lines
	// (time series). A stat without thresholds is not coloured: Grafana's
	// default thresholds (red from 80) would colour a count of GPUs red.
	thresholds thresholds
}

// step is one threshold: from value on, values take color.
type step struct {
	value float64
	color string
}

// thresholds are the steps of a panel or column; the first is the base
// colour (its value is ignored), the others start at their value.
type thresholds []step

func (t thresholds) config() cog.Builder[dashboard.ThresholdsConfig] {
	steps := make([]dashboard.Threshold, 0, len(t))
	for i, s := range t {
		th := dashboard.Threshold{Color: s.color}
		if i > 0 {
			th.Value = cog.ToPtr(s.value)
		}
		steps = append(steps, th)
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(steps)
}

// value returns the thresholds as a field-config override value.
func (t thresholds) value() map[string]any {
	steps := make([]map[string]any, 0, len(t))
	for i, s := range t {
		m := map[string]any{"color": s.color, "value": nil}
		if i > 0 {
			m["value"] = s.value
		}
		steps = append(steps, m)
	}
	return map[string]any{"mode": "absolute", "steps": steps}
}

func thresholdColors() cog.Builder[dashboard.FieldColor] {
	return dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdThresholds)
}

// column is one column of a table panel.
type column struct {
	// field is the name of the field in the query result: a label, or
	// "Value" ("Value #A", "Value #B", ... when the table merges queries).
	field string
	// title is the column header (default: field).
	title string
	// unit overrides the panel's unit for this column.
	unit string
	// thresholds colour the column's cells.
	thresholds thresholds
	// link, when set, makes the column's cells links into another
	// dashboard (a URL from detailLink).
	link *link
}

// link is a data link from a table cell into a detail dashboard.
type link struct {
	title string
	url   string
}

// board assembles one dashboard: it numbers the panels and lays them out
// left to right in lines of 24 columns, under rows. A collapsed row holds
// its panels, which Grafana queries only when the row is opened.
type board struct {
	b      *dashboard.DashboardBuilder
	opts   Options
	nextID uint32
	x, y   uint32
	rowH   uint32
	top    []cog.Builder[dashboard.Panel]
	rows   []*boardRow
}

type boardRow struct {
	title     string
	id        uint32
	y         uint32
	collapsed bool
	panels    []cog.Builder[dashboard.Panel]
}

func newBoard(o Options, uid, title, description string, vars []cog.Builder[dashboard.VariableModel]) *board {
	b := dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{tag, "gpu"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("1m").
		Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		Variables(vars).
		Link(dashboard.NewDashboardLinkBuilder("GPU dashboards").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{tag}).
			AsDropdown(true).
			IncludeVars(true).
			KeepTime(true))
	return &board{b: b, opts: o, nextID: 1}
}

func (bd *board) id() uint32 {
	id := bd.nextID
	bd.nextID++
	return id
}

// place returns the position of the next panel of w x h, starting a new
// line when it does not fit on the current one.
func (bd *board) place(w, h uint32) dashboard.GridPos {
	if bd.x+w > gridWidth {
		bd.x = 0
		bd.y += bd.rowH
		bd.rowH = 0
	}
	pos := dashboard.GridPos{X: bd.x, Y: bd.y, W: w, H: h}
	bd.x += w
	bd.rowH = max(bd.rowH, h)
	return pos
}

// row starts a new row of panels under a full-width header.
func (bd *board) row(title string) { bd.startRow(title, false) }

// collapsedRow starts a row that is closed when the dashboard opens.
func (bd *board) collapsedRow(title string) { bd.startRow(title, true) }

func (bd *board) startRow(title string, collapsed bool) {
	if n := len(bd.rows); n > 0 && bd.rows[n-1].collapsed {
		// A closed row is one grid line high; its panels take their
		// place below it when it is opened.
		bd.y = bd.rows[n-1].y + 1
	} else {
		bd.y += bd.rowH
	}
	bd.rows = append(bd.rows, &boardRow{title: title, id: bd.id(), y: bd.y, collapsed: collapsed})
	bd.x, bd.y, bd.rowH = 0, bd.y+1, 0
}

// add puts a panel into the current row.
func (bd *board) add(p cog.Builder[dashboard.Panel]) {
	if n := len(bd.rows); n > 0 {
		bd.rows[n-1].panels = append(bd.rows[n-1].panels, p)
		return
	}
	bd.top = append(bd.top, p)
}

func (bd *board) build() (dashboard.Dashboard, error) {
	for _, p := range bd.top {
		bd.b.WithPanel(p)
	}
	for _, r := range bd.rows {
		rb := dashboard.NewRowBuilder(r.title).Id(r.id).
			GridPos(dashboard.GridPos{X: 0, Y: r.y, W: gridWidth, H: 1}).
			Collapsed(r.collapsed)
		if r.collapsed {
			for _, p := range r.panels {
				rb.WithPanel(p)
			}
		}
		bd.b.WithRow(rb)
		if !r.collapsed {
			for _, p := range r.panels {
				bd.b.WithPanel(p)
			}
		}
	}
	d, err := bd.b.Build()
	if err != nil {
		return dashboard.Dashboard{}, fmt.Errorf("building dashboard: %w", err)
	}
	return d, nil
}

func (p panel) size(w, h uint32) (uint32, uint32) {
	if p.w != 0 {
		w = p.w
	}
	if p.h != 0 {
		h = p.h
	}
	return w, h
}

// targets turns queries into Prometheus targets with refIds A, B, ...
func targets(qs []query, instant, asTable bool) []cog.Builder[variants.Dataquery] {
	out := make([]cog.Builder[variants.Dataquery], 0, len(qs))
	for i, q := range qs {
		t := prometheus.NewDataqueryBuilder().
			Datasource(datasourceRef()).
			RefId(string(rune('A' + i))).
			Expr(q.expr)
		if q.legend != "" {
			t.LegendFormat(q.legend)
		}
		if instant {
			t.Instant()
		} else {
			t.Range()
		}
		if asTable {
			t.Format(prometheus.PromQueryFormatTable)
		}
		out = append(out, t)
	}
	return out
}

// timeseries adds a time-series panel.
func (bd *board) timeseries(p panel) {
	w, h := p.size(8, 8)
	b := timeseries.NewPanelBuilder().
		Id(bd.id()).
		Title(p.title).
		Description(p.description).
		Datasource(datasourceRef()).
		GridPos(bd.place(w, h)).
		Targets(targets(p.queries, false, false)).
		Unit(p.unit).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		SpanNulls(common.BoolOrFloat64{Bool: cog.ToPtr(false)}).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true).
			Calcs([]string{})).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
	if p.steps {
		b.LineInterpolation(common.LineInterpolationStepAfter)
	} else {
		b.LineInterpolation(common.LineInterpolationLinear)
	}
	if p.min != nil {
		b.Min(*p.min)
	}
	if p.max != nil {
		b.Max(*p.max)
	}
	if p.decimals != nil {
		b.Decimals(*p.decimals)
	}
	if p.thresholds != nil {
		b.Thresholds(p.thresholds.config()).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
	}
	bd.add(b)
}

// stat adds a single-value panel showing the last value of instant queries.
func (bd *board) stat(p panel) {
	w, h := p.size(4, 4)
	b := stat.NewPanelBuilder().
		Id(bd.id()).
		Title(p.title).
		Description(p.description).
		Datasource(datasourceRef()).
		GridPos(bd.place(w, h)).
		Targets(targets(p.queries, true, false)).
		Unit(p.unit).
		GraphMode(common.BigValueGraphModeNone).
		ColorMode(common.BigValueColorModeNone).
		Orientation(common.VizOrientationAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().
			Values(false).
			Calcs([]string{"lastNotNull"}))
	if p.decimals != nil {
		b.Decimals(*p.decimals)
	}
	if p.min != nil {
		b.Min(*p.min)
	}
	if p.max != nil {
		b.Max(*p.max)
	}
	if p.thresholds != nil {
		b.ColorMode(common.BigValueColorModeValue).
			ColorScheme(thresholdColors()).
			Thresholds(p.thresholds.config())
	}
	bd.add(b)
}

// heatmap adds a heatmap of the distribution of many series' values over
// time; Grafana computes the buckets (yBucket wide).
func (bd *board) heatmap(p panel, yBucket string) {
	w, h := p.size(12, 8)
	b := heatmap.NewPanelBuilder().
		Id(bd.id()).
		Title(p.title).
		Description(p.description).
		Datasource(datasourceRef()).
		GridPos(bd.place(w, h)).
		Targets(targets(p.queries, false, false)).
		Unit(p.unit).
		Calculate(true).
		Calculation(common.NewHeatmapCalculationOptionsBuilder().
			YBuckets(common.NewHeatmapCalculationBucketConfigBuilder().
				Mode(common.HeatmapCalculationModeSize).
				Value(yBucket))).
		Color(heatmap.NewHeatmapColorOptionsBuilder().
			Mode(heatmap.HeatmapColorModeScheme).
			Scheme("Oranges").
			Scale(heatmap.HeatmapColorScaleExponential).
			Exponent(0.5).
			Steps(64)).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit(p.unit)).
		Tooltip(heatmap.NewHeatmapTooltipBuilder().
			Mode(common.TooltipDisplayModeSingle).
			YHistogram(true)).
		ShowLegend()
	bd.add(b)
}

// table adds a table of instant queries, one row per series; several
// queries are merged on their common labels. Only the given columns show,
// in order.
func (bd *board) table(p panel, cols []column, sortBy string) {
	w, h := p.size(12, 8)
	b := table.NewPanelBuilder().
		Id(bd.id()).
		Title(p.title).
		Description(p.description).
		Datasource(datasourceRef()).
		GridPos(bd.place(w, h)).
		Targets(targets(p.queries, true, true)).
		Unit(p.unit).
		CellHeight(common.TableCellHeightSm).
		Filterable(true)
	if p.decimals != nil {
		b.Decimals(*p.decimals)
	}
	if p.thresholds != nil {
		b.ColorScheme(thresholdColors()).Thresholds(p.thresholds.config())
	}
	if len(p.queries) > 1 {
		b.WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}})
	}
	names := make([]string, 0, len(cols))
	index := map[string]any{}
	rename := map[string]any{}
	for i, c := range cols {
		names = append(names, c.field)
		index[c.field] = i
		title := c.field
		if c.title != "" && c.title != c.field {
			title = c.title
			rename[c.field] = c.title
		}
		var props []dashboard.DynamicConfigValue
		if c.unit != "" {
			props = append(props, dashboard.DynamicConfigValue{Id: "unit", Value: c.unit})
		}
		if c.thresholds != nil {
			props = append(props,
				dashboard.DynamicConfigValue{Id: "thresholds", Value: c.thresholds.value()},
				dashboard.DynamicConfigValue{Id: "color", Value: map[string]any{"mode": "thresholds"}},
				dashboard.DynamicConfigValue{Id: "custom.cellOptions", Value: map[string]any{"type": "color-text"}})
		}
		if c.link != nil {
			props = append(props, dashboard.DynamicConfigValue{Id: "links", Value: []map[string]any{{"title": c.link.title, "url": c.link.url}}})
		}
		if len(props) > 0 {
			b.OverrideByName(title, props)
		}
	}
	b.WithTransformation(dashboard.DataTransformerConfig{
		Id:      "filterFieldsByName",
		Options: map[string]any{"include": map[string]any{"names": names}},
	})
	b.WithTransformation(dashboard.DataTransformerConfig{
		Id: "organize",
		Options: map[string]any{
			"excludeByName": map[string]any{},
			"indexByName":   index,
			"renameByName":  rename,
		},
	})
	if sortBy != "" {
		b.SortBy([]cog.Builder[common.TableSortByFieldState]{
			common.NewTableSortByFieldStateBuilder().DisplayName(sortBy).Desc(true),
		})
	}
	bd.add(b)
}

func ptr(f float64) *float64 { return &f }
