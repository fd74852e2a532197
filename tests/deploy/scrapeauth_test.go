package deploy

import (
	"reflect"
	"strings"
	"testing"
)

// basicAuthWebConfig is a web config with TLS and basic auth, as the
// exporter serves it with webConfig on.
var basicAuthWebConfig = map[string]any{
	"enabled": true, "tls": true, "basicAuth": true,
	"config": map[string]any{
		"tls_server_config": map[string]any{"cert_file": "/etc/gpu-exporter/web/tls.crt", "key_file": "/etc/gpu-exporter/web/tls.key"},
		"basic_auth_users":  map[string]any{"prometheus": "$2y$10$x"},
	},
}

// scrapeCredentials are the monitors' references to a Secret's keys.
var scrapeCredentials = map[string]any{
	"username": map[string]any{"name": "gpu-exporter-scrape", "key": "username"},
	"password": map[string]any{"name": "gpu-exporter-scrape", "key": "password"},
}

// TestHelmScrapeAuth: with the exporter behind TLS and basic auth, both
// monitors send the credentials by Secret reference and verify the
// certificate with the CA bundle they are given (Secret or ConfigMap),
// never skipping verification unless told to.
func TestHelmScrapeAuth(t *testing.T) {
	t.Parallel()
	tool(t, "kubevalidate")
	cases := []struct {
		name string
		tls  map[string]any
		want string // the endpoint's tlsConfig
	}{
		{"CA from a Secret", map[string]any{
			"ca":         map[string]any{"secret": map[string]any{"name": "gpu-exporter-ca", "key": "ca.crt"}},
			"serverName": "gpu-exporter.gpu-exporter.svc",
		}, "{ca: {secret: {name: gpu-exporter-ca, key: ca.crt}}, serverName: gpu-exporter.gpu-exporter.svc}"},
		{"CA from a ConfigMap, client certificate", map[string]any{
			"ca":        map[string]any{"configMap": map[string]any{"name": "cluster-ca", "key": "ca-bundle.crt"}},
			"cert":      map[string]any{"secret": map[string]any{"name": "scrape-client", "key": "tls.crt"}},
			"keySecret": map[string]any{"name": "scrape-client", "key": "tls.key"},
		}, "{ca: {configMap: {name: cluster-ca, key: ca-bundle.crt}}, cert: {secret: {name: scrape-client, key: tls.crt}}, keySecret: {name: scrape-client, key: tls.key}}"},
		{"verification skipped on request", map[string]any{"insecureSkipVerify": true}, "{insecureSkipVerify: true}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			values := map[string]any{
				"serviceMonitor": map[string]any{"enabled": true},
				"podMonitor":     map[string]any{"enabled": true},
				"webConfig":      basicAuthWebConfig,
				"monitoring":     map[string]any{"basicAuth": scrapeCredentials, "tlsConfig": tc.tls},
			}
			out, objs := render(t, chartDir, values)
			kubevalidate(t, out)
			for kind, key := range map[string]string{"ServiceMonitor": "endpoints", "PodMonitor": "podMetricsEndpoints"} {
				ep := get(only(t, objs, kind), "spec", key, 0)
				if get(ep, "scheme") != "https" {
					t.Errorf("%s scheme = %v, want https", kind, get(ep, "scheme"))
				}
				if got, exp := get(ep, "tlsConfig"), mustYAML(t, tc.want); !reflect.DeepEqual(got, exp) {
					t.Errorf("%s tlsConfig = %v, want %v", kind, got, exp)
				}
				if got := get(ep, "basicAuth"); !reflect.DeepEqual(got, scrapeCredentials) {
					t.Errorf("%s basicAuth = %v, want %v", kind, got, scrapeCredentials)
				}
			}
		})
	}
}

// TestHelmScrapeAuthRefusals: monitors that could not scrape, or would
// skip verification unasked, are refused at render time with the fix.
func TestHelmScrapeAuthRefusals(t *testing.T) {
	t.Parallel()
	ca := map[string]any{"ca": map[string]any{"secret": map[string]any{"name": "gpu-exporter-ca", "key": "ca.crt"}}}
	cases := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"basic auth without credentials", map[string]any{
			"serviceMonitor": map[string]any{"enabled": true},
			"webConfig":      basicAuthWebConfig,
			"monitoring":     map[string]any{"tlsConfig": ca},
		}, "every scrape would get 401; set monitoring.basicAuth"},
		{"HTTPS without a CA", map[string]any{
			"podMonitor": map[string]any{"enabled": true},
			"webConfig":  basicAuthWebConfig,
			"monitoring": map[string]any{"basicAuth": scrapeCredentials},
		}, "the PodMonitor scrapes over HTTPS (webConfig.tls or rbacProxy) and has no way to verify the certificate"},
		{"kube-rbac-proxy without a CA", map[string]any{
			"serviceMonitor": map[string]any{"enabled": true},
			"rbacProxy":      map[string]any{"enabled": true},
		}, "monitoring.tlsConfig.insecureSkipVerify=true"},
		{"a CA never checked", map[string]any{
			"serviceMonitor": map[string]any{"enabled": true},
			"rbacProxy":      map[string]any{"enabled": true},
			"monitoring":     map[string]any{"tlsConfig": map[string]any{"ca": ca["ca"], "insecureSkipVerify": true}},
		}, "ca and insecureSkipVerify exclude each other"},
		{"basic auth to kube-rbac-proxy", map[string]any{
			"serviceMonitor": map[string]any{"enabled": true},
			"rbacProxy":      map[string]any{"enabled": true},
			"monitoring":     map[string]any{"basicAuth": scrapeCredentials, "tlsConfig": map[string]any{"insecureSkipVerify": true}},
		}, "kube-rbac-proxy authenticates scrapes by service-account token"},
		{"two Authorization headers", map[string]any{
			"podMonitor": map[string]any{"enabled": true, "authorization": podMonitorAuth},
			"monitoring": map[string]any{"basicAuth": scrapeCredentials},
		}, "podMonitor.authorization and monitoring.basicAuth exclude each other"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := helmTemplate(t, chartDir, tc.values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want a refusal saying %q, got %v", tc.want, err)
			}
		})
	}
}

// TestHelmSchemaRejectsInlineCredentials: credentials are Secret key
// references, never values in the chart's values (they would land in the
// release's history in clear).
func TestHelmSchemaRejectsInlineCredentials(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		monitoring map[string]any
		want       string
	}{
		{"password as a string", map[string]any{"basicAuth": map[string]any{"username": scrapeCredentials["username"], "password": "hunter2"}}, "/monitoring/basicAuth/password"},
		{"username without password", map[string]any{"basicAuth": map[string]any{"username": scrapeCredentials["username"]}}, "/monitoring/basicAuth"},
		{"reference without a key", map[string]any{"basicAuth": map[string]any{"username": map[string]any{"name": "s"}, "password": scrapeCredentials["password"]}}, "/monitoring/basicAuth/username"},
		{"CA from a Secret and a ConfigMap", map[string]any{"tlsConfig": map[string]any{"ca": map[string]any{
			"secret": map[string]any{"name": "a", "key": "ca.crt"}, "configMap": map[string]any{"name": "b", "key": "ca.crt"},
		}}}, "/monitoring/tlsConfig/ca"},
		{"CA inline", map[string]any{"tlsConfig": map[string]any{"ca": "-----BEGIN CERTIFICATE-----"}}, "/monitoring/tlsConfig/ca"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := helmTemplate(t, chartDir, map[string]any{"monitoring": tc.monitoring})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("want a schema error naming %q, got %v", tc.want, err)
			}
		})
	}
}
