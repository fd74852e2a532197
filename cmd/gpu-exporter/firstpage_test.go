package main

import (
	"fmt"
	"net/http"
	"testing"
)

// TestFirstPageCarriesHolders: the first page the exporter serves once
// ready already names the pods holding the GPUs. The first collection used
// to race the first kubelet List, and a start served every GPU without pod
// labels for an interval, then with them: a second series per held GPU on
// every restart. Several starts, as the race was lost in 2 of 3.
func TestFirstPageCarriesHolders(t *testing.T) {
	t.Parallel()
	for i := range 3 {
		t.Run(fmt.Sprint("start ", i), func(t *testing.T) {
			t.Parallel()
			addr := freeAddr(t)
			stderr, stop := startExporter(t, "--source=sim", "--web.listen-address="+addr, "--collect.interval=5s")
			waitFor(t, "http://"+addr+"/readyz", http.StatusOK)
			fams, _ := scrape(t, "http://"+addr+"/metrics")
			if fams["gpu_pod_allocation_info"] == nil {
				t.Errorf("the first page has no gpu_pod_allocation_info; log:\n%s", stderr.String())
			}
			held := 0
			for _, m := range fams["gpu_temperature_celsius"].GetMetric() {
				if labels(m)["pod"] != "" {
					held++
				}
			}
			if held == 0 {
				t.Errorf("the first page has no GPU series with pod labels; log:\n%s", stderr.String())
			}
			if code := stop(); code != 0 {
				t.Errorf("exit code %d", code)
			}
		})
	}
}
