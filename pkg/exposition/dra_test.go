package exposition

import (
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/pkg/fields"
)

// A container holding a GPU through a DRA claim: dcgm naming writes
// dcgm-exporter's dra_* labels on the GPU's series (dra_mig_* for a MIG
// device only), sorted among its attributes; Prometheus naming keeps the
// series' labels and states the claim in gpu_dra_claim_info.
func TestDRAClaimLabels(t *testing.T) {
	t.Parallel()
	s := testSample(t, 1, []fields.Field{mustField(t, "DCGM_FI_DEV_GPU_UTIL")})
	whole := DRAClaim{Namespace: "ml", Name: "gpu", Driver: "gpu.nvidia.com", Pool: "node-a", Device: "gpu-0"}
	dynMIG := DRAClaim{Namespace: "ml", Name: "mig", Driver: "gpu.nvidia.com", Pool: "node-a", Device: "gpu-0-mig-1g10gb-me-20-0",
		MIGProfile: "1g.10gb+me"}
	share := whole
	share.Name, share.ShareID = "shared", "2f0b6a83"
	holdings := []Holding{
		{Entity: 0, Holder: &Holder{Namespace: "ml", Pod: "a", Container: "main", DRA: whole}},
		{Entity: 0, Holder: &Holder{Namespace: "ml", Pod: "b", Container: "main", DRA: dynMIG}},
		{Entity: 0, Holder: &Holder{Namespace: "ml", Pod: "c", Container: "main", DRA: share}, Shared: true},
		{Entity: 0, Holder: &Holder{Namespace: "ml", Pod: "d", Container: "main"}},
	}
	dcgm := series(t, NewRenderer(Options{Naming: NamingDCGM}).Render(Input{Sample: s, Holdings: holdings}), "DCGM_FI_DEV_GPU_UTIL{")
	want := []string{
		`container="main",dra_claim_name="gpu",dra_claim_namespace="ml",dra_device_name="gpu-0",dra_driver_name="gpu.nvidia.com",dra_pool_name="node-a",namespace="ml",pod="a"} 1`,
		`container="main",dra_claim_name="mig",dra_claim_namespace="ml",dra_device_name="gpu-0-mig-1g10gb-me-20-0",dra_driver_name="gpu.nvidia.com",dra_mig_device_uuid="",dra_mig_profile="1g.10gb+me",dra_pool_name="node-a",namespace="ml",pod="b"} 1`,
		`container="main",dra_claim_name="shared",dra_claim_namespace="ml",dra_device_name="gpu-0",dra_driver_name="gpu.nvidia.com",dra_pool_name="node-a",namespace="ml",pod="c"} 1`,
		`container="main",namespace="ml",pod="d"} 1`,
	}
	checkTails(t, "dcgm", dcgm, want)

	prom := NewRenderer(Options{Naming: NamingPrometheus}).Render(Input{Sample: s, Holdings: holdings})
	if strings.Contains(string(prom.Text), ",dra_") {
		t.Errorf("prometheus naming wrote a dra_ label:\n%s", prom.Text)
	}
	checkTails(t, "prometheus", series(t, prom, "gpu_dra_claim_info{"), []string{
		`namespace="ml",pod="a",container="main",claim_name="gpu",claim_driver="gpu.nvidia.com",claim_pool="node-a",claim_device="gpu-0"} 1`,
		`namespace="ml",pod="b",container="main",claim_name="mig",claim_driver="gpu.nvidia.com",claim_pool="node-a",claim_device="gpu-0-mig-1g10gb-me-20-0"} 1`,
		`namespace="ml",pod="c",container="main",claim_name="shared",claim_driver="gpu.nvidia.com",claim_pool="node-a",claim_device="gpu-0",claim_share_id="2f0b6a83"} 1`,
	})
}

func series(t *testing.T, p *Page, prefix string) []string {
	t.Helper()
	parseText(t, p.Text)
	var got []string
	for _, l := range strings.Split(string(p.Text), "\n") {
		if strings.HasPrefix(l, prefix) {
			got = append(got, l)
		}
	}
	return got
}

func checkTails(t *testing.T, name string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: series = %q, want %d", name, got, len(want))
	}
	for i, w := range want {
		if !strings.HasSuffix(got[i], ","+w) {
			t.Errorf("%s: series %d = %s, want it to end in %s", name, i, got[i], w)
		}
	}
}
