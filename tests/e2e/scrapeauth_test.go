package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
)

// exporterServerName is the only name the test certificate holds: the
// scrape verifies it through the monitor's serverName, not the address.
const exporterServerName = "gpu-exporter.gpu-exporter.svc"

// cluster stands for the Secrets and ConfigMaps of the release's
// namespace that a monitor references: name -> key -> content.
type cluster map[string]map[string]string

// file writes a referenced key to dir, as prometheus-operator mounts it
// into Prometheus, and returns the path; an unknown reference fails.
func (c cluster) file(t *testing.T, dir string, ref keyRef) string {
	t.Helper()
	data, ok := c[ref.Name][ref.Key]
	if !ok {
		t.Fatalf("the monitor references %s/%s, which the cluster lacks", ref.Name, ref.Key)
	}
	path := filepath.Join(dir, ref.Name+"-"+ref.Key)
	writeFile(t, path, []byte(data))
	return path
}

// scrapeConfig is the Prometheus scrape config prometheus-operator
// generates from the chart's ServiceMonitor endpoint: the same job,
// honor_labels, relabelling, scheme, basic auth and TLS settings, the
// referenced keys written to files.
func (c chartScrape) scrapeConfig(t *testing.T, objs cluster, dir, target string) map[string]any {
	t.Helper()
	sc := map[string]any{
		"job_name":        c.job,
		"honor_labels":    c.honorLabels,
		"scheme":          c.scheme,
		"static_configs":  []any{map[string]any{"targets": []string{target}, "labels": map[string]string{"__meta_kubernetes_pod_node_name": "gpu-node-demo"}}},
		"relabel_configs": c.relabelConfigs,
	}
	if ba := c.basicAuth; ba != nil {
		sc["basic_auth"] = map[string]any{
			"username_file": objs.file(t, dir, ba.Username),
			"password_file": objs.file(t, dir, ba.Password),
		}
	}
	if tc := c.tlsConfig; tc != nil {
		tls := map[string]any{"server_name": tc.ServerName, "insecure_skip_verify": tc.InsecureSkipVerify}
		if tc.CA != nil {
			ref := tc.CA.Secret
			if ref == nil {
				ref = tc.CA.ConfigMap
			}
			tls["ca_file"] = objs.file(t, dir, *ref)
		}
		sc["tls_config"] = tls
	}
	return sc
}

// testCA is a CA and a server certificate it signed for exporterServerName.
type testCA struct{ caPEM, certPEM, keyPEM string }

func newTestCA(t *testing.T) testCA {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, srvKey := key(), key()
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpu-exporter test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: exporterServerName},
		DNSNames: []string{exporterServerName}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(typ string, der []byte) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	return testCA{enc("CERTIFICATE", caDER), enc("CERTIFICATE", srvDER), enc("EC PRIVATE KEY", keyDER)}
}

// TestScrapeThroughChartMonitorAuth: the exporter serves with TLS and
// basic auth (--web.config.file, as the chart's webConfig mounts it), and
// a real Prometheus configured from the chart's rendered ServiceMonitor,
// credentials and CA taken from the Secrets it references, scrapes it.
// A second job without the credentials is refused, so the first job's
// success is the monitor's doing.
func TestScrapeThroughChartMonitorAuth(t *testing.T) {
	exporter := requireExporter(t)
	promBin := tool(t, "prometheus")
	dir := t.TempDir()
	s := &stack{started: time.Now()}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range s.procs {
				t.Logf("===== %s output =====\n%s", p.name, p.out.String())
			}
		}
	})

	ca := newTestCA(t)
	const user, password = "prometheus", "scrape-s3cret"
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	// The Secret the chart's webConfig mounts at /etc/gpu-exporter/web.
	webDir, secretsDir := filepath.Join(dir, "web"), filepath.Join(dir, "secrets")
	for _, d := range []string{webDir, secretsDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(webDir, "tls.crt"), []byte(ca.certPEM))
	writeFile(t, filepath.Join(webDir, "tls.key"), []byte(ca.keyPEM))
	webConfig := map[string]any{
		"tls_server_config": map[string]any{"cert_file": filepath.Join(webDir, "tls.crt"), "key_file": filepath.Join(webDir, "tls.key")},
		"basic_auth_users":  map[string]any{user: string(hash)},
	}
	webData, err := yaml.Marshal(webConfig)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(webDir, "web-config.yml"), webData)

	addr, health := freeAddr(t), freeAddr(t)
	p := startProcess(t, s, "exporter", dir, exporter, "--source=sim", "--sim.scenario=demo",
		"--web.listen-address="+addr, "--web.config.file="+filepath.Join(webDir, "web-config.yml"),
		"--web.health-listen-address="+health, "--collect.interval=1s")
	waitHTTP(t, p, "http://"+health+"/readyz", 30*time.Second)

	values := map[string]any{
		"webConfig": map[string]any{"enabled": true, "tls": true, "basicAuth": true, "config": webConfig},
		"monitoring": map[string]any{
			"basicAuth": map[string]any{
				"username": map[string]any{"name": "gpu-exporter-scrape", "key": "username"},
				"password": map[string]any{"name": "gpu-exporter-scrape", "key": "password"},
			},
			"tlsConfig": map[string]any{
				"ca":         map[string]any{"configMap": map[string]any{"name": "gpu-exporter-ca", "key": "ca.crt"}},
				"serverName": exporterServerName,
			},
		},
	}
	valuesData, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "values.yaml"), valuesData)
	cs := renderChartScrape(t, filepath.Join(dir, "values.yaml"))
	if cs.scheme != "https" || cs.basicAuth == nil || cs.tlsConfig == nil || cs.tlsConfig.InsecureSkipVerify {
		t.Fatalf("rendered ServiceMonitor: scheme %q, basicAuth %v, tlsConfig %+v", cs.scheme, cs.basicAuth, cs.tlsConfig)
	}
	objs := cluster{
		"gpu-exporter-scrape": {"username": user, "password": password},
		"gpu-exporter-ca":     {"ca.crt": ca.caPEM},
	}
	chartJob := cs.scrapeConfig(t, objs, secretsDir, addr)
	unauthenticated := cs.scrapeConfig(t, objs, secretsDir, addr)
	unauthenticated["job_name"] = "no-credentials"
	delete(unauthenticated, "basic_auth")
	startPrometheus(t, s, dir, promBin, map[string]any{
		"global":         map[string]any{"scrape_interval": "1s", "scrape_timeout": "1s"},
		"scrape_configs": []any{chartJob, unauthenticated},
	})

	want := map[string]string{
		fmt.Sprintf(`up{job=%q}`, cs.job):                                    "1",
		`up{job="no-credentials"}`:                                           "0",
		fmt.Sprintf(`count(gpu_info{job=%q, node="gpu-node-demo"})`, cs.job): "8",
	}
	poll.Problems(t, 30*time.Second, time.Second, func() []string {
		var problems []string
		for q, w := range want {
			r, err := s.query(q)
			switch {
			case err != nil:
				problems = append(problems, err.Error())
			case len(r) != 1 || fmt.Sprint(r[0].value) != w:
				problems = append(problems, fmt.Sprintf("%s = %v, want %s", q, r, w))
			}
		}
		return problems
	})
}
