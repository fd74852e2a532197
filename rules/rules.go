// Package rules holds gpu-exporter's Prometheus alerting and recording rules
// (alerts.yaml, recording.yaml, embedded here) and a model of the rule-file
// format, so that tests can check the rules' conventions and derive
// variants of them: without annotations for promtool unit tests that test
// behaviour rather than wording, or with shorter `for` durations for
// end-to-end runs.
package rules

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"maps"

	"go.yaml.in/yaml/v3"
)

// File names of the shipped rule files, relative to this directory.
const (
	AlertsFile    = "alerts.yaml"
	RecordingFile = "recording.yaml"
	// OpenCostFile holds the opt-in recording rules that write the
	// dcgm-exporter families OpenCost queries (prometheusRule.opencost);
	// a plain rule file, not rendered from a source.
	OpenCostFile = "opencost.yaml"
)

//go:embed alerts.yaml recording.yaml opencost.yaml
var files embed.FS

// File is a Prometheus rule file.
type File struct {
	Groups []Group `yaml:"groups"`
}

// Group is one rule group.
type Group struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []Rule `yaml:"rules"`
}

// Rule is an alerting rule (Alert set) or a recording rule (Record set).
type Rule struct {
	Record        string            `yaml:"record,omitempty"`
	Alert         string            `yaml:"alert,omitempty"`
	Expr          string            `yaml:"expr"`
	For           string            `yaml:"for,omitempty"`
	KeepFiringFor string            `yaml:"keep_firing_for,omitempty"`
	Labels        map[string]string `yaml:"labels,omitempty"`
	Annotations   map[string]string `yaml:"annotations,omitempty"`
}

// Parse decodes a rule file; unknown keys are errors.
func Parse(data []byte) (*File, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("rule file: %w", err)
	}
	return &f, nil
}

// Load parses one of the shipped rule files (AlertsFile, RecordingFile or
// OpenCostFile).
func Load(name string) (*File, error) {
	data, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("rule file %s: %w", name, err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("rule file %s: %w", name, err)
	}
	return f, nil
}

// Raw returns the bytes of one of the shipped rule files.
func Raw(name string) ([]byte, error) {
	data, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("rule file %s: %w", name, err)
	}
	return data, nil
}

// Marshal encodes the file in the rule-file format.
func (f *File) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("rule file: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("rule file: %w", err)
	}
	return b.Bytes(), nil
}

// Rules returns every rule of every group, in file order.
func (f *File) Rules() []Rule {
	var out []Rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// Map returns a deep copy of f with fn applied to every rule.
func (f *File) Map(fn func(Rule) Rule) *File {
	out := &File{Groups: make([]Group, len(f.Groups))}
	for i, g := range f.Groups {
		ng := Group{Name: g.Name, Interval: g.Interval, Rules: make([]Rule, len(g.Rules))}
		for j, r := range g.Rules {
			ng.Rules[j] = fn(r.clone())
		}
		out.Groups[i] = ng
	}
	return out
}

func (r Rule) clone() Rule {
	r.Labels = maps.Clone(r.Labels)
	r.Annotations = maps.Clone(r.Annotations)
	return r
}
