package scaling

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// config is one way to run the exporter: a naming and extra flags. The
// counters set is the built-in default in both.
type config struct {
	naming string
	args   []string
}

var (
	defaultConfig = config{naming: "prometheus"}
	dcgmConfig    = config{naming: "dcgm", args: []string{"--naming=dcgm"}}
	// dcgmNoHostname is the dcgm naming docs/scaling.md recommends where a
	// label budget matters: Prometheus' node label already names the host.
	dcgmNoHostname = config{naming: "dcgm, no hostname", args: []string{"--naming=dcgm", "--naming.hostname-label=none"}}
)

// measurement is what one scrape of the exporter holds.
type measurement struct {
	scenario string
	naming   string

	gpus         int // physical GPUs (distinct gpu label values)
	migInstances int // distinct (gpu, MIG instance) pairs
	holders      int // distinct namespace/pod/container on GPU series

	gpuSeries     int // everything that is not a self-metric or runtime metric
	selfSeries    int // gpu_exporter_*
	runtimeSeries int // go_*, process_*, promhttp_*

	maxLabels        int    // most labels the exporter puts on one series
	maxLabelsExample string // one series with that many
	labelNames       map[string]bool
}

func (m measurement) total() int { return m.gpuSeries + m.selfSeries + m.runtimeSeries }

// measurements caches one exporter run per scenario and config: the doc
// table and the label budget share them.
var measurements struct {
	sync.Mutex
	runs map[string]*measuredRun
}

type measuredRun struct {
	once sync.Once
	m    measurement
	err  error
}

func measure(t *testing.T, scenario string, c config) measurement {
	t.Helper()
	bin := requireExporter(t)
	key := scenario + "/" + c.naming
	measurements.Lock()
	if measurements.runs == nil {
		measurements.runs = map[string]*measuredRun{}
	}
	r, ok := measurements.runs[key]
	if !ok {
		r = &measuredRun{}
		measurements.runs[key] = r
	}
	measurements.Unlock()
	r.once.Do(func() { r.m, r.err = runAndMeasure(bin, scenario, c) })
	if r.err != nil {
		t.Fatalf("%s: %v", key, r.err)
	}
	return r.m
}

// runAndMeasure starts the exporter on a scenario, waits until it has
// collected three times, and measures one scrape.
func runAndMeasure(bin, scenario string, c config) (measurement, error) {
	addr, err := freeAddr()
	if err != nil {
		return measurement{}, err
	}
	args := append([]string{"--source=sim", "--sim.scenario=" + scenario,
		"--web.listen-address=" + addr, "--collect.interval=250ms"}, c.args...)
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return measurement{}, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()

	deadline := time.Now().Add(30 * time.Second)
	for {
		families, err := scrape("http://" + addr + "/metrics")
		if err == nil && counterValue(families, "gpu_exporter_collections_total") >= 3 {
			// The scrape after this one: every lazily created series
			// (scrape counters by format) exists by now.
			families, err = scrape("http://" + addr + "/metrics")
			if err != nil {
				return measurement{}, err
			}
			return count(scenario, c.naming, families), nil
		}
		select {
		case <-done:
			return measurement{}, fmt.Errorf("exporter exited:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("fewer than three collections")
			}
			return measurement{}, fmt.Errorf("not measured after 30s: %w\n%s", err, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// scrape reads /metrics in the text format, as a Prometheus that does not
// negotiate OpenMetrics would.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", url, err)
	}
	return families, nil
}

func counterValue(families map[string]*dto.MetricFamily, name string) float64 {
	f, ok := families[name]
	if !ok || len(f.GetMetric()) == 0 {
		return 0
	}
	return f.GetMetric()[0].GetCounter().GetValue()
}

// migLabels name a MIG instance in each naming.
var migLabels = []string{"gpu_instance", "GPU_I_ID"}

// count measures one scrape. A histogram counts as Prometheus stores it:
// one series per bucket, plus _sum and _count.
func count(scenario, naming string, families map[string]*dto.MetricFamily) measurement {
	m := measurement{scenario: scenario, naming: naming, labelNames: map[string]bool{}}
	gpus, migs, holders := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for name, f := range families {
		for _, metric := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
				m.labelNames[l.GetName()] = true
			}
			series, extraLabel := 1, 0
			switch {
			case metric.GetHistogram() != nil:
				// The text parser keeps the +Inf bucket; add _sum and _count.
				series, extraLabel = len(metric.GetHistogram().GetBucket())+2, 1
			case metric.GetSummary() != nil:
				series, extraLabel = len(metric.GetSummary().GetQuantile())+2, 1
			}
			if n := len(labels) + extraLabel; n > m.maxLabels {
				m.maxLabels = n
				m.maxLabelsExample = name + fmt.Sprint(labels)
			}
			switch {
			case strings.HasPrefix(name, "gpu_exporter_"):
				m.selfSeries += series
			case strings.HasPrefix(name, "go_"), strings.HasPrefix(name, "process_"), strings.HasPrefix(name, "promhttp_"):
				m.runtimeSeries += series
			default:
				m.gpuSeries += series
				if g := labels["gpu"]; g != "" {
					gpus[g] = true
					for _, l := range migLabels {
						if gi := labels[l]; gi != "" {
							migs[g+"/"+gi] = true
						}
					}
				}
				// A container holds the series' GPU; gpu_workload_info names
				// pods, not containers, and holds nothing.
				if labels["pod"] != "" && labels["container"] != "" {
					holders[labels["namespace"]+"/"+labels["pod"]+"/"+labels["container"]] = true
				}
			}
		}
	}
	m.gpus, m.migInstances, m.holders = len(gpus), len(migs), len(holders)
	return m
}
