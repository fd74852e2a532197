package exposition

import (
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// Under the dcgm naming, `device` is "nvidia" and the GPU's index, not its
// device minor number: dcgm-exporter writes GPUDevice as
// fmt.Sprintf("nvidia%d", d.GPU) with d the dcgm.Device whose GPU is
// DCGM's GPU id (NVIDIA/dcgm-exporter internal/pkg/collector, toMetric),
// for GPUs, their MIG instances and their NVLinks alike. The minor number
// differs from the index when NVML orders GPUs by PCI bus and the driver
// numbered the device nodes otherwise. Kills `device` taken from
// Entity.Device (issue 34); the prometheus naming keeps the node name.
func TestMutationDCGMDeviceLabelIsTheIndex(t *testing.T) {
	t.Parallel()
	set := []fields.Field{mustField(t, "DCGM_FI_DEV_GPU_UTIL")}
	s := testSample(t, 2, set)
	s.Inventory.Entities[0].Device = "nvidia3" // index 0, minor 3
	s.Inventory.Entities[1].Device = "nvidia0" // index 1, minor 0
	p := dcgmRenderer(DCGMOptions{}).Render(Input{Sample: s, Holdings: allTargets(s)})
	for gpu, want := range map[string]string{"0": `device="nvidia0"`, "1": `device="nvidia1"`} {
		if l := seriesLine(t, p.Text, `DCGM_FI_DEV_GPU_UTIL{gpu="`+gpu+`"`); !strings.Contains(l, want) {
			t.Errorf("dcgm naming, GPU %s: %s, want %s", gpu, l, want)
		}
	}
	p = NewRenderer(Options{}).Render(Input{Sample: s, Holdings: allTargets(s)})
	if l := seriesLine(t, p.Text, `gpu_utilization_ratio{gpu="0"`); !strings.Contains(l, `device="nvidia3"`) {
		t.Errorf("prometheus naming, GPU 0: %s, want the device node nvidia3", l)
	}
}
