package exposition

import (
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

// splitInput is issue 30's H200: GPU instance 2 (3g.71gb) split into
// compute instances 0 and 1, a pod on each.
func splitInput(t *testing.T) Input {
	t.Helper()
	s := testSample(t, 1, []fields.Field{mustField(t, "DCGM_FI_DEV_FB_USED")})
	g := &s.Inventory.Entities[0]
	g.Model = "NVIDIA H200"
	s.Inventory.Entities = append(s.Inventory.Entities, source.Entity{
		Kind: source.GPUInstance, GPU: 0, UUID: g.UUID, Device: g.Device, Model: g.Model, PCIBusID: g.PCIBusID,
		GPUInstance: 2, ComputeInstance: -1, MIGProfile: "3g.71gb",
	})
	s.Inventory.MIGDevices = []source.MIGDevice{
		{GPU: 0, GPUInstance: 2, ComputeInstance: 0, Profile: "1c.3g.71gb", UUID: "MIG-ci0"},
		{GPU: 0, GPUInstance: 2, ComputeInstance: 1, Profile: "2c.3g.71gb", UUID: "MIG-ci1"},
	}
	s.Values = append(s.Values, source.IntValue(13))
	return Input{Sample: s, Holdings: []Holding{{Entity: 0},
		{Entity: 1, Holder: &Holder{Namespace: "ml", Pod: "on-ci0", Container: "c"}, Shared: true},
		{Entity: 1, Holder: &Holder{Namespace: "ml", Pod: "on-ci1", Container: "c"}, Shared: true}}}
}

// Under dcgm naming a split instance's series are dcgm-exporter's: one per
// holding pod, labelled with the GPU instance (GPU_I_PROFILE, GPU_I_ID)
// and no compute-instance label, as dcgm-exporter watches only
// DCGM_FE_GPU_I entities and maps each compute instance's MIG UUID to its
// GPU instance (internal/pkg/transformation/kubernetes.go,
// GetGPUInstanceIdentifier).
func TestSplitInstanceDCGMNaming(t *testing.T) {
	t.Parallel()
	p := dcgmRenderer(DCGMOptions{}).Render(splitInput(t))
	for _, pod := range []string{"on-ci0", "on-ci1"} {
		want := `DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-00000000-0000-0000-0000-000000000000",pci_bus_id="00000000:3B:00.0",device="nvidia0",modelName="NVIDIA H200",GPU_I_PROFILE="3g.71gb",GPU_I_ID="2",container="c",namespace="ml",pod="` + pod + `"} 13` + "\n"
		if !strings.Contains(string(p.Text), want) {
			t.Errorf("page lacks %s\n%s", want, p.Text)
		}
	}
	if strings.Contains(string(p.Text), "MIG-ci") || strings.Contains(string(p.Text), "1c.3g") {
		t.Errorf("dcgm naming shows compute instances:\n%s", p.Text)
	}
	parseText(t, p.Text)
}

func TestSplitInstancePrometheusNaming(t *testing.T) {
	t.Parallel()
	p := NewRenderer(Options{}).Render(splitInput(t))
	text := string(p.Text)
	labels := `gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000",device="nvidia0",model="NVIDIA H200",gpu_instance="2",mig_profile="3g.71gb"`
	for _, want := range []string{
		"gpu_mig_instance_info{" + labels + "} 1\n",
		"gpu_mig_device_info{" + labels + `,compute_instance="0",compute_profile="1c.3g.71gb",mig_uuid="MIG-ci0"} 1` + "\n",
		"gpu_mig_device_info{" + labels + `,compute_instance="1",compute_profile="2c.3g.71gb",mig_uuid="MIG-ci1"} 1` + "\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %s\n%s", want, text)
		}
	}
	parseText(t, p.Text)
}
