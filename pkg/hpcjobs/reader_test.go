package hpcjobs

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpu-exporter/gpu-exporter/internal/testutil/poll"
	"github.com/gpu-exporter/gpu-exporter/pkg/config"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

type harness struct {
	t   *testing.T
	dir string
	r   *Reader
	reg *prometheus.Registry
	log *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, dir: filepath.Join(t.TempDir(), "jobs"), reg: prometheus.NewRegistry(), log: &syncBuffer{}}
	if err := os.Mkdir(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(h.log, nil))
	r, err := New(Config{Dir: h.dir, RefreshInterval: time.Hour}, logger, h.reg)
	if err != nil {
		t.Fatal(err)
	}
	h.r = r
	return h
}

func (h *harness) write(name, content string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, name), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) remove(name string) {
	h.t.Helper()
	if err := os.Remove(filepath.Join(h.dir, name)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) refresh() *Table {
	h.t.Helper()
	if err := h.r.Refresh(context.Background()); err != nil {
		h.t.Fatalf("Refresh: %v", err)
	}
	return h.r.Table()
}

func (h *harness) gauge(name string, labels ...string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
				}
				if !found {
					continue metric
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	h.t.Fatalf("no %s%v", name, labels)
	return 0
}

func gpu(i int) *source.Entity {
	return &source.Entity{Kind: source.GPU, GPU: i, GPUInstance: -1, ComputeInstance: -1}
}

func mig(i, gi, ci int) *source.Entity {
	return &source.Entity{Kind: source.GPUInstance, GPU: i, GPUInstance: gi, ComputeInstance: ci}
}

func ids(jobs []Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

// Every file form: GPU index files, MIG GPU.instance files, files that
// are skipped silently and files counted as malformed.
func TestReaderFileForms(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.write("0", "job1-0\n")                                                    // dcgm-exporter's test file, plain form
	h.write("1", "job1-1\njob2-1\n")                                            // a GPU in two jobs
	h.write("3.0", "job3.0-0")                                                  // a MIG instance, no final newline
	h.write("4", "77 user=alice partition=gpu\n")                               // our extension
	h.write("5", "")                                                            // a job that ended, file left empty
	h.write("6", "\x00\xff\xfe garbage\n\x7fELF\n88\n")                         // garbage with one good line
	h.write("notes.txt", "0\n")                                                 // a name that is no GPU
	h.write(".2.tmp.123", "half-written\n")                                     // a prolog's temporary file
	h.write("7", strings.Repeat("1\n", MaxFileBytes/2+1))                       // too large
	if err := os.Mkdir(filepath.Join(h.dir, "lost+found"), 0o755); err != nil { // skipped, as dcgm-exporter does
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(h.dir, "8"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(h.dir, "9"), 0o644); err != nil {
		t.Fatal(err)
	}
	tab := h.refresh()

	for _, tc := range []struct {
		name string
		e    *source.Entity
		want []Job
	}{
		{"GPU file", gpu(0), []Job{{ID: "job1-0"}}},
		{"GPU in two jobs", gpu(1), []Job{{ID: "job1-1"}, {ID: "job2-1"}}},
		{"no file", gpu(2), nil},
		{"a temporary file is not read", gpu(2), nil},
		{"MIG file attributes its instance", mig(3, 0, -1), []Job{{ID: "job3.0-0"}}},
		{"MIG file attributes every compute instance of it", mig(3, 0, 2), []Job{{ID: "job3.0-0"}}},
		{"MIG file does not attribute the GPU", gpu(3), nil},
		{"nor another instance", mig(3, 1, -1), nil},
		{"user and partition", gpu(4), []Job{{ID: "77", User: "alice", Partition: "gpu"}}},
		{"empty file", gpu(5), nil},
		{"garbage file keeps its good line", gpu(6), []Job{{ID: "88"}}},
		{"too large file", gpu(7), nil},
		{"directory named like a GPU", gpu(8), nil},
		{"named pipe", gpu(9), nil},
		{"a GPU's NVLink is held with its GPU", &source.Entity{Kind: source.NVLink, Parent: source.GPU, GPU: 1, Link: 3}, []Job{{ID: "job1-1"}, {ID: "job2-1"}}},
		{"an NVSwitch port has no GPU", &source.Entity{Kind: source.NVLink, Parent: source.NVSwitch, GPU: -1, ID: 0, Link: 1}, nil},
		{"an NVSwitch", &source.Entity{Kind: source.NVSwitch, GPU: -1, ID: 0}, nil},
	} {
		if got := tab.Jobs(tc.e); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Jobs(%+v) = %+v, want %+v", tc.name, tc.e, got, tc.want)
		}
	}
	for reason, want := range map[string]float64{ReasonName: 1, ReasonUnreadable: 2, ReasonEncoding: 1, ReasonSyntax: 1} {
		if got := h.gauge("gpu_exporter_hpc_job_mapping_malformed_files", "reason", reason); got != want {
			t.Errorf("malformed_files{reason=%q} = %v, want %v", reason, got, want)
		}
	}
	if got := h.gauge("gpu_exporter_hpc_job_mapping_up"); got != 1 {
		t.Errorf("up = %v", got)
	}
	if got := h.gauge("gpu_exporter_hpc_jobs"); got != 6 {
		t.Errorf("jobs = %v, want 6", got)
	}
}

// A name with leading zeros names no GPU, as in dcgm-exporter (which
// compares the name with the gpu label as a string): "00" and "01" do not
// replace or hide the jobs of "0" and "1", and are counted.
func TestReaderLeadingZeros(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.write("0", "100\n")
	h.write("00", "200\n")
	h.write("01", "300\n")
	h.write("2.1", "400\n")
	h.write("2.01", "500\n")
	tab := h.refresh()
	for _, tc := range []struct {
		e    *source.Entity
		want []string
	}{
		{gpu(0), []string{"100"}},
		{gpu(1), nil},
		{mig(2, 1, -1), []string{"400"}},
	} {
		if got := ids(tab.Jobs(tc.e)); !slices.Equal(got, tc.want) {
			t.Errorf("Jobs(%+v) = %v, want %v", tc.e, got, tc.want)
		}
	}
	if got := h.gauge("gpu_exporter_hpc_job_mapping_malformed_files", "reason", ReasonName); got != 3 {
		t.Errorf("malformed_files{reason=name} = %v, want 3", got)
	}
}

// Jobs that start and end between refreshes show at the next refresh; a
// job that came and went between two refreshes never shows; an unchanged
// directory keeps the same table pointer (the collector's join cache).
func TestReaderJobsStartAndEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.write("0", "100\n")
	first := h.refresh()
	if again := h.refresh(); again != first {
		t.Error("an unchanged directory published a new table")
	}

	h.write("1", "101\n")      // starts
	h.remove("0")              // ends
	h.write("2", "102\n")      // starts …
	h.remove("2")              // … and ends before the refresh
	h.write("3", "103\n104\n") // two jobs start on GPU 3
	tab := h.refresh()
	if tab == first {
		t.Fatal("a changed directory kept the old table")
	}
	for _, tc := range []struct {
		gpu  int
		want []string
	}{{0, nil}, {1, []string{"101"}}, {2, nil}, {3, []string{"103", "104"}}} {
		if got := ids(tab.Jobs(gpu(tc.gpu))); !slices.Equal(got, tc.want) {
			t.Errorf("GPU %d jobs = %v, want %v", tc.gpu, got, tc.want)
		}
	}
	if !slices.Equal(first.Keys(), []Key{{GPU: 0, Instance: -1}}) {
		t.Errorf("the published table changed: %v", first.Keys())
	}

	h.write("3", "104\n") // 103 ends, 104 stays
	if got := ids(h.refresh().Jobs(gpu(3))); !slices.Equal(got, []string{"104"}) {
		t.Errorf("GPU 3 jobs = %v, want [104]", got)
	}
}

// A read that runs out of time half-way (a mapping file on a hung network
// file system) is a failed read: up is 0 at once. The last table stands
// for that one refresh, so that one slow read drops no running job; a
// second failed read in a row empties it, so that a job whose file is gone
// does not keep its label for as long as the file system hangs.
func TestReaderTimeouts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	r, err := New(Config{Dir: h.dir, RefreshInterval: time.Hour, Timeout: 50 * time.Millisecond}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	var hang atomic.Bool
	r.readBytes = func(ctx context.Context, path string) ([]byte, error) {
		if filepath.Base(path) == "1" && hang.Load() {
			<-ctx.Done() // as a read blocked in the kernel, given up at the deadline
			return nil, context.Cause(ctx)
		}
		return readMappingFile(ctx, path)
	}
	h.write("0", "100\n")
	h.write("1", "200\n")
	if err := r.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.remove("0") // job 100 ends
	hang.Store(true)
	steps := []struct {
		name       string
		gpu0, gpu1 []string
		up         float64
	}{
		{"first timeout: the last table stands", []string{"100"}, []string{"200"}, 0},
		{"second timeout in a row: no table", nil, nil, 0},
		{"third", nil, nil, 0},
	}
	for _, st := range steps {
		if err := r.Refresh(context.Background()); err == nil {
			t.Fatalf("%s: Refresh succeeded while a file read hangs", st.name)
		}
		tab := r.Table()
		if got := ids(tab.Jobs(gpu(0))); !slices.Equal(got, st.gpu0) {
			t.Errorf("%s: GPU 0 jobs %v, want %v", st.name, got, st.gpu0)
		}
		if got := ids(tab.Jobs(gpu(1))); !slices.Equal(got, st.gpu1) {
			t.Errorf("%s: GPU 1 jobs %v, want %v", st.name, got, st.gpu1)
		}
		if got := testutil.ToFloat64(r.m.up); got != st.up {
			t.Errorf("%s: up = %v, want %v", st.name, got, st.up)
		}
	}
	hang.Store(false)
	if err := r.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := ids(r.Table().Jobs(gpu(1))); !slices.Equal(got, []string{"200"}) || testutil.ToFloat64(r.m.up) != 1 {
		t.Errorf("after the file system recovered: GPU 1 jobs %v, up %v", got, testutil.ToFloat64(r.m.up))
	}
}

// A deleted directory empties the table (no job outlives its files), sets
// up to 0 and is logged once; the directory coming back restores it.
func TestReaderDeletedDirectory(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.write("0", "100\n")
	if got := ids(h.refresh().Jobs(gpu(0))); !slices.Equal(got, []string{"100"}) {
		t.Fatalf("jobs = %v", got)
	}
	if err := os.RemoveAll(h.dir); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := h.r.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), h.dir) {
			t.Fatalf("Refresh on a deleted directory: %v, want an error naming it", err)
		}
		if got := h.r.Table().Jobs(gpu(0)); got != nil {
			t.Fatalf("jobs after deletion = %v", got)
		}
	}
	if got := h.gauge("gpu_exporter_hpc_job_mapping_up"); got != 0 {
		t.Errorf("up = %v, want 0", got)
	}
	if got := h.gauge("gpu_exporter_hpc_jobs"); got != 0 {
		t.Errorf("jobs = %v, want 0", got)
	}
	if n := strings.Count(h.log.String(), "HPC job mapping directory unreadable"); n != 1 {
		t.Errorf("logged the missing directory %d times, want once:\n%s", n, h.log)
	}

	if err := os.Mkdir(h.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h.write("0", "200\n")
	if got := ids(h.refresh().Jobs(gpu(0))); !slices.Equal(got, []string{"200"}) {
		t.Errorf("jobs after the directory came back = %v", got)
	}
	if got := h.gauge("gpu_exporter_hpc_job_mapping_up"); got != 1 {
		t.Errorf("up = %v, want 1", got)
	}
	if !strings.Contains(h.log.String(), "HPC job mapping directory readable again") {
		t.Errorf("recovery not logged:\n%s", h.log)
	}
}

// A path that is a file, not a directory, is handled like a missing one.
func TestReaderNotADirectory(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if err := os.RemoveAll(h.dir); err != nil {
		t.Fatal(err)
	}
	h.t.Helper()
	if err := os.WriteFile(h.dir, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.r.Refresh(context.Background()); err == nil {
		t.Fatal("Refresh on a file succeeded")
	}
	if got := h.gauge("gpu_exporter_hpc_job_mapping_up"); got != 0 {
		t.Errorf("up = %v, want 0", got)
	}
}

// A malformed file is logged when it becomes malformed, not on every
// refresh, and the gauge follows the directory.
func TestReaderLogsMalformedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.write("0", "\xff\xfe\n")
	for range 3 {
		h.refresh()
	}
	if n := strings.Count(h.log.String(), "HPC job mapping file malformed"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, h.log)
	}
	if !strings.Contains(h.log.String(), "reason=encoding") || !strings.Contains(h.log.String(), filepath.Join(h.dir, "0")) {
		t.Errorf("log line lacks the file or reason:\n%s", h.log)
	}
	if got := h.gauge("gpu_exporter_hpc_job_mapping_malformed_files", "reason", ReasonEncoding); got != 1 {
		t.Errorf("malformed{encoding} = %v, want 1", got)
	}
	h.write("0", "4242\n")
	h.refresh()
	if got := h.gauge("gpu_exporter_hpc_job_mapping_malformed_files", "reason", ReasonEncoding); got != 0 {
		t.Errorf("malformed{encoding} after the fix = %v, want 0", got)
	}
}

// Run refreshes on its own: a job written while it runs shows without a
// call to Refresh.
func TestReaderRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, err := New(Config{Dir: dir, RefreshInterval: 10 * time.Millisecond}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := os.WriteFile(filepath.Join(dir, "0"), []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	poll.Within(t, 10*time.Second, 5*time.Millisecond, "the job to show", func() bool { return len(r.Table().Jobs(gpu(0))) > 0 })
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{RefreshInterval: time.Second}, {Dir: "/x"}} {
		if _, err := New(cfg, nil, nil); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	reg := prometheus.NewRegistry()
	if _, err := New(Config{Dir: "/x", RefreshInterval: time.Second}, nil, reg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Dir: "/y", RefreshInterval: time.Second}, nil, reg); err == nil {
		t.Error("a second reader registered the same self-metrics")
	}
	if n := testutil.CollectAndCount(reg); n == 0 {
		t.Error("no self-metrics registered")
	}
}

// Files of GPUs or MIG instances the node does not have are unmatched.
func TestTableUnmatched(t *testing.T) {
	t.Parallel()
	tab := NewTable(map[Key][]Job{
		{GPU: 0, Instance: -1}: {{ID: "1"}},
		{GPU: 1, Instance: 2}:  {{ID: "2"}},
		{GPU: 1, Instance: 3}:  {{ID: "3"}}, // no such instance
		{GPU: 8, Instance: -1}: {{ID: "4"}}, // no such GPU
		{GPU: 0, Instance: 0}:  {{ID: "5"}}, // GPU 0 is not in MIG mode
	})
	inv := &source.Inventory{Entities: []source.Entity{*gpu(0), *gpu(1), *mig(1, 2, 0), *mig(1, 2, 1)}}
	want := []Key{{GPU: 0, Instance: 0}, {GPU: 1, Instance: 3}, {GPU: 8, Instance: -1}}
	if got := tab.Unmatched(inv); !slices.Equal(got, want) {
		t.Errorf("Unmatched = %v, want %v", got, want)
	}
	if got := (*Table)(nil).Unmatched(inv); got != nil {
		t.Errorf("nil table: %v", got)
	}
	if got := tab.Unmatched(nil); len(got) != 5 {
		t.Errorf("no inventory: %v, want every key", got)
	}
}

// Files named after the device node or a MIG UUID resolve to the GPU with
// that minor number and the MIG instance with that UUID (issue 30, defects
// 3 and 4). The node is the A100 node of issue 30 where the first GPU in
// NVML order had minor number 1: nvidia1 is GPU 0, never GPU 1.
func TestTableDeviceNamesAndMIGUUIDs(t *testing.T) {
	t.Parallel()
	const migA, migB = "MIG-51fa7c7a-4c41-59bf-b08a-9cb4b47525a7", "MIG-27b1a30b-e164-5ba8-9904-9d949f65d8e4"
	g0 := &source.Entity{Kind: source.GPU, GPU: 0, Device: "nvidia1", GPUInstance: -1, ComputeInstance: -1}
	g1 := &source.Entity{Kind: source.GPU, GPU: 1, Device: "nvidia0", GPUInstance: -1, ComputeInstance: -1}
	m1 := &source.Entity{Kind: source.GPUInstance, GPU: 1, Device: "nvidia0", GPUInstance: 1, ComputeInstance: -1, MIGUUID: migA}
	m5 := &source.Entity{Kind: source.GPUInstance, GPU: 1, Device: "nvidia0", GPUInstance: 5, ComputeInstance: -1, MIGUUID: strings.ToUpper(migB[4:])}
	m5.MIGUUID = "MIG-" + m5.MIGUUID
	link := &source.Entity{Kind: source.NVLink, GPU: 0, Device: "nvidia1", Link: 3}
	tab := NewTable(map[Key][]Job{
		{GPU: 1, Instance: -1, Minor: true}:                                          {{ID: "10"}},
		{GPU: 0, Instance: -1}:                                                       {{ID: "9"}, {ID: "10"}}, // the same job through its index: listed once
		{GPU: 0, Instance: 5, Minor: true}:                                           {{ID: "11"}},
		{GPU: -1, Instance: -1, MIGUUID: migA}:                                       {{ID: "12"}},
		{GPU: -1, Instance: -1, MIGUUID: migB}:                                       {{ID: "13"}},
		{GPU: 7, Instance: -1, Minor: true}:                                          {{ID: "14"}}, // no such device
		{GPU: -1, Instance: -1, MIGUUID: "MIG-00000000-0000-0000-0000-000000000000"}: {{ID: "15"}},
	})
	for _, tc := range []struct {
		e    *source.Entity
		want []string
	}{
		{g0, []string{"9", "10"}},
		{g1, nil},
		{link, []string{"9", "10"}},
		{m1, []string{"12"}},
		{m5, []string{"11", "13"}},
	} {
		if got := ids(tab.Jobs(tc.e)); !slices.Equal(got, tc.want) {
			t.Errorf("Jobs(%s gpu %d gi %d) = %v, want %v", tc.e.Kind, tc.e.GPU, tc.e.GPUInstance, got, tc.want)
		}
	}
	inv := &source.Inventory{Entities: []source.Entity{*g0, *g1, *m1, *m5}}
	want := []string{"nvidia7", "MIG-00000000-0000-0000-0000-000000000000"}
	var got []string
	for _, k := range tab.Unmatched(inv) {
		got = append(got, k.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("Unmatched = %v, want %v", got, want)
	}
}

// A mapping file is read through a limit of MaxFileBytes+1 bytes whatever
// it is: a symbolic link to a large (sparse) file is refused after that
// many bytes instead of being read whole, and one to a named pipe or a
// device is refused without blocking. Each is counted unreadable and
// logged with its name, and the other jobs are served. Not parallel: it
// measures the bytes the process allocates while refreshing.
func TestReaderRefusesLargeOrSpecialTargets(t *testing.T) {
	outside := t.TempDir()
	sparse := func(name string, size int64) string {
		p := filepath.Join(outside, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil { // no data blocks: a read returns zeros
			t.Fatal(err)
		}
		return p
	}
	// The largest file config.ReadFile reads whole, and a larger one.
	atLimit, huge := sparse("at-limit", config.MaxFileBytes), sparse("huge", 1<<30)
	fifo := filepath.Join(outside, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		make   func(path string) error
		reason string // in the logged error
	}{
		{"symlink to a large sparse file", func(p string) error { return os.Symlink(atLimit, p) }, "larger than 64 KiB"},
		{"symlink to a sparse file above config's cap", func(p string) error { return os.Symlink(huge, p) }, "larger than 64 KiB"},
		{"symlink to a named pipe", func(p string) error { return os.Symlink(fifo, p) }, "not a regular file (it is a named pipe)"},
		{"named pipe", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file (it is a named pipe)"},
		{"symlink to an endless device", func(p string) error { return os.Symlink("/dev/zero", p) }, "not a regular file (it is a character device)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.write("0", "100\n")
			bad := filepath.Join(h.dir, "1")
			if err := tc.make(bad); err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			tab := h.refresh() // fails the test if the read blocked until the deadline
			runtime.ReadMemStats(&after)
			// The limited read allocates a few times 64 KiB; reading the
			// 16 MiB target whole allocated more than 16 MiB.
			if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
				t.Errorf("a refresh allocated %d MiB: the file was read past the cap", n>>20)
			}
			if got := ids(tab.Jobs(gpu(0))); !slices.Equal(got, []string{"100"}) {
				t.Errorf("GPU 0 jobs = %v, want [100]", got)
			}
			if got := tab.Jobs(gpu(1)); got != nil {
				t.Errorf("GPU 1 jobs = %v, want none", got)
			}
			if got := h.gauge("gpu_exporter_hpc_job_mapping_malformed_files", "reason", ReasonUnreadable); got != 1 {
				t.Errorf("malformed_files{reason=unreadable} = %v, want 1", got)
			}
			log := h.log.String()
			if !strings.Contains(log, "file="+bad) || !strings.Contains(log, tc.reason) {
				t.Errorf("log does not name %s and %q:\n%s", bad, tc.reason, log)
			}
		})
	}
}

// A symbolic link to a directory is skipped silently, as a subdirectory
// is (dcgm-exporter skips subdirectories), whatever its name; a link to a
// regular file is read through it, and one to a named pipe is still
// refused and counted unreadable.
func TestReaderSymlinks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		link       string // its name in the mapping directory
		target     func(t *testing.T, outside string) string
		jobs       []string // GPU 1's jobs
		unreadable float64
		logged     bool
	}{
		{"to a directory, named like a GPU", "1", dirTarget, nil, 0, false},
		{"to a directory, named like no GPU", "lost+found", dirTarget, nil, 0, false},
		{"to a link to a directory", "1", func(t *testing.T, outside string) string {
			p := filepath.Join(outside, "link-to-dir")
			if err := os.Symlink(dirTarget(t, outside), p); err != nil {
				t.Fatal(err)
			}
			return p
		}, nil, 0, false},
		{"to a directory, relative", "1", func(t *testing.T, outside string) string {
			if err := os.Mkdir(filepath.Join(outside, "jobs", "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			return "sub"
		}, nil, 0, false},
		{"to a regular file", "1", func(t *testing.T, outside string) string {
			p := filepath.Join(outside, "file")
			if err := os.WriteFile(p, []byte("200\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, []string{"200"}, 0, false},
		{"to a named pipe", "1", func(t *testing.T, outside string) string {
			p := filepath.Join(outside, "fifo")
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, nil, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.write("0", "100\n")
			link := filepath.Join(h.dir, tc.link)
			if err := os.Symlink(tc.target(t, filepath.Dir(h.dir)), link); err != nil {
				t.Fatal(err)
			}
			tab := h.refresh()
			if got := ids(tab.Jobs(gpu(0))); !slices.Equal(got, []string{"100"}) {
				t.Errorf("GPU 0 jobs = %v, want [100]", got)
			}
			if got := ids(tab.Jobs(gpu(1))); !slices.Equal(got, tc.jobs) {
				t.Errorf("GPU 1 jobs = %v, want %v", got, tc.jobs)
			}
			for _, reason := range Reasons() {
				want := 0.0
				if reason == ReasonUnreadable {
					want = tc.unreadable
				}
				if got := h.gauge("gpu_exporter_hpc_job_mapping_malformed_files", "reason", reason); got != want {
					t.Errorf("malformed_files{reason=%q} = %v, want %v", reason, got, want)
				}
			}
			if got := strings.Contains(h.log.String(), "file="+link); got != tc.logged {
				t.Errorf("log names %s: %v, want %v:\n%s", link, got, tc.logged, h.log)
			}
		})
	}
}

// dirTarget makes a directory outside the mapping directory, holding a
// file named like a GPU, and returns its path.
func dirTarget(t *testing.T, outside string) string {
	t.Helper()
	d := filepath.Join(outside, "dir")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "1"), []byte("300\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return d
}
