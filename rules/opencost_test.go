package rules_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/rules"
)

// openCostFamilies are the dcgm-exporter families OpenCost's Prometheus
// source queries (opencost/opencost modules/prometheus-source/pkg/prom:
// metricsquerier.go at 1ea64d02 (QueryGPUsUsageAvg, QueryGPUInfo),
// gpudevicequerier.go at c0fed084, gpusaturationquerier.go at 0d0dfc6a);
// docs/opencost.md lists the queries.
var openCostFamilies = []string{
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_DEC_UTIL",
	"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP",
	"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
	"DCGM_FI_DEV_POWER_VIOLATION", "DCGM_FI_DEV_THERMAL_VIOLATION",
	"DCGM_FI_DEV_SYNC_BOOST_VIOLATION", "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION",
	"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_XID_ERRORS",
	"DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY",
	"DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES",
	"DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES",
}

// scaleOp finds a multiplication or division by a number.
var scaleOp = regexp.MustCompile(`[*/] [0-9][0-9.e+]*`)

// dcgmUnit is the operation that takes a gpu_* value back to DCGM's unit:
// the inverse of the field's Scale (pkg/fields), as the rules write it.
func dcgmUnit(f fields.Field) (string, error) {
	switch f.Scale {
	case 1:
		return "", nil
	case 0.01:
		return "* 100", nil
	case 1 << 20:
		return "/ 1048576", nil
	case 1e-9:
		return "* 1e9", nil
	}
	return "", fmt.Errorf("%s: no rule spelling for scale %g", f.DCGMName, f.Scale)
}

// TestOpenCostRulesFollowCatalog: rules/opencost.yaml records every family
// OpenCost queries, once, each from the field's gpu_* name with the
// inverse of its catalog scale (and no other scale), the clock event
// bitmask with the catalog's bits, and renames every entity label.
func TestOpenCostRulesFollowCatalog(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	byRecord := map[string]rules.Rule{}
	for _, r := range load(t, rules.OpenCostFile).Rules() {
		if r.Alert != "" {
			t.Errorf("%s: an alert in %s", r.Alert, rules.OpenCostFile)
			continue
		}
		if _, dup := byRecord[r.Record]; dup {
			t.Errorf("%s recorded twice", r.Record)
		}
		byRecord[r.Record] = r
	}
	for _, name := range openCostFamilies {
		r, ok := byRecord[name]
		if !ok {
			t.Errorf("%s, which OpenCost queries, has no rule", name)
			continue
		}
		delete(byRecord, name)
		f, ok := cat.Lookup(name)
		if !ok || f.DCGMName != name {
			t.Errorf("%s is not a field of the catalog", name)
			continue
		}
		if !mentions(r.Expr, f.Name) {
			t.Errorf("%s does not read %s: %s", name, f.Name, r.Expr)
		}
		unit, err := dcgmUnit(f)
		if err != nil {
			t.Error(err)
			continue
		}
		allowed := map[string]bool{unit: true}
		for _, reason := range f.Reasons {
			allowed[fmt.Sprintf("* %d", reason.Bit)] = true
			if want := fmt.Sprintf(`%s{reason=%q} * %d`, f.Name, reason.Name, reason.Bit); !strings.Contains(r.Expr, want) {
				t.Errorf("%s lacks %s", name, want)
			}
		}
		for _, op := range scaleOp.FindAllString(r.Expr, -1) {
			if !allowed[op] {
				t.Errorf("%s (DCGM unit %s, want %q): the expression scales by %q", name, f.DCGMUnit(), unit, op)
			}
		}
		if unit != "" && !strings.Contains(r.Expr, unit) {
			t.Errorf("%s (DCGM unit %s): the expression lacks %q", name, f.DCGMUnit(), unit)
		}
		for _, l := range []string{`"UUID", "$1", "uuid"`, `"modelName", "$1", "model"`, `"GPU_I_PROFILE", "$1", "mig_profile"`, `"GPU_I_ID", "$1", "gpu_instance"`, `"device", "nvidia$1", "gpu"`} {
			if !strings.Contains(r.Expr, l) {
				t.Errorf("%s does not rename %s", name, l)
			}
		}
	}
	for name := range byRecord {
		t.Errorf("%s: recorded, but OpenCost does not query it", name)
	}
}
