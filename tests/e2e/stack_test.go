package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/rules"
)

// testFor replaces every alert's `for` in the Prometheus under test, so that
// alerts fire within the test; everything else is the shipped rules.
const testFor = "2s"

// node is one simulated GPU node: an exporter running a scenario, scraped
// as if Kubernetes service discovery had found its pod on that node.
type node struct {
	name     string
	scenario string
	addr     string
	// podLabels gives the node's holders pod_uid and label_team, as
	// --kubernetes.pod-uid and --kubernetes.pod-labels would (see
	// podLabelRelabel).
	podLabels bool
	proc      *process
}

// stack is the running system under test.
type stack struct {
	nodes      []node
	prom       string // Prometheus base URL
	am         string // Alertmanager base URL
	webhook    *webhook
	started    time.Time
	procs      []*process
	ksmAddress string
	receiver   string // base URL of the Prometheus that receives remote write
	exporter   string // the exporter binary
	dir        string // the processes' working directory
}

// process is a child process whose output is kept for failure reports.
type process struct {
	name string
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{}
	err  error
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startProcess(t *testing.T, s *stack, name, dir, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Stdout = &p.out
	p.cmd.Stderr = &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	s.procs = append(s.procs, p)
	t.Cleanup(func() { p.stop() })
	return p
}

// stop ends the process: SIGTERM, then SIGKILL after 10 s.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// freeAddr returns a 127.0.0.1 address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// waitHTTP polls url until it answers 200 or the deadline passes.
func waitHTTP(t *testing.T, p *process, url string, timeout time.Duration) {
	t.Helper()
	poll.Problems(t, timeout, 200*time.Millisecond, func() []string {
		resp, err := http.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before %s was ready: %v", p.name, url, p.err)
		default:
		}
		return []string{fmt.Sprintf("%s: %s not ready after %s (last error %v)", p.name, url, timeout, err)}
	})
}

// webhook is Alertmanager's receiver: it keeps every alert notified.
type webhook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	alerts []amAlert
}

type amAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func newWebhook(t *testing.T) *webhook {
	w := &webhook{}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var msg struct {
			Alerts []amAlert `json:"alerts"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.alerts = append(w.alerts, msg.Alerts...)
		w.mu.Unlock()
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *webhook) received() []amAlert {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]amAlert(nil), w.alerts...)
}

// startStack starts the exporters, the fake kube-state-metrics, Alertmanager
// and Prometheus, and waits until Prometheus has scraped every target.
func startStack(t *testing.T, nodes []node) *stack {
	t.Helper()
	exporter := requireExporter(t)
	promBin := tool(t, "prometheus")
	amBin := tool(t, "alertmanager")
	dir := t.TempDir()
	s := &stack{started: time.Now()}
	// Registered first, so it runs after every process has been stopped.
	t.Cleanup(func() {
		if t.Failed() {
			s.dumpLogs(t)
		}
	})

	s.exporter, s.dir = exporter, dir
	for _, n := range nodes {
		n.addr = freeAddr(t)
		s.startExporter(t, &n)
		s.nodes = append(s.nodes, n)
	}

	ksm, err := os.ReadFile(filepath.Join("testdata", "kube-state-metrics.prom"))
	if err != nil {
		t.Fatal(err)
	}
	ksmSrv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = rw.Write(ksm)
	}))
	t.Cleanup(ksmSrv.Close)
	s.ksmAddress = strings.TrimPrefix(ksmSrv.URL, "http://")

	s.webhook = newWebhook(t)
	amAddr := freeAddr(t)
	writeFile(t, filepath.Join(dir, "alertmanager.yml"), []byte(alertmanagerConfig(s.webhook.srv.URL)))
	amProc := startProcess(t, s, "alertmanager", dir, amBin,
		"--config.file=alertmanager.yml",
		"--storage.path="+filepath.Join(dir, "am-data"),
		"--web.listen-address="+amAddr,
		"--cluster.listen-address=")
	s.am = "http://" + amAddr
	waitHTTP(t, amProc, s.am+"/-/ready", 30*time.Second)

	writeRules(t, dir)
	remoteWrite := startReceiver(t, s, dir, promBin)
	promAddr := freeAddr(t)
	promConfig, err := prometheusConfig(s.nodes, s.ksmAddress, amAddr, renderChartScrape(t))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "prometheus.yml"), []byte(promConfig+remoteWrite))
	backfillHistory(t, tool(t, "promtool"), dir, filepath.Join(dir, "prom-data"), s.started)
	promProc := startProcess(t, s, "prometheus", dir, promBin,
		"--config.file=prometheus.yml",
		"--storage.tsdb.path="+filepath.Join(dir, "prom-data"),
		"--web.listen-address="+promAddr)
	s.prom = "http://" + promAddr
	waitHTTP(t, promProc, s.prom+"/-/ready", 60*time.Second)

	want := len(nodes) + 1
	poll.Problems(t, 30*time.Second, time.Second, func() []string {
		r, err := s.query(`count(up == 1)`)
		if err != nil {
			return []string{err.Error()}
		}
		if len(r) != 1 || r[0].value != float64(want) {
			return []string{fmt.Sprintf("want %d targets up, got %v", want, r)}
		}
		return nil
	})
	return s
}

// startExporter starts the exporter of node n on n.addr and waits until
// it is ready.
func (s *stack) startExporter(t *testing.T, n *node) {
	t.Helper()
	n.proc = startProcess(t, s, "exporter "+n.name, s.dir, s.exporter,
		"--source=sim", "--sim.scenario="+n.scenario,
		"--web.listen-address="+n.addr, "--collect.interval=1s")
	waitHTTP(t, n.proc, "http://"+n.addr+"/readyz", 30*time.Second)
}

// restartExporter stops the exporter of the node called name and starts
// it again on the same address, as a DaemonSet rollout replaces the pod
// (maxUnavailable: the old one goes first).
func (s *stack) restartExporter(t *testing.T, name string) {
	t.Helper()
	for i := range s.nodes {
		if s.nodes[i].name == name {
			s.nodes[i].proc.stop()
			s.startExporter(t, &s.nodes[i])
			return
		}
	}
	t.Fatalf("no node %s", name)
}

// podLabelRelabel gives the series of the nodes with podLabels the labels
// the pod informer adds (pod_uid, label_<key>), derived from each
// holder's pod, so that a shared GPU's holders differ in them as they do
// on a cluster with --kubernetes.pod-uid and --kubernetes.pod-labels (the
// informer itself needs an API server, which this stack does not run).
func podLabelRelabel(nodes []node) string {
	var b strings.Builder
	for _, n := range nodes {
		if !n.podLabels {
			continue
		}
		for _, l := range [][2]string{{"pod_uid", "uid-$1"}, {"label_team", "team-$1"}} {
			fmt.Fprintf(&b, `      - source_labels: [node, pod]
        regex: '%s;(.+)'
        target_label: %s
        replacement: '%s'
`, n.name, l[0], l[1])
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "    metric_relabel_configs:\n" + b.String()
}

func (s *stack) dumpLogs(t *testing.T) {
	for _, p := range s.procs {
		t.Logf("===== %s output =====\n%s", p.name, p.out.String())
	}
	for _, a := range s.webhook.received() {
		t.Logf("webhook received: %s %v", a.Status, a.Labels)
	}
}

func alertmanagerConfig(webhookURL string) string {
	return `route:
  receiver: webhook
  group_by: ['...']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: webhook
    webhook_configs:
      - url: ` + webhookURL + `
        send_resolved: false
`
}

// prometheusConfig scrapes the exporters the way the chart's ServiceMonitor
// does (its job, honorLabels and relabelings, read from the rendered chart:
// `node` from the pod's node name, the target's own namespace/pod/container
// dropped). The static labels stand for what Kubernetes service discovery
// attaches to the exporter's pod.
func prometheusConfig(nodes []node, ksm, am string, chart chartScrape) (string, error) {
	relabel, err := chart.relabelYAML()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
  external_labels:
    cluster: e2e
rule_files:
  - recording.yaml
  - alerts.yaml
alerting:
  alertmanagers:
    - static_configs:
        - targets: ['%s']
scrape_configs:
  - job_name: %s
    honor_labels: %t
    static_configs:
`, am, chart.job, chart.honorLabels)
	for i, n := range nodes {
		fmt.Fprintf(&b, `      - targets: ['%s']
        labels:
          __meta_kubernetes_pod_node_name: %s
          namespace: gpu-exporter
          pod: gpu-exporter-%d
          container: gpu-exporter
`, n.addr, n.name, i)
	}
	b.WriteString("    relabel_configs:\n" + relabel)
	b.WriteString(podLabelRelabel(nodes))
	b.WriteString(`  - job_name: kube-state-metrics
    honor_labels: true
    static_configs:
      - targets: ['` + ksm + `']
`)
	return b.String(), nil
}

// writeRules writes the shipped recording rules with every group on the
// global evaluation interval (a group's own interval, up to 2m, would
// delay its first evaluation by up to that long), and the shipped alerts
// with every `for` shortened to testFor.
func writeRules(t *testing.T, dir string) {
	t.Helper()
	recording, err := rules.Load(rules.RecordingFile)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recording.Groups {
		recording.Groups[i].Interval = ""
	}
	rec, err := recording.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, rules.RecordingFile), rec)
	alerts, err := rules.Load(rules.AlertsFile)
	if err != nil {
		t.Fatal(err)
	}
	short, err := alerts.Map(func(r rules.Rule) rules.Rule {
		if r.For != "" {
			r.For = testFor
		}
		return r
	}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, rules.AlertsFile), short)
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sample is one series of a query result; for range queries value is the
// last point.
type sample struct {
	labels map[string]string
	value  float64
}

func (s sample) String() string { return fmt.Sprintf("%v %g", s.labels, s.value) }

type apiResponse struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

// query runs an instant query now.
func (s *stack) query(q string) ([]sample, error) {
	return s.api("/api/v1/query", url.Values{"query": {q}})
}

// queryRange runs a range query over the last window.
func (s *stack) queryRange(q string, window, step time.Duration) ([]sample, error) {
	end := time.Now()
	return s.api("/api/v1/query_range", url.Values{
		"query": {q},
		"start": {strconv.FormatInt(end.Add(-window).Unix(), 10)},
		"end":   {strconv.FormatInt(end.Unix(), 10)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	})
}

func (s *stack) api(path string, params url.Values) ([]sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.prom+path, strings.NewReader(params.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r apiResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding %s response: %w", path, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", params.Get("query"), r.Error)
	}
	out := make([]sample, 0, len(r.Data.Result))
	for _, res := range r.Data.Result {
		point := res.Value
		if len(res.Values) > 0 {
			point = res.Values[len(res.Values)-1]
		}
		v, err := pointValue(point)
		if err != nil {
			return nil, err
		}
		out = append(out, sample{labels: res.Metric, value: v})
	}
	return out, nil
}

func pointValue(p []any) (float64, error) {
	if len(p) != 2 {
		return 0, errors.New("malformed point")
	}
	s, ok := p[1].(string)
	if !ok {
		return 0, errors.New("malformed point value")
	}
	return strconv.ParseFloat(s, 64)
}
