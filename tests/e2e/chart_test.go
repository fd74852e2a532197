package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// chartScrape is how the chart's ServiceMonitor has Prometheus scrape the
// exporter, read from the rendered chart so that the end-to-end Prometheus
// scrapes exactly as a user's does.
type chartScrape struct {
	job         string // the job label: the Service's jobLabel label
	honorLabels bool
	// relabelConfigs is the ServiceMonitor endpoint's relabelings in
	// Prometheus' relabel_configs form.
	relabelConfigs []map[string]any
	// scheme, basicAuth and tlsConfig are the endpoint's, as rendered
	// (Secret and ConfigMap key references).
	scheme    string
	basicAuth *operatorBasicAuth
	tlsConfig *operatorTLSConfig
}

// keyRef is prometheus-operator's reference to one key of a Secret or
// ConfigMap (a core/v1 SecretKeySelector or ConfigMapKeySelector).
type keyRef struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

// secretOrConfigMap is prometheus-operator's SecretOrConfigMap.
type secretOrConfigMap struct {
	Secret    *keyRef `yaml:"secret"`
	ConfigMap *keyRef `yaml:"configMap"`
}

// operatorBasicAuth is a monitor endpoint's basicAuth.
type operatorBasicAuth struct {
	Username keyRef `yaml:"username"`
	Password keyRef `yaml:"password"`
}

// operatorTLSConfig is the part of a monitor endpoint's tlsConfig the
// chart renders (SafeTLSConfig).
type operatorTLSConfig struct {
	CA                 *secretOrConfigMap `yaml:"ca"`
	Cert               *secretOrConfigMap `yaml:"cert"`
	KeySecret          *keyRef            `yaml:"keySecret"`
	ServerName         string             `yaml:"serverName"`
	InsecureSkipVerify bool               `yaml:"insecureSkipVerify"`
}

// operatorRelabelKeys maps prometheus-operator's RelabelConfig fields
// (monitoring.coreos.com/v1, camelCase) to Prometheus' relabel_config keys.
var operatorRelabelKeys = map[string]string{
	"sourceLabels": "source_labels",
	"separator":    "separator",
	"targetLabel":  "target_label",
	"regex":        "regex",
	"modulus":      "modulus",
	"replacement":  "replacement",
	"action":       "action",
}

// renderChartScrape renders the chart with its ServiceMonitor on and reads
// the scrape settings from it; valuesFile, when set, is passed as --values.
func renderChartScrape(t *testing.T, valuesFile ...string) chartScrape {
	t.Helper()
	helm := tool(t, "helm")
	chart := filepath.Join(repoRoot(), "deployment", "helm", "gpu-exporter")
	args := []string{"template", "gpu", chart, "--namespace", "gpu-exporter",
		"--api-versions", "monitoring.coreos.com/v1/ServiceMonitor", "--set", "serviceMonitor.enabled=true"}
	for _, f := range valuesFile {
		args = append(args, "--values", f)
	}
	cmd := exec.Command(helm, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", chart, err, stderr.String())
	}
	cs, err := parseChartScrape(out)
	if err != nil {
		t.Fatalf("helm template %s: %v", chart, err)
	}
	return cs
}

// parseChartScrape reads the ServiceMonitor and the Service it selects
// from rendered manifests.
func parseChartScrape(manifests []byte) (chartScrape, error) {
	type object struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec struct {
			JobLabel  string `yaml:"jobLabel"`
			Endpoints []struct {
				HonorLabels bool               `yaml:"honorLabels"`
				Relabelings []map[string]any   `yaml:"relabelings"`
				Scheme      string             `yaml:"scheme"`
				BasicAuth   *operatorBasicAuth `yaml:"basicAuth"`
				TLSConfig   *operatorTLSConfig `yaml:"tlsConfig"`
			} `yaml:"endpoints"`
		} `yaml:"spec"`
	}
	var monitors, services []object
	dec := yaml.NewDecoder(bytes.NewReader(manifests))
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return chartScrape{}, fmt.Errorf("decoding the rendered chart: %w", err)
		}
		switch o.Kind {
		case "ServiceMonitor":
			monitors = append(monitors, o)
		case "Service":
			services = append(services, o)
		}
	}
	if len(monitors) != 1 || len(services) != 1 {
		return chartScrape{}, fmt.Errorf("%d ServiceMonitors and %d Services, want one of each", len(monitors), len(services))
	}
	sm := monitors[0]
	if len(sm.Spec.Endpoints) != 1 {
		return chartScrape{}, fmt.Errorf("ServiceMonitor has %d endpoints, want 1", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	// prometheus-operator names the job after the Service's jobLabel label.
	cs := chartScrape{
		job: services[0].Metadata.Labels[sm.Spec.JobLabel], honorLabels: ep.HonorLabels,
		scheme: ep.Scheme, basicAuth: ep.BasicAuth, tlsConfig: ep.TLSConfig,
	}
	if cs.job == "" {
		return chartScrape{}, fmt.Errorf("ServiceMonitor jobLabel %q: the Service has no such label", sm.Spec.JobLabel)
	}
	for i, r := range ep.Relabelings {
		rc := map[string]any{}
		for k, v := range r {
			key, ok := operatorRelabelKeys[k]
			if !ok {
				return chartScrape{}, fmt.Errorf("ServiceMonitor relabelings[%d]: field %q has no Prometheus equivalent here", i, k)
			}
			if key == "action" {
				// The operator accepts either case; Prometheus lower case.
				v = strings.ToLower(fmt.Sprint(v))
			}
			rc[key] = v
		}
		cs.relabelConfigs = append(cs.relabelConfigs, rc)
	}
	return cs, nil
}

// relabelYAML is the relabel_configs list, indented to sit under a
// scrape config's relabel_configs key.
func (c chartScrape) relabelYAML() (string, error) {
	data, err := yaml.Marshal(c.relabelConfigs)
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, l := range lines {
		lines[i] = "      " + l
	}
	return strings.Join(lines, "\n") + "\n", nil
}

func TestParseChartScrape(t *testing.T) {
	t.Parallel()
	const service = `
kind: Service
metadata:
  labels: {app.kubernetes.io/name: gpu-exporter}
---
`
	cases := []struct {
		name, manifests string
		want            string // relabel_configs YAML, or the error
	}{
		{"chart's shape", service + `
kind: ServiceMonitor
spec:
  jobLabel: app.kubernetes.io/name
  endpoints:
    - honorLabels: true
      relabelings:
        - {action: Replace, sourceLabels: [__meta_kubernetes_pod_node_name], targetLabel: node}
        - {action: labeldrop, regex: (namespace|pod|container)}
`, `      - action: replace
        source_labels:
          - __meta_kubernetes_pod_node_name
        target_label: node
      - action: labeldrop
        regex: (namespace|pod|container)
`},
		{"no ServiceMonitor", service, "0 ServiceMonitors and 1 Services"},
		{"jobLabel the Service lacks", service + "kind: ServiceMonitor\nspec: {jobLabel: team, endpoints: [{}]}\n", `jobLabel "team"`},
		{"unknown relabel field", service + "kind: ServiceMonitor\nspec: {jobLabel: app.kubernetes.io/name, endpoints: [{relabelings: [{sourceLabel: x}]}]}\n", `field "sourceLabel"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cs, err := parseChartScrape([]byte(c.manifests))
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				if cs.job != "gpu-exporter" || !cs.honorLabels {
					t.Errorf("job %q, honorLabels %v", cs.job, cs.honorLabels)
				}
				if got, err = cs.relabelYAML(); err != nil {
					t.Fatal(err)
				}
			}
			if err != nil && !strings.Contains(got, c.want) || err == nil && got != c.want {
				t.Errorf("got\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}
