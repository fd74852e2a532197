package jobdir

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/hpcjobs"
	"github.com/gpu-exporter/gpu-exporter/pkg/sim"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func job(id, user string, keys ...hpcjobs.Key) sim.Job {
	return sim.Job{Job: hpcjobs.Job{ID: id, User: user}, GPUs: keys}
}

// Sync writes one file per GPU and MIG instance, a line per job, and
// removes the files of GPUs no job holds any more, but never a file it did
// not write.
func TestSync(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "jobs")
	w, err := New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "9"), []byte("operator's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g0, g1, mig := hpcjobs.Key{GPU: 0, Instance: -1}, hpcjobs.Key{GPU: 1, Instance: -1}, hpcjobs.Key{GPU: 1, Instance: 7}
	steps := []struct {
		jobs []sim.Job
		want map[string]string
	}{
		{[]sim.Job{job("1", "alice", g0, g1), job("2", "", g1), job("3", "bob", mig)},
			map[string]string{"0": "1 user=alice\n", "1": "1 user=alice\n2\n", "1.7": "3 user=bob\n", "9": "operator's\n"}},
		{[]sim.Job{job("2", "", g1)}, map[string]string{"1": "2\n", "9": "operator's\n"}},
		{nil, map[string]string{"9": "operator's\n"}},
	}
	for i, s := range steps {
		if err := w.Sync(s.jobs); err != nil {
			t.Fatal(err)
		}
		if got := files(t, dir); !maps.Equal(got, s.want) {
			t.Errorf("step %d: files %q, want %q", i, got, s.want)
		}
	}
}

// Follow keeps the directory in step with the simulator's clock, and the
// exporter's reader sees jobs start and end.
func TestFollowWithTheReader(t *testing.T) {
	t.Parallel()
	scn, err := sim.Parse("t.yaml", []byte(`name: t
gpus:
  - {model: x, memory_mib: 1, count: 2}
jobs:
  - {id: "10", user: alice, partition: gpu, gpus: [0], until: 10s}
  - {id: "11", gpus: [0, 1], from: 5s}
`))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1700000000, 0)
	var mu sync.Mutex
	now := start
	src := sim.New(scn, sim.WithStart(start), sim.WithClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now }))
	dir := t.TempDir()
	w, err := New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Follow(src, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	r, err := hpcjobs.New(hpcjobs.Config{Dir: dir, RefreshInterval: time.Hour}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	gpu := func(i int) *source.Entity { return &source.Entity{Kind: source.GPU, GPU: i} }
	ids := func(jobs []hpcjobs.Job) []string {
		var out []string
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	for _, step := range []struct {
		at         time.Duration
		gpu0, gpu1 []string
	}{
		{0, []string{"10"}, nil},
		{6 * time.Second, []string{"10", "11"}, []string{"11"}},
		{12 * time.Second, []string{"11"}, []string{"11"}},
	} {
		mu.Lock()
		now = start.Add(step.at)
		mu.Unlock()
		poll.Problems(t, 10*time.Second, time.Millisecond, func() []string {
			if err := r.Refresh(context.Background()); err != nil {
				return []string{err.Error()}
			}
			g0, g1 := ids(r.Table().Jobs(gpu(0))), ids(r.Table().Jobs(gpu(1)))
			if slices.Equal(g0, step.gpu0) && slices.Equal(g1, step.gpu1) {
				return nil
			}
			return []string{fmt.Sprintf("at %s: GPU 0 jobs %v, GPU 1 jobs %v; want %v, %v", step.at, g0, g1, step.gpu0, step.gpu1)}
		})
	}
	if j := r.Table().Jobs(gpu(0)); j[0].User != "" {
		t.Errorf("job 11 has user %q", j[0].User)
	}
	w.Stop()
	if got := files(t, dir); len(got) != 0 {
		t.Errorf("Stop left %q", got)
	}
}
