//go:build cgo && linux

package nvml

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// Each NVLink error field reads its own counter, per link
// (nvmlDeviceGetNvLinkErrorCounter) and over all links (the GPU's
// nvmlDeviceGetFieldValues id that DCGM's field table gives it): every
// counter holds a different value, so a field reading its neighbour's
// counter reads a wrong number. TestNVLinks leaves field 419 and the GPU
// totals but 409 unchecked. Kills a swapped row in linkCounters or
// fieldValueTable (issue 34).
func TestMutationNVLinkFieldsReadTheirOwnCounters(t *testing.T) {
	t.Parallel()
	n := nvlinkNode()
	n.update(func() {
		g := n.gpus[0]
		// Indexed by nvml.NvLinkErrorCounter (nvml.h nvmlNvLinkErrorCounter_t).
		g.links[0].errors[nvml.NVLINK_ERROR_DL_REPLAY] = 101
		g.links[0].errors[nvml.NVLINK_ERROR_DL_RECOVERY] = 102
		g.links[0].errors[nvml.NVLINK_ERROR_DL_CRC_FLIT] = 103
		g.links[0].errors[nvml.NVLINK_ERROR_DL_CRC_DATA] = 104
		g.fv[nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL] = ull(201)
		g.fv[nvml.FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL] = ull(202)
		g.fv[nvml.FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL] = ull(203)
		g.fv[nvml.FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL] = ull(204)
	})
	src, _ := open(t, n, testConfig())
	watch(t, src, "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
		"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL")
	s := read(t, src)
	for _, v := range []struct {
		key  string
		id   uint16
		want int64
	}{
		{"link:0:0", 409, 103}, // CRC flit
		{"link:0:0", 419, 104}, // CRC data
		{"link:0:0", 429, 101}, // replay
		{"link:0:0", 439, 102}, // recovery
		{"gpu:0", 409, 201},
		{"gpu:0", 419, 202},
		{"gpu:0", 429, 203},
		{"gpu:0", 439, 204},
	} {
		if got := value(t, s, v.key, v.id); got != source.IntValue(v.want) {
			t.Errorf("%s field %d = %+v, want %d", v.key, v.id, got, v.want)
		}
	}
}
