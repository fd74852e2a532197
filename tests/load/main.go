// Command load is the exporter's bounded loopback load test: it starts the
// gpu-exporter binary on a simulator scenario, scrapes it from many
// concurrent clients for a fixed time, and reports scrape latency
// percentiles, failed scrapes, and the exporter's CPU time and peak RSS read
// from /proc. It only ever talks to 127.0.0.1 and stops by itself.
//
//	go run ./tests/load -bin bin/gpu-exporter -scenario scale-64 -clients 64 -duration 10s
//
// With -scrape-interval each client waits that long between scrapes, which
// measures the idle cost: one Prometheus scraping every 15 s, at the
// default collection interval, costs the exporter this fraction of a core:
//
//	go run ./tests/load -scenario scale-64 -clients 1 -scrape-interval 15s -collect-interval 10s -duration 60s
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpu-exporter/gpu-exporter/tests/testbin"
)

// Bounds that keep the load test a test, not a flood.
const (
	maxClients  = 256
	maxDuration = 2 * time.Minute
)

// prometheusAccept is what Prometheus sends when it scrapes.
const prometheusAccept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

func main() {
	bin := flag.String("bin", "bin/gpu-exporter", "exporter binary to run")
	scenario := flag.String("scenario", "scale-64", "simulator scenario")
	clients := flag.Int("clients", 64, "concurrent scrapers (at most 256)")
	duration := flag.Duration("duration", 10*time.Second, "how long to scrape (at most 2m)")
	interval := flag.Duration("collect-interval", time.Second, "exporter --collect.interval")
	every := flag.Duration("scrape-interval", 0, "time each client waits between scrapes (0: back to back)")
	flag.Parse()
	if err := run(*bin, *scenario, *clients, *duration, *interval, *every); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

type result struct {
	latencies []time.Duration
	failures  int64
	bytes     int64
}

func run(bin, scenario string, clients int, duration, interval, every time.Duration) error {
	if clients < 1 || clients > maxClients {
		return fmt.Errorf("-clients must be 1..%d, got %d", maxClients, clients)
	}
	if duration <= 0 || duration > maxDuration {
		return fmt.Errorf("-duration must be in (0, %s], got %s", maxDuration, duration)
	}
	if every < 0 || every >= duration {
		return fmt.Errorf("-scrape-interval must be in [0, -duration), got %s", every)
	}
	addr, err := testbin.FreeLoopbackAddr()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	cmd := exec.Command(abs, "--source=sim", "--sim.scenario="+scenario, "--web.listen-address="+addr,
		"--collect.interval="+interval.String(), "--log.level=warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	base := "http://" + addr
	if err := testbin.WaitReady(base+"/readyz", 30*time.Second); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	cpu0, err := cpuSeconds(pid)
	if err != nil {
		return err
	}

	start := time.Now()
	res := scrapeFor(base+"/metrics", clients, duration, every)
	elapsed := time.Since(start)

	cpu1, err := cpuSeconds(pid)
	if err != nil {
		return err
	}
	hwm, err := peakRSS(pid)
	if err != nil {
		return err
	}
	report(scenario, clients, elapsed, every, interval, res, cpu1-cpu0, hwm)
	if res.failures > 0 {
		return fmt.Errorf("%d failed scrapes", res.failures)
	}
	return nil
}

func scrapeFor(url string, clients int, duration, every time.Duration) result {
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	transport := &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: false}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	var (
		mu       sync.Mutex
		all      []time.Duration
		failures atomic.Int64
		bytes    atomic.Int64
		wg       sync.WaitGroup
	)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for ctx.Err() == nil {
				start := time.Now()
				n, err := scrapeOnce(client, url)
				if err != nil {
					if ctx.Err() == nil {
						failures.Add(1)
						fmt.Fprintln(os.Stderr, "scrape failed:", err)
					}
					continue
				}
				mine = append(mine, time.Since(start))
				bytes.Add(n)
				if every > 0 {
					select { // a scrape interval, not a wait for state
					case <-ctx.Done():
					case <-time.After(every - time.Since(start)):
					}
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return result{latencies: all, failures: failures.Load(), bytes: bytes.Load()}
}

func scrapeOnce(client *http.Client, url string) (int64, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", prometheusAccept)
	resp, err := client.Do(req) // the transport asks for gzip and decodes it
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return n, err
	}
	if resp.StatusCode != http.StatusOK {
		return n, fmt.Errorf("status %s", resp.Status)
	}
	return n, nil
}

func report(scenario string, clients int, duration, every, interval time.Duration, r result, cpu float64, hwmKiB int64) {
	sort.Slice(r.latencies, func(i, j int) bool { return r.latencies[i] < r.latencies[j] })
	pct := func(p float64) time.Duration {
		if len(r.latencies) == 0 {
			return 0
		}
		return r.latencies[min(len(r.latencies)-1, int(p*float64(len(r.latencies))))]
	}
	n := len(r.latencies)
	fmt.Printf("scenario=%s clients=%d duration=%s scrape-interval=%s collect-interval=%s\n", scenario, clients, duration.Round(time.Millisecond), every, interval)
	fmt.Printf("scrapes=%d failed=%d rate=%.0f/s bytes/scrape=%d\n", n, r.failures, float64(n)/duration.Seconds(), r.bytes/int64(max(n, 1)))
	fmt.Printf("latency p50=%s p90=%s p99=%s max=%s\n", pct(0.50), pct(0.90), pct(0.99), pct(1))
	fmt.Printf("exporter cpu=%.2fs (%.2f%% of one core) peak_rss=%.1fMiB\n", cpu, 100*cpu/duration.Seconds(), float64(hwmKiB)/1024)
}

// cpuSeconds returns the user+system CPU time of pid from /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the whole line.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	const clockTicks = 100 // USER_HZ on Linux
	return (utime + stime) / clockTicks, nil
}

// peakRSS returns VmHWM of pid in KiB.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}
