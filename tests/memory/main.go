// Command memory measures where the exporter's resident memory goes: it
// starts the gpu-exporter binary on simulator scenarios, scrapes it the way
// Prometheus does (OpenMetrics, gzip, every -scrape-interval) and reads the
// process' resident set from /proc/<pid>/status (anonymous and file-backed
// parts) and the Go heap from the exporter's own go_memstats series, at
// start and in steady state. Each scenario runs -runs times; it prints the
// mean and the spread (min–max). It only talks to 127.0.0.1 and stops by
// itself.
//
//	go run ./tests/memory -bin bin/gpu-exporter -scenarios demo,scale-64 -runs 3
package main

import (
	"bufio"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpu-exporter/gpu-exporter/tests/testbin"
)

// Bounds that keep the measurement a test, not a soak.
const (
	maxRuns     = 10
	maxDuration = 2 * time.Minute
)

// prometheusAccept is what Prometheus sends when it scrapes.
const prometheusAccept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

// heapSeries are the go_memstats series read from every scrape.
var heapSeries = []string{"go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_sys_bytes"}

func main() {
	bin := flag.String("bin", "bin/gpu-exporter", "exporter binary to run")
	scenarios := flag.String("scenarios", "demo,scale-64", "comma-separated simulator scenarios")
	runs := flag.Int("runs", 3, "runs per scenario (at most 10)")
	duration := flag.Duration("duration", 20*time.Second, "scraping time per run; the second half is steady state (at most 2m)")
	scrapeEvery := flag.Duration("scrape-interval", 500*time.Millisecond, "time between scrapes")
	collectEvery := flag.Duration("collect-interval", time.Second, "exporter --collect.interval")
	maxRSS := flag.String("max-steady-rss", "", "targets: scenario=MiB,... of mean steady-state RSS; exit 1 when one is missed")
	reference := flag.String("reference", "", "another exporter binary (node_exporter) to measure the same way, as a reference point")
	pageCache := flag.String("page-cache", "cold", "the binary's page cache before each run: cold (written back and dropped, so the exporter reads its file pages from disk) or as-is")
	flag.Parse()
	targets, err := parseTargets(*maxRSS)
	if err != nil {
		fail(err)
	}
	if *runs < 1 || *runs > maxRuns {
		fail(fmt.Errorf("-runs must be 1..%d, got %d", maxRuns, *runs))
	}
	if *duration <= 0 || *duration > maxDuration {
		fail(fmt.Errorf("-duration must be in (0, %s], got %s", maxDuration, *duration))
	}
	if *scrapeEvery <= 0 {
		fail(fmt.Errorf("-scrape-interval must be positive, got %s", *scrapeEvery))
	}
	if *pageCache != "cold" && *pageCache != "as-is" {
		fail(fmt.Errorf("-page-cache must be cold or as-is, got %q", *pageCache))
	}
	abs, err := filepath.Abs(*bin)
	if err != nil {
		fail(err)
	}
	fmt.Printf("binary=%s page-cache=%s duration=%s scrape-interval=%s collect-interval=%s runs=%d\n", *bin, *pageCache, *duration, *scrapeEvery, *collectEvery, *runs)
	fmt.Printf("%-10s %-28s %-28s %-28s %-28s %-28s %-28s\n", "scenario", "start_rss_MiB", "steady_rss_MiB", "steady_anon_MiB", "steady_file_MiB", "peak_rss_MiB", "steady_heap_inuse_MiB")
	var missed []string
	type row struct {
		name  string
		argv  func(addr string) []string
		ready string // the path that answers 200 once it is ready
	}
	var rows []row
	for _, scn := range strings.Split(*scenarios, ",") {
		rows = append(rows, row{scn, func(addr string) []string {
			return []string{abs, "--source=sim", "--sim.scenario=" + scn, "--web.listen-address=" + addr,
				"--collect.interval=" + collectEvery.String(), "--log.level=warn"}
		}, "/readyz"})
	}
	if *reference != "" {
		ref, err := filepath.Abs(*reference)
		if err != nil {
			fail(err)
		}
		// node_exporter with its default collectors, scraped the same way:
		// what an exporter every node already runs costs on this machine.
		rows = append(rows, row{filepath.Base(ref), func(addr string) []string {
			return []string{ref, "--web.listen-address=" + addr, "--log.level=warn"}
		}, "/metrics"})
	}
	for _, r := range rows {
		scn := r.name
		var all []measurement
		for range *runs {
			argv := r.argv("")
			if *pageCache == "cold" {
				if err := dropPageCache(argv[0]); err != nil {
					fail(err)
				}
			}
			m, err := measure(r.argv, r.ready, *duration, *scrapeEvery)
			if err != nil {
				fail(fmt.Errorf("%s: %w", scn, err))
			}
			all = append(all, m)
		}
		col := func(f func(measurement) float64) string {
			v := make([]float64, len(all))
			for i, m := range all {
				v[i] = f(m) / (1 << 20)
			}
			return spread(v)
		}
		fmt.Printf("%-10s %-28s %-28s %-28s %-28s %-28s %-28s\n", scn,
			col(func(m measurement) float64 { return m.startRSS }),
			col(func(m measurement) float64 { return m.steadyRSS }),
			col(func(m measurement) float64 { return m.steadyAnon }),
			col(func(m measurement) float64 { return m.steadyFile }),
			col(func(m measurement) float64 { return m.peakRSS }),
			col(func(m measurement) float64 { return m.steadyHeap }))
		if limit, ok := targets[scn]; ok {
			var sum float64
			for _, m := range all {
				sum += m.steadyRSS
			}
			if mean := sum / float64(len(all)) / (1 << 20); mean > limit {
				missed = append(missed, fmt.Sprintf("%s: steady RSS %.1f MiB, target %.0f MiB", scn, mean, limit))
			}
		}
	}
	for _, m := range missed {
		fmt.Println("target missed:", m)
	}
	if len(missed) > 0 {
		os.Exit(1)
	}
}

// parseTargets reads "scenario=MiB,scenario=MiB".
func parseTargets(s string) (map[string]float64, error) {
	out := map[string]float64{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		mib, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || mib <= 0 {
			return nil, fmt.Errorf("-max-steady-rss: %q is not scenario=MiB", kv)
		}
		out[k] = mib
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "memory:", err)
	os.Exit(1)
}

// spread formats the mean and the min–max range of v.
func spread(v []float64) string {
	var sum float64
	for _, x := range v {
		sum += x
	}
	return fmt.Sprintf("%.1f (%.1f–%.1f)", sum/float64(len(v)), slices.Min(v), slices.Max(v))
}

// dropPageCache writes back the file's dirty pages and drops its pages
// from the page cache, so that the next start reads them from disk as a
// node does that pulled the image earlier, whoever wrote the file and how.
// Without it RssFile depends on the file's history: on the build machine
// (Linux 6.18, ext4) a binary fresh from the linker, which writes its output
// through a shared mapping, maps about 3 MiB more file pages than the same
// bytes after cp or after a read from disk (docs/PERFORMANCE.md).
func dropPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("-page-cache=cold: write back %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("-page-cache=cold: drop %s from the page cache: %w", path, err)
	}
	return nil
}

// measurement is one run, in bytes.
type measurement struct {
	startRSS, steadyRSS, steadyAnon, steadyFile, peakRSS, steadyHeap float64
}

// measure starts argv(addr), an exporter listening on addr, waits until
// readyPath answers, scrapes it for duration and measures it.
func measure(argv func(addr string) []string, readyPath string, duration, scrapeEvery time.Duration) (measurement, error) {
	addr, err := testbin.FreeLoopbackAddr()
	if err != nil {
		return measurement{}, err
	}
	args := argv(addr)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return measurement{}, fmt.Errorf("start %s: %w", args[0], err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	base := "http://" + addr
	if err := testbin.WaitReady(base+readyPath, 30*time.Second); err != nil {
		return measurement{}, err
	}
	pid := cmd.Process.Pid
	st, err := readStatus(pid)
	if err != nil {
		return measurement{}, err
	}
	m := measurement{startRSS: st["VmRSS"]}

	client := &http.Client{Transport: &http.Transport{DisableCompression: true}, Timeout: 10 * time.Second}
	var rss, anon, file, heap []float64
	end := time.Now().Add(duration)
	steadyFrom := time.Now().Add(duration / 2)
	tick := time.NewTicker(scrapeEvery)
	defer tick.Stop()
	for now := time.Now(); now.Before(end); now = <-tick.C {
		mem, err := scrape(client, base+"/metrics")
		if err != nil {
			return measurement{}, err
		}
		st, err := readStatus(pid)
		if err != nil {
			return measurement{}, err
		}
		if now.After(steadyFrom) {
			rss, anon, file = append(rss, st["VmRSS"]), append(anon, st["RssAnon"]), append(file, st["RssFile"])
			heap = append(heap, mem["go_memstats_heap_inuse_bytes"])
		}
	}
	st, err = readStatus(pid)
	if err != nil {
		return measurement{}, err
	}
	m.peakRSS = st["VmHWM"]
	m.steadyRSS, m.steadyAnon, m.steadyFile, m.steadyHeap = mean(rss), mean(anon), mean(file), mean(heap)
	return m, nil
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// scrape fetches url as Prometheus does, decompresses the gzip body itself
// (so that a wrong Content-Encoding fails) and returns the heapSeries values.
func scrape(client *http.Client, url string) (map[string]float64, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", prometheusAccept)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: status %s", url, resp.Status)
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "gzip" {
		return nil, fmt.Errorf("scrape %s: Content-Encoding %q, want gzip", url, ce)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !slices.Contains(heapSeries, name) {
			continue
		}
		if out[name], err = strconv.ParseFloat(val, 64); err != nil {
			return nil, fmt.Errorf("scrape %s: %s: %w", url, name, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return out, nil
}

// readStatus returns the kB fields of /proc/<pid>/status, in bytes.
func readStatus(pid int) (map[string]float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		v = strings.TrimSpace(v)
		if !ok || !strings.HasSuffix(v, " kB") {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSuffix(v, " kB"), 64)
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/status %s: %w", pid, k, err)
		}
		out[k] = n * 1024
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if _, ok := out["VmRSS"]; !ok {
		return nil, errors.New("no VmRSS in /proc status")
	}
	return out, nil
}
