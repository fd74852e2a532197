package collector

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpu-exporter/gpu-exporter/pkg/exposition"
	"github.com/gpu-exporter/gpu-exporter/pkg/hpcjobs"
	"github.com/gpu-exporter/gpu-exporter/pkg/podresources"
)

// jobTable is a JobAttribution whose table the test swaps.
type jobTable struct{ t atomic.Pointer[hpcjobs.Table] }

func (j *jobTable) Table() *hpcjobs.Table { return j.t.Load() }

// HPC jobs join like pods: one series per job holding a GPU, a GPU in two
// jobs (or in a job and a pod) marked shared, a free GPU unchanged, and a
// new table (jobs ending and starting) relabelling at the next collection.
func TestJoinWithHPCJobs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		naming exposition.Naming
		series []string // on the first page
		after  []string // after job 7 ended and job 9 started on GPU 2
		gone   []string
	}{
		{
			naming: exposition.NamingPrometheus,
			series: []string{
				`gpu_utilization_ratio{gpu="0",uuid="GPU-aaaaaaaa-0000-0000-0000-000000000000",device="nvidia0",model="NVIDIA H100 80GB HBM3",hpc_job="7",hpc_partition="gpu",hpc_user="alice"} 0`,
				`gpu_utilization_ratio{gpu="0",uuid="GPU-aaaaaaaa-0000-0000-0000-000000000000",device="nvidia0",model="NVIDIA H100 80GB HBM3",hpc_job="8"} 0`,
				`gpu_pod_allocation_info{gpu="0",uuid="GPU-aaaaaaaa-0000-0000-0000-000000000000",device="nvidia0",model="NVIDIA H100 80GB HBM3",hpc_job="8",shared="true"} 1`,
				`gpu_utilization_ratio{gpu="1",uuid="GPU-bbbbbbbb-0000-0000-0000-000000000000",device="nvidia1",model="NVIDIA H100 80GB HBM3",namespace="ml",pod="trainer",container="main"} 0.1`,
				`gpu_utilization_ratio{gpu="1",uuid="GPU-bbbbbbbb-0000-0000-0000-000000000000",device="nvidia1",model="NVIDIA H100 80GB HBM3",hpc_job="8"} 0.1`,
				`gpu_pod_allocation_info{gpu="1",uuid="GPU-bbbbbbbb-0000-0000-0000-000000000000",device="nvidia1",model="NVIDIA H100 80GB HBM3",namespace="ml",pod="trainer",container="main",shared="true"} 1`,
				`gpu_utilization_ratio{gpu="2",uuid="GPU-cccccccc-0000-0000-0000-000000000000",device="nvidia2",model="NVIDIA H100 80GB HBM3"} 0.2`,
			},
			after: []string{
				`gpu_pod_allocation_info{gpu="0",uuid="GPU-aaaaaaaa-0000-0000-0000-000000000000",device="nvidia0",model="NVIDIA H100 80GB HBM3",hpc_job="8",shared="false"} 1`,
				`gpu_utilization_ratio{gpu="2",uuid="GPU-cccccccc-0000-0000-0000-000000000000",device="nvidia2",model="NVIDIA H100 80GB HBM3",hpc_job="9"} 0.2`,
			},
			gone: []string{`hpc_job="7"`, `gpu_utilization_ratio{gpu="2",uuid="GPU-cccccccc-0000-0000-0000-000000000000",device="nvidia2",model="NVIDIA H100 80GB HBM3"} `},
		},
		{
			// dcgm-exporter's label name, its attributes after the fixed labels.
			naming: exposition.NamingDCGM,
			series: []string{
				`DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-aaaaaaaa-0000-0000-0000-000000000000",pci_bus_id="",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hpc_job="7",hpc_partition="gpu",hpc_user="alice"} 0`,
				`DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-aaaaaaaa-0000-0000-0000-000000000000",pci_bus_id="",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hpc_job="8"} 0`,
				`DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-bbbbbbbb-0000-0000-0000-000000000000",pci_bus_id="",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",hpc_job="8"} 10`,
			},
			after: []string{`DCGM_FI_DEV_GPU_UTIL{gpu="2",UUID="GPU-cccccccc-0000-0000-0000-000000000000",pci_bus_id="",device="nvidia2",modelName="NVIDIA H100 80GB HBM3",hpc_job="9"} 20`},
			gone:  []string{`hpc_job="7"`},
		},
	} {
		t.Run(tc.naming.String(), func(t *testing.T) {
			t.Parallel()
			src := newFakeSource(3)
			resp := &podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{{
				Name: "trainer", Namespace: "ml",
				Containers: []*podresourcesv1.ContainerResources{{
					Name:    "main",
					Devices: []*podresourcesv1.ContainerDevices{{ResourceName: "nvidia.com/gpu", DeviceIds: []string{src.inv.Entities[1].UUID}}},
				}},
			}}}
			pods := podresources.NewTable(resp, []string{"nvidia.com/gpu"}, podresources.IDTypeUID)
			jobs := &jobTable{}
			jobs.t.Store(hpcjobs.NewTable(map[hpcjobs.Key][]hpcjobs.Job{
				{GPU: 0, Instance: -1}: {{ID: "8"}, {ID: "7", User: "alice", Partition: "gpu"}},
				{GPU: 1, Instance: -1}: {{ID: "8"}},
			}))
			c, err := New(Config{Interval: time.Hour, Fields: testFields(t), Naming: tc.naming, Jobs: jobs},
				src, staticAttribution{pods}, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Collect(context.Background()); err != nil {
				t.Fatal(err)
			}
			expect(t, string(c.Page().Text), tc.series, nil)

			jobs.t.Store(hpcjobs.NewTable(map[hpcjobs.Key][]hpcjobs.Job{
				{GPU: 0, Instance: -1}: {{ID: "8"}},
				{GPU: 1, Instance: -1}: {{ID: "8"}},
				{GPU: 2, Instance: -1}: {{ID: "9"}},
			}))
			if err := c.Collect(context.Background()); err != nil {
				t.Fatal(err)
			}
			expect(t, string(c.Page().Text), tc.after, tc.gone)
		})
	}
}

func expect(t *testing.T, text string, want, gone []string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(text, s+"\n") {
			t.Errorf("page lacks\n  %s\npage:\n%s", s, text)
		}
	}
	for _, s := range gone {
		if strings.Contains(text, s) {
			t.Errorf("page still holds %s:\n%s", s, text)
		}
	}
}

// A mapping file for a GPU the node does not have is counted, and the
// gauge exists only with job attribution on.
func TestHPCJobsUnmatched(t *testing.T) {
	t.Parallel()
	src := newFakeSource(2)
	jobs := &jobTable{}
	jobs.t.Store(hpcjobs.NewTable(map[hpcjobs.Key][]hpcjobs.Job{
		{GPU: 1, Instance: -1}: {{ID: "8"}},
		{GPU: 7, Instance: -1}: {{ID: "9"}}, // no GPU 7
		{GPU: 1, Instance: 2}:  {{ID: "9"}}, // GPU 1 has no MIG instance 2
	}))
	reg := prometheus.NewRegistry()
	c, err := New(Config{Interval: time.Hour, Fields: testFields(t), Jobs: jobs}, src, nil, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(c.m.jobsUnmatched); got != 2 {
		t.Errorf("unmatched files = %v, want 2", got)
	}
	jobs.t.Store(hpcjobs.NewTable(map[hpcjobs.Key][]hpcjobs.Job{{GPU: 1, Instance: -1}: {{ID: "8"}}}))
	if err := c.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(c.m.jobsUnmatched); got != 0 {
		t.Errorf("unmatched files = %v, want 0", got)
	}
	if n, _ := testutil.GatherAndCount(reg, "gpu_exporter_hpc_job_mapping_unmatched_files"); n != 1 {
		t.Errorf("gauge registered %d times with jobs on, want 1", n)
	}
	off := prometheus.NewRegistry()
	if _, err := New(Config{Interval: time.Hour, Fields: testFields(t)}, src, nil, slog.New(slog.DiscardHandler), off); err != nil {
		t.Fatal(err)
	}
	if n, _ := testutil.GatherAndCount(off, "gpu_exporter_hpc_job_mapping_unmatched_files"); n != 0 {
		t.Errorf("gauge registered without job attribution")
	}
}
