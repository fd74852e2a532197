package source

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLostTracker(t *testing.T) {
	t.Parallel()
	gpu := func(i int, uuid string) Entity { return Entity{Kind: GPU, GPU: i, UUID: uuid} }
	mig := Entity{Kind: GPUInstance, GPU: 1, UUID: "GPU-b", GPUInstance: 3}
	t0 := time.Unix(1000, 0)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var tr LostTracker

	all := []Entity{gpu(0, "GPU-a"), gpu(1, "GPU-b"), mig, gpu(2, "")}
	steps := []struct {
		name     string
		prev     []Entity
		next     []Entity
		at       time.Duration
		wantLost []LostGPU
		wantLog  string
	}{
		{"first inventory", nil, all, 0, []LostGPU{}, ""},
		{"GPU 1 leaves with its instance; GPU 2 has no UUID", all, []Entity{gpu(0, "GPU-a")}, time.Second,
			[]LostGPU{{GPU: 1, UUID: "GPU-b", Since: t0.Add(time.Second)}}, `msg="gpu lost" gpu=1 uuid=GPU-b`},
		{"still gone: since stays", []Entity{gpu(0, "GPU-a")}, []Entity{gpu(0, "GPU-a")}, 2 * time.Second,
			[]LostGPU{{GPU: 1, UUID: "GPU-b", Since: t0.Add(time.Second)}}, ""},
		{"GPU 0 leaves too", []Entity{gpu(0, "GPU-a")}, nil, 3 * time.Second,
			[]LostGPU{{GPU: 0, UUID: "GPU-a", Since: t0.Add(3 * time.Second)}, {GPU: 1, UUID: "GPU-b", Since: t0.Add(time.Second)}}, `msg="gpu lost" gpu=0`},
		{"GPU 1 is back", nil, []Entity{gpu(1, "GPU-b")}, 4 * time.Second,
			[]LostGPU{{GPU: 0, UUID: "GPU-a", Since: t0.Add(3 * time.Second)}}, `msg="gpu back" gpu=1 uuid=GPU-b`},
	}
	for _, s := range steps {
		logs.Reset()
		present := tr.Update(s.prev, s.next, t0.Add(s.at), log)
		if got := tr.List(); !slices.Equal(got, s.wantLost) {
			t.Errorf("%s: lost %v, want %v", s.name, got, s.wantLost)
		}
		if !strings.Contains(logs.String(), s.wantLog) || (s.wantLog == "" && logs.Len() > 0) {
			t.Errorf("%s: log %q, want %q", s.name, logs.String(), s.wantLog)
		}
		for _, e := range s.next {
			if e.Kind == GPU && e.UUID != "" && !present[e.UUID] {
				t.Errorf("%s: %s not reported present", s.name, e.UUID)
			}
		}
	}
}
