package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/rules"
)

// openCostCounters lists every field OpenCost queries, so that both
// namings collect them (dcgm-exporter's default counters file leaves some
// out; docs/opencost.md).
const openCostCounters = `DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Graphics engine active.
DCGM_FI_DEV_DEC_UTIL, gauge, Decoder utilization.
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw.
DCGM_FI_DEV_GPU_TEMP, gauge, Temperature.
DCGM_FI_DEV_FB_USED, gauge, Framebuffer used.
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer free.
DCGM_FI_DEV_POWER_VIOLATION, counter, Power violation.
DCGM_FI_DEV_THERMAL_VIOLATION, counter, Thermal violation.
DCGM_FI_DEV_SYNC_BOOST_VIOLATION, counter, Sync boost violation.
DCGM_FI_DEV_BOARD_LIMIT_VIOLATION, counter, Board limit violation.
DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, gauge, Clock throttle reasons.
DCGM_FI_DEV_XID_ERRORS, gauge, Last XID.
DCGM_FI_PROF_DRAM_ACTIVE, gauge, DRAM active.
DCGM_FI_PROF_SM_ACTIVE, gauge, SM active.
DCGM_FI_PROF_SM_OCCUPANCY, gauge, SM occupancy.
DCGM_FI_PROF_PCIE_TX_BYTES, gauge, PCIe transmit.
DCGM_FI_PROF_PCIE_RX_BYTES, gauge, PCIe receive.
DCGM_FI_PROF_NVLINK_TX_BYTES, gauge, NVLink transmit.
DCGM_FI_PROF_NVLINK_RX_BYTES, gauge, NVLink receive.
`

// openCostQuery is one query OpenCost's Prometheus source sends.
type openCostQuery struct{ name, query string }

// openCostQueries spells OpenCost's GPU queries for a cluster filter and
// label, a window and a subquery resolution in minutes, as
// opencost/opencost modules/prometheus-source/pkg/prom builds them:
// metricsquerier.go at 1ea64d02 (QueryGPUsUsageAvg, QueryGPUInfo),
// gpudevicequerier.go at c0fed084 (device gauges by device, modelName,
// UUID, GPU_I_PROFILE, GPU_I_ID), gpusaturationquerier.go at 0d0dfc6a
// (saturation queries by container, pod, namespace, device, modelName,
// UUID, GPU_I_PROFILE, GPU_I_ID, uid; violation counters divided by the
// window in microseconds; throttle reason bits from core/pkg/opencost's
// GPUThrottleReasons: 0x4 sw_power_cap ... 0x80 hw_power_brake).
func openCostQueries(filter, label, window string, windowSeconds float64, resMinutes int) []openCostQuery {
	const device = "device, modelName, UUID, GPU_I_PROFILE, GPU_I_ID"
	const saturation = "container, pod, namespace, device, modelName, UUID, GPU_I_PROFILE, GPU_I_ID, uid"
	qs := []openCostQuery{
		{"QueryGPUsUsageAvg", fmt.Sprintf(`avg(avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{container!=""}[%s])) by (container, pod, namespace, uid, %s)`, window, label)},
		{"QueryGPUInfo", fmt.Sprintf(`avg(avg_over_time(DCGM_FI_DEV_DEC_UTIL{container!="",%s}[%s])) by (container, pod, namespace, device, modelName, UUID, uid, %s)`, filter, window, label)},
	}
	for _, d := range []struct{ name, metric, agg string }{
		{"QueryGPUDevicePowerAvg", "DCGM_FI_DEV_POWER_USAGE", "avg"},
		{"QueryGPUDeviceTempAvg", "DCGM_FI_DEV_GPU_TEMP", "avg"},
		{"QueryGPUDeviceUsageAvg", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "avg"},
		{"QueryGPUDeviceUsageMax", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "max"},
		{"QueryGPUDeviceMemoryUsedAvg", "DCGM_FI_DEV_FB_USED", "avg"},
		{"QueryGPUDeviceMemoryUsedMax", "DCGM_FI_DEV_FB_USED", "max"},
	} {
		qs = append(qs, openCostQuery{d.name, fmt.Sprintf(`%s(%s_over_time(%s{%s}[%s])) by (%s, %s)`, d.agg, d.agg, d.metric, filter, window, device, label)})
	}
	var branches []string
	for _, v := range []struct{ metric, reason string }{
		{"DCGM_FI_DEV_POWER_VIOLATION", "power"}, {"DCGM_FI_DEV_THERMAL_VIOLATION", "thermal"},
		{"DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "sync_boost"}, {"DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", "board_limit"},
	} {
		branches = append(branches, fmt.Sprintf(`label_replace(avg(increase(%s{container!="",%s}[%s])) by (%s, %s) / %g, "reason", "%s", "", "")`,
			v.metric, filter, window, saturation, label, windowSeconds*1e6, v.reason))
	}
	qs = append(qs, openCostQuery{"QueryGPUThrottleViolationRatio", strings.Join(branches, " or ")})
	branches = nil
	for _, r := range []struct {
		name string
		bit  int
	}{{"sw_power_cap", 0x4}, {"hw_slowdown", 0x8}, {"sync_boost", 0x10}, {"sw_thermal", 0x20}, {"hw_thermal", 0x40}, {"hw_power_brake", 0x80}} {
		branches = append(branches, fmt.Sprintf(`label_replace(avg(avg_over_time(((floor((DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{container!="",%s} or DCGM_FI_DEV_CLOCKS_EVENT_REASONS{container!="",%s}) / %d)) %% 2)[%s:%dm])) by (%s, %s), "reason", "%s", "", "")`,
			filter, filter, r.bit, window, resMinutes, saturation, label, r.name))
	}
	qs = append(qs, openCostQuery{"QueryGPUThrottleReasonRatio", strings.Join(branches, " or ")})
	used := func(agg string) string {
		return fmt.Sprintf(`%s(%s_over_time(DCGM_FI_DEV_FB_USED{container!="",%s}[%s])) by (%s, %s)`, agg, agg, filter, window, saturation, label)
	}
	free := fmt.Sprintf(`avg(avg_over_time(DCGM_FI_DEV_FB_FREE{container!="",%s}[%s])) by (%s, %s)`, filter, window, saturation, label)
	qs = append(qs,
		openCostQuery{"QueryGPUMemoryUsedRatioAvg", fmt.Sprintf(`%s / (%s + %s)`, used("avg"), used("avg"), free)},
		openCostQuery{"QueryGPUMemoryUsedRatioMax", fmt.Sprintf(`%s / (%s + %s)`, used("max"), used("avg"), free)},
		openCostQuery{"QueryGPUMemoryPressureRatio", fmt.Sprintf(`avg(avg_over_time(((DCGM_FI_DEV_FB_USED{container!="",%s} / (DCGM_FI_DEV_FB_USED{container!="",%s} + DCGM_FI_DEV_FB_FREE{container!="",%s})) >= bool %g)[%s:%dm])) by (%s, %s)`,
			filter, filter, filter, 0.9, window, resMinutes, saturation, label)},
		openCostQuery{"QueryGPUXIDErrorCount", fmt.Sprintf(`sum(changes(DCGM_FI_DEV_XID_ERRORS{container!="",%s}[%s])) by (%s, %s)`, filter, window, saturation, label)},
	)
	for _, g := range []struct{ name, metric, agg string }{
		{"QueryGPUDRAMActiveAvg", "DCGM_FI_PROF_DRAM_ACTIVE", "avg"},
		{"QueryGPUDRAMActiveMax", "DCGM_FI_PROF_DRAM_ACTIVE", "max"},
		{"QueryGPUSMActiveAvg", "DCGM_FI_PROF_SM_ACTIVE", "avg"},
		{"QueryGPUSMOccupancyAvg", "DCGM_FI_PROF_SM_OCCUPANCY", "avg"},
	} {
		qs = append(qs, openCostQuery{g.name, fmt.Sprintf(`%s(%s_over_time(%s{container!="",%s}[%s])) by (%s, %s)`, g.agg, g.agg, g.metric, filter, window, saturation, label)})
	}
	for _, c := range []struct{ name, metric string }{
		{"QueryGPUPCIeTxBytesAvg", "DCGM_FI_PROF_PCIE_TX_BYTES"}, {"QueryGPUPCIeRxBytesAvg", "DCGM_FI_PROF_PCIE_RX_BYTES"},
		{"QueryGPUNVLinkTxBytesAvg", "DCGM_FI_PROF_NVLINK_TX_BYTES"}, {"QueryGPUNVLinkRxBytesAvg", "DCGM_FI_PROF_NVLINK_RX_BYTES"},
	} {
		qs = append(qs, openCostQuery{c.name, fmt.Sprintf(`avg(rate(%s{container!="",%s}[%s])) by (%s, %s)`, c.metric, filter, window, saturation, label)})
	}
	return qs
}

// openCostCluster is OpenCost's cluster label; each naming's exporters
// are scraped as a cluster of their own, so OpenCost's cluster filter
// selects one naming.
const openCostCluster = "cluster_id"

// TestOpenCostQueries runs OpenCost's GPU queries against a real
// Prometheus scraping the simulator's MIG node (MIG instances and a whole
// GPU) and its demo node (whole GPUs) twice: with Prometheus naming and
// rules/opencost.yaml (cluster "prometheus"), and with --naming=dcgm and no
// rules (cluster "dcgm"). Every query returns data for both, with the
// same groups (device, MIG instance, holder), and values of the same size:
// the rules write what dcgm naming exports, in its units.
func TestOpenCostQueries(t *testing.T) {
	recording, err := rules.Raw(rules.OpenCostFile)
	if err != nil {
		t.Fatal(err)
	}
	counters := filepath.Join(t.TempDir(), "counters.csv")
	if err := os.WriteFile(counters, []byte(openCostCounters), 0o644); err != nil {
		t.Fatal(err)
	}
	var targets []simTarget
	for _, naming := range []string{"prometheus", "dcgm"} {
		for _, scenario := range []string{"mig", "demo"} {
			targets = append(targets, simTarget{scenario: scenario,
				args:   []string{"--naming=" + naming, "--collect.counters=" + counters},
				labels: map[string]string{openCostCluster: naming}})
		}
	}
	s := startSimPrometheus(t, targets, map[string][]byte{rules.OpenCostFile: recording})

	const window = time.Minute
	results := map[string]map[string][]sample{} // naming -> query -> samples
	poll.Problems(t, 150*time.Second, 2*time.Second, func() []string {
		var problems []string
		// The rules read no series of the dcgm-naming targets.
		if r, err := s.query(fmt.Sprintf(`{__name__=~"gpu_.+", __name__!~"gpu_exporter_.+", %s="dcgm"}`, openCostCluster)); err != nil || len(r) > 0 {
			problems = append(problems, fmt.Sprintf("dcgm naming exports gpu_* series: %v %v", err, r))
		}
		for _, naming := range []string{"prometheus", "dcgm"} {
			results[naming] = map[string][]sample{}
			filter := fmt.Sprintf(`%s="%s"`, openCostCluster, naming)
			for _, q := range openCostQueries(filter, openCostCluster, "1m", window.Seconds(), 1) {
				r, err := s.query(q.query)
				if err != nil {
					problems = append(problems, fmt.Sprintf("%s: %v", q.name, err))
					continue
				}
				// QueryGPUsUsageAvg has no cluster filter: keep this cluster's groups.
				r = slices.DeleteFunc(r, func(x sample) bool { return x.labels[openCostCluster] != naming })
				if len(r) == 0 {
					problems = append(problems, fmt.Sprintf("%s under %s naming: no data: %s", q.name, naming, q.query))
				}
				results[naming][q.name] = r
			}
		}
		if len(problems) > 0 {
			return problems
		}
		return compareOpenCostResults(results["prometheus"], results["dcgm"])
	})
}

// migGroups are the queries that group by MIG instance and read a field
// the simulator's MIG nodes report: the device queries and the saturation
// queries of memory and profiling fields. (QueryGPUInfo does not group by
// GPU_I_ID; the simulator's MIG GPUs have no violation counters, under
// either naming.)
var migGroups = map[string]bool{
	"QueryGPUDevicePowerAvg": true, "QueryGPUDeviceTempAvg": true,
	"QueryGPUDeviceUsageAvg": true, "QueryGPUDeviceUsageMax": true,
	"QueryGPUDeviceMemoryUsedAvg": true, "QueryGPUDeviceMemoryUsedMax": true,
	"QueryGPUThrottleReasonRatio": true, "QueryGPUMemoryUsedRatioAvg": true,
	"QueryGPUMemoryUsedRatioMax": true, "QueryGPUMemoryPressureRatio": true,
	"QueryGPUXIDErrorCount": true, "QueryGPUDRAMActiveAvg": true,
	"QueryGPUDRAMActiveMax": true, "QueryGPUSMActiveAvg": true,
	"QueryGPUSMOccupancyAvg": true, "QueryGPUPCIeTxBytesAvg": true,
	"QueryGPUPCIeRxBytesAvg": true, "QueryGPUNVLinkTxBytesAvg": true,
	"QueryGPUNVLinkRxBytesAvg": true,
}

// noisy are the queries whose values two simulators a moment apart need
// not agree on: rate() of the PCIe and NVLink gauges follows their noise,
// and the memory pressure ratio is 0 or 1 for a GPU whose memory is near
// the threshold. Only their groups are compared.
var noisy = map[string]bool{
	"QueryGPUPCIeTxBytesAvg": true, "QueryGPUPCIeRxBytesAvg": true,
	"QueryGPUNVLinkTxBytesAvg": true, "QueryGPUNVLinkRxBytesAvg": true,
	"QueryGPUMemoryPressureRatio": true,
}

// compareOpenCostResults: both namings give each query the same groups,
// among them MIG instances and whole GPUs where the query groups by MIG
// instance, and values of the same size (a unit slip is a factor of 100 or
// more) except for the noisy queries.
func compareOpenCostResults(prom, dcgm map[string][]sample) []string {
	var problems []string
	key := func(x sample) string {
		var kv []string
		for k, v := range x.labels {
			if k != openCostCluster {
				kv = append(kv, k+"="+v)
			}
		}
		sort.Strings(kv)
		return strings.Join(kv, ",")
	}
	for name, ps := range prom {
		pv := map[string]float64{}
		mig, whole := false, false
		for _, x := range ps {
			pv[key(x)] = x.value
			if x.labels["GPU_I_ID"] != "" {
				mig = true
			} else {
				whole = true
			}
		}
		if migGroups[name] && (!mig || !whole) {
			problems = append(problems, fmt.Sprintf("%s: MIG instance groups %v, whole GPU groups %v; want both", name, mig, whole))
		}
		dv := map[string]float64{}
		for _, x := range dcgm[name] {
			dv[key(x)] = x.value
		}
		for k, v := range pv {
			d, ok := dv[k]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s: group {%s} under Prometheus naming and rules only", name, k))
			case !noisy[name] && !sameSize(v, d):
				problems = append(problems, fmt.Sprintf("%s: group {%s}: %g under Prometheus naming and rules, %g under dcgm naming", name, k, v, d))
			}
		}
		for k := range dv {
			if _, ok := pv[k]; !ok {
				problems = append(problems, fmt.Sprintf("%s: group {%s} under dcgm naming only", name, k))
			}
		}
	}
	return problems
}

// sameSize: within a factor of 4, or both near zero; the two simulators
// run the same scenario a moment apart, so values differ a little, while a
// wrong unit differs by 100 (percent), 2^20 (MiB) or 10^9 (ns).
func sameSize(a, b float64) bool {
	const tiny = 1e-6
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if math.Abs(a) < tiny || math.Abs(b) < tiny {
		return math.Abs(a-b) < 1
	}
	r := a / b
	return r > 0.25 && r < 4
}
