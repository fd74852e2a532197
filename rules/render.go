package rules

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SourceFile is the source of the alerting rules: AlertsFile with
// ${name} placeholders for thresholds and the scrape job. The Helm chart
// renders it at install time from its prometheusRule values
// (templates/prometheusrule.yaml); Generate renders it with the chart's
// default values into AlertsFile for users without Helm. The two follow
// the same steps, in the same order, and a test in tests/deploy checks that
// they agree for the defaults and for a tuned set of values.
const SourceFile = "alerts.src.yaml"

// RecordingSourceFile is the source of the recording rules, rendered the
// same way into RecordingFile.
const RecordingSourceFile = "recording.src.yaml"

// Sources maps each rule source to the file `make rules` renders it into.
var Sources = []struct{ Source, Out string }{
	{SourceFile, AlertsFile},
	{RecordingSourceFile, RecordingFile},
}

// DefaultNamespaceLabel is the label the exporter writes the namespace of
// a GPU's holder into.
const DefaultNamespaceLabel = "namespace"

// namespaceLabelKey is the placeholder of the holder's namespace label.
const namespaceLabelKey = "namespaceLabel"

// DefaultJobSelector selects the exporter's scrape job when
// prometheusRule.jobSelector is empty: the chart's ServiceMonitor and
// PodMonitor take the job name from the app.kubernetes.io/name label,
// which is the chart name.
const DefaultJobSelector = `job="gpu-exporter"`

// jobSelectorKey is the placeholder of the job matcher.
const jobSelectorKey = "jobSelector"

// Params are the tunable parts of the alerting rules, spelt like the
// chart's prometheusRule values (kube-prometheus-stack's conventions:
// disabled.<Alert>, per-alert overrides, additional rule labels and
// annotations).
type Params struct {
	// Thresholds fill the ${name} placeholders of the source.
	Thresholds map[string]any `yaml:"thresholds"`
	// JobSelector is a PromQL label matcher selecting the exporter's scrape
	// job; empty means DefaultJobSelector.
	JobSelector string `yaml:"jobSelector"`
	// Disabled alerts are left out.
	Disabled map[string]bool `yaml:"disabled"`
	// Overrides change an alert's severity label and `for` duration.
	Overrides map[string]Override `yaml:"overrides"`
	// AdditionalRuleLabels and AdditionalRuleAnnotations are added to every
	// alert; an alert's own labels and annotations win.
	AdditionalRuleLabels      map[string]string `yaml:"additionalRuleLabels"`
	AdditionalRuleAnnotations map[string]string `yaml:"additionalRuleAnnotations"`
	// NamespaceLabel names the namespace of a GPU's holder on GPU series:
	// the chart's monitoring.namespaceLabel (exported_namespace where
	// prometheus-operator enforces `namespace`); empty means
	// DefaultNamespaceLabel. It fills ${namespaceLabel}.
	NamespaceLabel string `yaml:"-"`
}

// Override changes one alert.
type Override struct {
	Severity string `yaml:"severity"`
	For      string `yaml:"for"`
}

// ParamsFromValues reads Params from Helm values documents: their
// prometheusRule sections, later documents overlaid on earlier ones as
// Helm merges a user's values onto the chart's (maps merge key by key,
// anything else is replaced).
func ParamsFromValues(docs ...[]byte) (Params, error) {
	merged := map[string]any{}
	for i, d := range docs {
		var m map[string]any
		if err := yaml.Unmarshal(d, &m); err != nil {
			return Params{}, fmt.Errorf("values document %d: %w", i+1, err)
		}
		mergeValues(merged, m)
	}
	data, err := yaml.Marshal(merged)
	if err != nil {
		return Params{}, fmt.Errorf("values: %w", err)
	}
	var doc struct {
		PrometheusRule Params `yaml:"prometheusRule"`
		Monitoring     struct {
			NamespaceLabel string `yaml:"namespaceLabel"`
		} `yaml:"monitoring"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Params{}, fmt.Errorf("values: prometheusRule: %w", err)
	}
	p := doc.PrometheusRule
	p.NamespaceLabel = doc.Monitoring.NamespaceLabel
	return p, nil
}

// mergeValues overlays src onto dst the way Helm coalesces values.
func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		sm, sok := v.(map[string]any)
		dm, dok := dst[k].(map[string]any)
		if sok && dok {
			mergeValues(dm, sm)
			continue
		}
		dst[k] = v
	}
}

// placeholder is the syntax of a placeholder in the source.
var placeholder = regexp.MustCompile(`\$\{([A-Za-z][A-Za-z0-9]*)\}`)

// Render renders SourceFile, the alerting rules; see RenderFile.
func Render(src []byte, p Params) (*File, error) {
	return RenderFile(SourceFile, src, p)
}

// RenderFile fills the placeholders of the source called name from p,
// then drops disabled alerts and applies the overrides and additional
// labels and annotations.
func RenderFile(name string, src []byte, p Params) (*File, error) {
	var errs []string
	xid := XIDPlaceholders()
	filled := placeholder.ReplaceAllFunc(src, func(m []byte) []byte {
		key := string(placeholder.FindSubmatch(m)[1])
		switch key {
		case jobSelectorKey:
			if p.JobSelector == "" {
				return []byte(DefaultJobSelector)
			}
			return []byte(p.JobSelector)
		case namespaceLabelKey:
			if p.NamespaceLabel == "" {
				return []byte(DefaultNamespaceLabel)
			}
			return []byte(p.NamespaceLabel)
		case gpuLabelsKey:
			return []byte(gpuLabelsText())
		}
		if v, ok := xid[key]; ok {
			return []byte(v)
		}
		v, ok := p.Thresholds[key]
		if !ok {
			line := 1 + bytes.Count(src[:bytes.Index(src, m)], []byte("\n"))
			errs = append(errs, fmt.Sprintf("%s:%d: no threshold %q (prometheusRule.thresholds.%s)", name, line, key, key))
			return m
		}
		// fmt's %v, as Helm's toString: 85 -> "85", 0.05 -> "0.05".
		return []byte(fmt.Sprint(v))
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("rule source: %s", strings.Join(errs, "; "))
	}
	f, err := Parse(filled)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out := &File{Groups: make([]Group, 0, len(f.Groups))}
	for _, g := range f.Groups {
		ng := Group{Name: g.Name, Interval: g.Interval, Rules: []Rule{}}
		for _, r := range g.Rules {
			if r.Alert != "" {
				if p.Disabled[r.Alert] {
					continue
				}
				r = r.clone()
				apply(&r, p)
			}
			ng.Rules = append(ng.Rules, r)
		}
		out.Groups = append(out.Groups, ng)
	}
	return out, nil
}

func apply(r *Rule, p Params) {
	if o, ok := p.Overrides[r.Alert]; ok {
		if o.Severity != "" {
			if r.Labels == nil {
				r.Labels = map[string]string{}
			}
			r.Labels["severity"] = o.Severity
		}
		if o.For != "" {
			r.For = o.For
		}
	}
	for k, v := range p.AdditionalRuleLabels {
		if _, ok := r.Labels[k]; !ok {
			if r.Labels == nil {
				r.Labels = map[string]string{}
			}
			r.Labels[k] = v
		}
	}
	for k, v := range p.AdditionalRuleAnnotations {
		if _, ok := r.Annotations[k]; !ok {
			if r.Annotations == nil {
				r.Annotations = map[string]string{}
			}
			r.Annotations[k] = v
		}
	}
}

// generatedHeader opens a rendered rule file.
func generatedHeader(source string) string {
	return `# Code generated by ` + "`make rules`" + ` from rules/` + source + ` with the
# Helm chart's default prometheusRule values; DO NOT EDIT. Edit the source
# and run ` + "`make rules`" + `. Helm users tune these rules through the chart's
# prometheusRule values; docs/runbooks.md explains each rule.
`
}

// Generate renders SourceFile into the bytes of AlertsFile; see
// GenerateFile.
func Generate(src, values []byte) ([]byte, error) {
	return GenerateFile(SourceFile, src, values)
}

// GenerateFile renders the source called name with the defaults of a Helm
// values document into the bytes of the file it is rendered into
// (Sources).
func GenerateFile(name string, src, values []byte) ([]byte, error) {
	p, err := ParamsFromValues(values)
	if err != nil {
		return nil, err
	}
	f, err := RenderFile(name, src, p)
	if err != nil {
		return nil, err
	}
	body, err := f.Marshal()
	if err != nil {
		return nil, err
	}
	return append([]byte(generatedHeader(name)), body...), nil
}
