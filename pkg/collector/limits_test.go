package collector

import (
	"context"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/processes"
)

// TestCollectorKAIMemoryShare: a KAI Scheduler fraction (GPU_PORTION, a
// share of the device's memory) becomes gpu_container_memory_limit_bytes
// with mechanism="kai" from the device's total memory in the inventory;
// on a device whose total memory is unknown it gives no series, and a
// limit in bytes (HAMi's) is kept as it is.
func TestCollectorKAIMemoryShare(t *testing.T) {
	t.Parallel()
	src := newFakeSource(2)
	src.inv.Entities[0].MemoryBytes = 81920 << 20 // an A100 80GB: 81920 MiB
	uuid0, uuid1 := src.inv.Entities[0].UUID, src.inv.Entities[1].UUID
	train := processes.Who{Namespace: "ml", Pod: "frac-train", Container: "train"}
	notebook := processes.Who{Namespace: "research", Pod: "frac-notebook", Container: "notebook"}
	isolated := processes.Who{Namespace: "ml", Pod: "isolated", Container: "main"}
	acc := &fakeAccounting{devs: []processes.DeviceUsage{
		{UUID: uuid0, GPU: 0, GPUInstance: -1, Containers: []processes.Usage{
			{Who: train, Processes: 1, MemoryBytes: 36000 << 20, MemoryKnown: true, Mechanism: processes.MechanismKAI, MemoryShare: 0.5},
			{Who: notebook, Processes: 1, MemoryBytes: 9000 << 20, MemoryKnown: true, Mechanism: processes.MechanismKAI, MemoryShare: 0.27},
			{Who: isolated, Processes: 1, MemoryBytes: 1 << 30, MemoryKnown: true, Mechanism: processes.MechanismHAMi, MemoryLimitBytes: 4147 << 20},
		}},
		{UUID: uuid1, GPU: 1, GPUInstance: -1, Containers: []processes.Usage{
			{Who: train, Processes: 1, MemoryBytes: 1 << 30, MemoryKnown: true, Mechanism: processes.MechanismKAI, MemoryShare: 0.5},
		}},
	}}
	c, _, _ := newProcessCollector(t, src, acc, exposition.NamingPrometheus)
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	text := string(c.Page().Text)
	labels := func(uuid, gpu string, w processes.Who, mech string) string {
		return `gpu_container_memory_limit_bytes{gpu="` + gpu + `",uuid="` + uuid + `",device="nvidia` + gpu + `",model="NVIDIA H100 80GB HBM3",namespace="` +
			w.Namespace + `",pod="` + w.Pod + `",container="` + w.Container + `",mechanism="` + mech + `"} `
	}
	for _, want := range []string{
		labels(uuid0, "0", train, "kai") + "4.294967296e+10",     // 40960 MiB
		labels(uuid0, "0", notebook, "kai") + "2.3192823398e+10", // floor(0.27 × 81920 MiB)
		labels(uuid0, "0", isolated, "hami") + "4.348444672e+09", // 4147 MiB
	} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(text, `gpu_container_memory_limit_bytes{gpu="1"`) {
		t.Error("a share of a GPU with unknown total memory was rendered")
	}
}
