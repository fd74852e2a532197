package hpcjobs

import "testing"

// A job holding two GPUs and a MIG instance is one job: JobCount and the
// gpu_exporter_hpc_jobs self-metric count distinct ids, not table entries.
// Kills counting each (GPU, job) pair (issue 34).
func TestMutationJobOnSeveralGPUsCountedOnce(t *testing.T) {
	t.Parallel()
	tab := NewTable(map[Key][]Job{
		{GPU: 0, Instance: -1}: {{ID: "4242"}},
		{GPU: 1, Instance: -1}: {{ID: "4242"}, {ID: "77"}},
		{GPU: 2, Instance: 1}:  {{ID: "4242"}},
	})
	if got := tab.JobCount(); got != 2 {
		t.Errorf("JobCount = %d, want 2 (jobs 4242 and 77)", got)
	}

	h := newHarness(t)
	h.write("0", "4242\n")
	h.write("1", "4242\n77\n")
	h.write("2.1", "4242\n")
	h.refresh()
	if got := h.gauge("gpu_exporter_hpc_jobs"); got != 2 {
		t.Errorf("gpu_exporter_hpc_jobs = %v, want 2", got)
	}
}
