// Package autoscaling reads the autoscaling examples gpu-exporter ships in
// deployment/autoscaling (prometheus-adapter-rules.yaml, hpa.yaml,
// keda-scaledobject.yaml) and models prometheus-adapter's rule
// configuration, so that tests can check the files and run their queries
// the way the adapter and KEDA would, against a real Prometheus. Only tests
// import it.
package autoscaling

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/tests/testbin"
)

// File names of the shipped examples, relative to this directory.
const (
	AdapterRulesFile = "prometheus-adapter-rules.yaml"
	HPAFile          = "hpa.yaml"
	KEDAFile         = "keda-scaledobject.yaml"
)

// Dir is where the shipped files are, in the repository.
var Dir = filepath.Join(testbin.Root(), "deployment", "autoscaling")

// Raw returns the bytes of one of the shipped files.
func Raw(name string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(Dir, name)) //nolint:gosec // G304: one of the shipped file names above
	if err != nil {
		return nil, fmt.Errorf("autoscaling file %s: %w", name, err)
	}
	return data, nil
}

// AdapterConfig is the part of prometheus-adapter's configuration file
// that serves custom metrics.
type AdapterConfig struct {
	Rules []AdapterRule `yaml:"rules"`
}

// AdapterRule is one discovery rule: which series, which Kubernetes
// resources their labels name, the API name and the query.
type AdapterRule struct {
	SeriesQuery   string         `yaml:"seriesQuery"`
	SeriesFilters []SeriesFilter `yaml:"seriesFilters,omitempty"`
	Resources     Resources      `yaml:"resources"`
	Name          Naming         `yaml:"name"`
	MetricsQuery  string         `yaml:"metricsQuery"`
}

// SeriesFilter keeps (Is) or drops (IsNot) series by name.
type SeriesFilter struct {
	Is    string `yaml:"is,omitempty"`
	IsNot string `yaml:"isNot,omitempty"`
}

// Resources maps labels to Kubernetes group-resources.
type Resources struct {
	Template  string                   `yaml:"template,omitempty"`
	Overrides map[string]GroupResource `yaml:"overrides,omitempty"`
}

// GroupResource names a Kubernetes resource; Group is empty for the core group.
type GroupResource struct {
	Group    string `yaml:"group,omitempty"`
	Resource string `yaml:"resource"`
}

// Naming turns a series name into the custom metrics API name.
type Naming struct {
	Matches string `yaml:"matches"`
	As      string `yaml:"as"`
}

// ParseAdapterConfig decodes an adapter configuration; unknown keys are errors.
func ParseAdapterConfig(data []byte) (*AdapterConfig, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c AdapterConfig
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("prometheus-adapter config: %w", err)
	}
	return &c, nil
}

// LoadAdapterConfig parses the shipped prometheus-adapter-rules.yaml.
func LoadAdapterConfig() (*AdapterConfig, error) {
	data, err := Raw(AdapterRulesFile)
	if err != nil {
		return nil, err
	}
	c, err := ParseAdapterConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AdapterRulesFile, err)
	}
	return c, nil
}

// APIName is the custom metrics API name the rule gives a series name,
// and whether the rule's name pattern matches it at all. As the adapter
// does, an empty pattern matches everything and an empty `as` means the
// first capture group, or the whole name without one.
func (r AdapterRule) APIName(series string) (string, bool, error) {
	pattern := r.Name.Matches
	if pattern == "" {
		pattern = ".*"
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", false, fmt.Errorf("name.matches %q: %w", r.Name.Matches, err)
	}
	m := re.FindStringSubmatchIndex(series)
	if m == nil {
		return "", false, nil
	}
	as := r.Name.As
	if as == "" {
		switch re.NumSubexp() {
		case 0:
			as = "$0"
		case 1:
			as = "$1"
		default:
			return "", false, fmt.Errorf("name.matches %q has several groups and no `as`", r.Name.Matches)
		}
	}
	return string(re.ExpandString(nil, as, series, m)), true, nil
}

// QueryInput is what the adapter puts into a metricsQuery template for one
// request: the series name, the label matchers selecting the objects, and
// the labels to group by.
type QueryInput struct {
	Series        string
	LabelMatchers string
	GroupBy       string
}

// PodQuery is the input the adapter builds for pods of one namespace: one
// pod is matched with =, several with =~ and their names joined by |.
func PodQuery(series, namespace string, pods ...string) QueryInput {
	var podMatcher string
	if len(pods) == 1 {
		podMatcher = fmt.Sprintf("pod=%q", pods[0])
	} else {
		podMatcher = fmt.Sprintf("pod=~%q", strings.Join(pods, "|"))
	}
	return QueryInput{
		Series:        series,
		LabelMatchers: fmt.Sprintf("namespace=%q,%s", namespace, podMatcher),
		GroupBy:       "pod",
	}
}

// Query renders the rule's metricsQuery as the adapter does: a Go template
// with << and >> as delimiters.
func (r AdapterRule) Query(in QueryInput) (string, error) {
	tmpl, err := template.New("metricsQuery").Delims("<<", ">>").Option("missingkey=error").Parse(r.MetricsQuery)
	if err != nil {
		return "", fmt.Errorf("metricsQuery: %w", err)
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, in); err != nil {
		return "", fmt.Errorf("metricsQuery: %w", err)
	}
	return b.String(), nil
}

// seriesName reads the metric name of a series selector written as
// name{...} or {__name__="name",...}.
var seriesName = regexp.MustCompile(`^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{|__name__\s*=\s*"([^"]+)"`)

// SeriesName is the single metric name the rule's seriesQuery selects, or
// "" when it selects by pattern.
func (r AdapterRule) SeriesName() string {
	m := seriesName.FindStringSubmatch(r.SeriesQuery)
	if m == nil {
		return ""
	}
	if m[1] != "" {
		return m[1]
	}
	return m[2]
}

// ScaledObject is the part of KEDA's ScaledObject (keda.sh/v1alpha1) the
// example uses, with the field names of KEDA's reference. KEDA's Go types
// are not a dependency of this module; decoding with unknown keys as
// errors catches misspelt fields.
type ScaledObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Labels      map[string]string `yaml:"labels,omitempty"`
		Annotations map[string]string `yaml:"annotations,omitempty"`
	} `yaml:"metadata"`
	Spec ScaledObjectSpec `yaml:"spec"`
}

// ScaledObjectSpec is the spec of a ScaledObject.
type ScaledObjectSpec struct {
	ScaleTargetRef struct {
		APIVersion             string `yaml:"apiVersion,omitempty"`
		Kind                   string `yaml:"kind,omitempty"`
		Name                   string `yaml:"name"`
		EnvSourceContainerName string `yaml:"envSourceContainerName,omitempty"`
	} `yaml:"scaleTargetRef"`
	PollingInterval       *int32 `yaml:"pollingInterval,omitempty"`
	CooldownPeriod        *int32 `yaml:"cooldownPeriod,omitempty"`
	InitialCooldownPeriod *int32 `yaml:"initialCooldownPeriod,omitempty"`
	IdleReplicaCount      *int32 `yaml:"idleReplicaCount,omitempty"`
	MinReplicaCount       *int32 `yaml:"minReplicaCount,omitempty"`
	MaxReplicaCount       *int32 `yaml:"maxReplicaCount,omitempty"`
	Fallback              *struct {
		FailureThreshold int32 `yaml:"failureThreshold"`
		Replicas         int32 `yaml:"replicas"`
	} `yaml:"fallback,omitempty"`
	Advanced *struct {
		RestoreToOriginalReplicaCount bool `yaml:"restoreToOriginalReplicaCount,omitempty"`
		HorizontalPodAutoscalerConfig *struct {
			Name string `yaml:"name,omitempty"`
			// Behavior is an autoscaling/v2 HorizontalPodAutoscalerBehavior;
			// tests decode it with the Kubernetes type.
			Behavior yaml.Node `yaml:"behavior,omitempty"`
		} `yaml:"horizontalPodAutoscalerConfig,omitempty"`
	} `yaml:"advanced,omitempty"`
	Triggers []Trigger `yaml:"triggers"`
}

// Trigger is one KEDA scaler. Metadata values must be strings: KEDA's CRD
// holds them as map[string]string.
type Trigger struct {
	Type              string               `yaml:"type"`
	Name              string               `yaml:"name,omitempty"`
	MetricType        string               `yaml:"metricType,omitempty"`
	UseCachedMetrics  bool                 `yaml:"useCachedMetrics,omitempty"`
	Metadata          map[string]yaml.Node `yaml:"metadata"`
	AuthenticationRef *struct {
		Name string `yaml:"name"`
		Kind string `yaml:"kind,omitempty"`
	} `yaml:"authenticationRef,omitempty"`
}

// ParseScaledObject decodes a ScaledObject; unknown keys are errors.
func ParseScaledObject(data []byte) (*ScaledObject, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var so ScaledObject
	if err := dec.Decode(&so); err != nil {
		return nil, fmt.Errorf("ScaledObject: %w", err)
	}
	return &so, nil
}

// LoadScaledObject parses the shipped keda-scaledobject.yaml.
func LoadScaledObject() (*ScaledObject, error) {
	data, err := Raw(KEDAFile)
	if err != nil {
		return nil, err
	}
	so, err := ParseScaledObject(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KEDAFile, err)
	}
	return so, nil
}

// StringMetadata returns a trigger's metadata as strings, or an error
// naming the first value that is not a YAML string (an unquoted number or
// boolean, which KEDA's CRD refuses).
func (t Trigger) StringMetadata() (map[string]string, error) {
	out := make(map[string]string, len(t.Metadata))
	for k, n := range t.Metadata {
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return nil, fmt.Errorf("trigger %s: metadata.%s (line %d) is %s, want a string", t.Type, k, n.Line, n.Tag)
		}
		out[k] = n.Value
	}
	return out, nil
}
