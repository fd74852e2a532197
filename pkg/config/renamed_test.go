package config

import (
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// renamedInDCGM46 pairs the name of each row of dcgm-exporter's shipped
// counters files (testdata/dcgm-exporter, tag 4.5.3-4.8.2) that DCGM 4.6
// renamed with its new name and field id, from the "Deprecated: renamed per
// DCGM Field Naming Standard" block of dcgm_fields.h (go-dcgm v1.4611.0,
// line 3691 on; NVIDIA/DCGM v4.6.0 dcgmlib/dcgm_fields.h).
var renamedInDCGM46 = []struct {
	old, new string
	id       uint16
}{
	{"DCGM_FI_DEV_BRAND", "DCGM_FI_DEV_GPU_BRAND", 51},
	{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL", 394},
	{"DCGM_FI_DEV_ECC_INFOROM_VER", "DCGM_FI_DEV_INFOROM_ECC_VERSION", 80},
	{"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_TEMP_CELSIUS", 150},
	{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO", 203},
	{"DCGM_FI_DEV_INFOROM_IMAGE_VER", "DCGM_FI_DEV_INFOROM_IMAGE_VERSION", 82},
	{"DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", 140},
	{"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL", 419},
	{"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL", 409},
	{"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL", 439},
	{"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL", 429},
	{"DCGM_FI_DEV_OEM_INFOROM_VER", "DCGM_FI_DEV_INFOROM_OEM_VERSION", 56},
	{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_PCIE_REPLAY_TOTAL", 202},
	{"DCGM_FI_DEV_POWER_INFOROM_VER", "DCGM_FI_DEV_INFOROM_POWER_VERSION", 81},
	{"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_BOARD_POWER_WATTS", 155},
	{"DCGM_FI_DEV_RETIRED_DBE", "DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL", 391},
	{"DCGM_FI_DEV_RETIRED_PENDING", "DCGM_FI_DEV_PAGE_RETIRED_PENDING", 392},
	{"DCGM_FI_DEV_RETIRED_SBE", "DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL", 390},
	{"DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ROW_REMAP_FAILED", 395},
	{"DCGM_FI_DEV_SERIAL", "DCGM_FI_DEV_BOARD_SERIAL", 53},
	{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL", 393},
	{"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_XID_ERROR", 230},
	{"DCGM_FI_DRIVER_VERSION", "DCGM_FI_SYSTEM_DRIVER_VERSION", 1},
	{"DCGM_FI_NVML_VERSION", "DCGM_FI_SYSTEM_NVML_VERSION", 2},
	{"DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_DRAM_UTIL_RATIO", 1005},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", 1001},
	{"DCGM_FI_PROF_PIPE_FP16_ACTIVE", "DCGM_FI_PROF_FP16_UTIL_RATIO", 1008},
	{"DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_FP32_UTIL_RATIO", 1007},
	{"DCGM_FI_PROF_PIPE_FP64_ACTIVE", "DCGM_FI_PROF_FP64_UTIL_RATIO", 1006},
	{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_TENSOR_UTIL_RATIO", 1004},
	{"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_UTIL_RATIO", 1002},
	{"DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_SM_OCCUPANCY_RATIO", 1003},
}

// TestDCGM46NamesLoad: a counters file written with DCGM 4.6's new names
// loads, each row as the field the old name reads, and keeps the file's
// spelling, which dcgm naming prints.
func TestDCGM46NamesLoad(t *testing.T) {
	t.Parallel()
	cat := fields.MustNew()
	for _, r := range renamedInDCGM46 {
		// The second row keeps the file loadable when the first is a
		// string field, which becomes a label row.
		c, err := ParseCounters("new.csv", strings.NewReader(r.new+", gauge, h\nDCGM_FI_DEV_ROW_REMAP_PENDING, gauge, p\n"), cat)
		if err != nil {
			t.Errorf("%s (DCGM 4.6's name of %s): %v", r.new, r.old, err)
			continue
		}
		got := append(append([]fields.Field(nil), c.Fields[:len(c.Fields)-1]...), c.Labels...)
		if len(got) != 1 || got[0].ID != r.id || got[0].DCGMName != r.new {
			t.Errorf("%s (DCGM 4.6's name of %s, field %d) loaded as %+v, skipped %+v", r.new, r.old, r.id, got, c.Skipped)
		}
	}
}
