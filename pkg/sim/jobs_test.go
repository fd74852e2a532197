package sim

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/hpcjobs"
)

const migGPU = `name: t
gpus:
  - model: "NVIDIA A100-SXM4-80GB"
    memory_mib: 81920
  - model: "NVIDIA A100-SXM4-80GB"
    memory_mib: 81920
    mig:
      - {gpu_instance: 7, profile: 1g.10gb, memory_mib: 9856}
`

func TestJobsAt(t *testing.T) {
	t.Parallel()
	scn, err := Parse("t.yaml", []byte(migGPU+`jobs:
  - {id: 1, user: alice, partition: gpu, gpus: [0]}
  - {id: "2_3", mig: [{gpu: 1, gpu_instance: 7}], from: 10s, until: 20s}
  - {id: "4+1", user: bob, gpus: [0, 1], from: 5s, until: 10s, repeat: 30s}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !scn.HasJobs() {
		t.Fatal("HasJobs is false")
	}
	alice := Job{Job: hpcjobs.Job{ID: "1", User: "alice", Partition: "gpu"}, GPUs: []hpcjobs.Key{{GPU: 0, Instance: -1}}}
	mig := Job{Job: hpcjobs.Job{ID: "2_3"}, GPUs: []hpcjobs.Key{{GPU: 1, Instance: 7}}}
	bob := Job{Job: hpcjobs.Job{ID: "4+1", User: "bob"}, GPUs: []hpcjobs.Key{{GPU: 0, Instance: -1}, {GPU: 1, Instance: -1}}}
	for _, tc := range []struct {
		at   time.Duration
		want []Job
	}{
		{0, []Job{alice}},
		{5 * time.Second, []Job{alice, bob}},
		{10 * time.Second, []Job{alice, mig}},
		{20 * time.Second, []Job{alice}},
		{36 * time.Second, []Job{alice, bob}}, // bob recurs every 30 s
	} {
		got := scn.JobsAt(tc.at)
		if !slices.EqualFunc(got, tc.want, func(a, b Job) bool { return a.Job == b.Job && slices.Equal(a.GPUs, b.GPUs) }) {
			t.Errorf("JobsAt(%s) = %+v, want %+v", tc.at, got, tc.want)
		}
	}
	if scn, _ := Parse("t.yaml", []byte(oneGPU)); scn.HasJobs() {
		t.Error("a scenario without jobs has jobs")
	}
}

func TestJobParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want string
	}{
		{"no id", "jobs:\n  - {gpus: [0]}\n", `missing key "id"`},
		{"no GPU", "jobs:\n  - {id: 1}\n", "a job needs gpus or mig"},
		{"unknown GPU", "jobs:\n  - {id: 1, gpus: [2]}\n", "GPU 2 does not exist"},
		{"unknown instance", "jobs:\n  - {id: 1, mig: [{gpu: 1, gpu_instance: 3}]}\n", "GPU 1 has no MIG instance 3"},
		{"id with a blank", "jobs:\n  - {id: \"1 2\", gpus: [0]}\n", `"1 2" is not one word`},
		{"user with =", "jobs:\n  - {id: 1, user: \"a=b\", gpus: [0]}\n", `"a=b" is not one word`},
		{"comment id", "jobs:\n  - {id: \"#1\", gpus: [0]}\n", `"#1" is not one word`},
		{"duplicate id", "jobs:\n  - {id: 1, gpus: [0]}\n  - {id: 1, gpus: [1]}\n", "job 1 is also jobs[0]"},
		{"until before from", "jobs:\n  - {id: 1, gpus: [0], from: 5s, until: 1s}\n", "until 1s is not after from 5s"},
		{"unknown key", "jobs:\n  - {id: 1, gpus: [0], account: x}\n", `unknown key "account"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("bad.yaml", []byte(migGPU+tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bad.yaml:") {
				t.Errorf("error %v, want one naming bad.yaml:<line> with %q", err, tc.want)
			}
		})
	}
}
