// Package slurm tests the Slurm prolog and epilog of deployment/slurm in a
// fake Slurm environment: the variables slurmd gives a Prolog and Epilog
// (Slurm's Prolog and Epilog Guide) and a temporary mapping directory. The
// files they write are read back with the exporter's own reader.
package slurm

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpu-exporter/gpu-exporter/pkg/hpcjobs"
	"github.com/gpu-exporter/gpu-exporter/pkg/source"
)

var scriptDir = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "deployment", "slurm")
}()

// shells are the POSIX shells the scripts run under here: sh, and dash and
// bash in POSIX mode where installed.
func shells(t *testing.T) [][]string {
	t.Helper()
	out := [][]string{{"sh"}}
	if _, err := exec.LookPath("dash"); err == nil {
		out = append(out, []string{"dash"})
	}
	if _, err := exec.LookPath("bash"); err == nil {
		out = append(out, []string{"bash", "--posix"})
	}
	return out
}

// node is a fake Slurm node: a mapping directory and a shell.
type node struct {
	t     *testing.T
	dir   string
	shell []string
}

// run runs script (prolog or epilog) with env, as slurmd would, and
// returns its stderr. The scripts must always exit 0.
func (n *node) run(script string, env ...string) string {
	n.t.Helper()
	args := append(slices.Clone(n.shell[1:]), filepath.Join(scriptDir, "gpu-exporter-"+script+".sh"))
	cmd := exec.Command(n.shell[0], args...)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"GPU_EXPORTER_HPC_JOB_MAPPING_DIR=" + n.dir,
		"GPU_JOB_MAPPING_SYSLOG=no",
		"GPU_JOB_MAPPING_LOCK_WAIT=1",
		// No MIG instances unless a test creates them: the host's own
		// driver state must not change what the scripts do.
		"GPU_JOB_MAPPING_NVIDIA_CAPS=" + filepath.Join(n.dir+".caps", "none"),
	}, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		n.t.Fatalf("%s %v: %v (it must always exit 0)\n%s", script, env, err, stderr.String())
	}
	return stderr.String()
}

// files returns the directory's files (dot-files included) and contents.
func (n *node) files() map[string]string {
	n.t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(n.dir)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		n.t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			out[e.Name()+"/"] = ""
			continue
		}
		b, err := os.ReadFile(filepath.Join(n.dir, e.Name()))
		if err != nil {
			n.t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func (n *node) expect(what string, want map[string]string) {
	n.t.Helper()
	got := n.files()
	if len(got) != len(want) {
		n.t.Errorf("%s: files %q, want %q", what, got, want)
		return
	}
	for name, content := range want {
		if got[name] != content {
			n.t.Errorf("%s: file %s = %q, want %q", what, name, got[name], content)
		}
	}
}

// jobs reads the directory with the exporter's reader and returns the job
// ids of GPU index gpu.
func (n *node) jobs(gpu int) []hpcjobs.Job {
	n.t.Helper()
	r, err := hpcjobs.New(hpcjobs.Config{Dir: n.dir, RefreshInterval: time.Hour}, nil, nil)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := r.Refresh(context.Background()); err != nil {
		n.t.Fatal(err)
	}
	return r.Table().Jobs(&source.Entity{Kind: source.GPU, GPU: gpu})
}

func forEachShell(t *testing.T, f func(t *testing.T, n *node)) {
	t.Helper()
	for _, sh := range shells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			f(t, &node{t: t, dir: filepath.Join(t.TempDir(), "gpu-jobs"), shell: sh})
		})
	}
}

// Two jobs share GPU 1; each epilog removes its own job only, and a GPU
// file left without a job goes. The exporter's reader sees each state.
func TestTwoJobsShareAGPU(t *testing.T) {
	t.Parallel()
	forEachShell(t, func(t *testing.T, n *node) {
		n.run("prolog", "SLURM_JOB_ID=100", "SLURM_JOB_USER=alice", "SLURM_JOB_PARTITION=gpu", "SLURM_JOB_GPUS=0,1")
		n.expect("job 100 started", map[string]string{
			"0": "100 user=alice partition=gpu\n",
			"1": "100 user=alice partition=gpu\n",
		})
		// The second job's GPUs come from CUDA_VISIBLE_DEVICES.
		n.run("prolog", "SLURM_JOB_ID=1000", "SLURM_JOB_USER=bob", "SLURM_JOB_PARTITION=debug", "CUDA_VISIBLE_DEVICES=1,2")
		n.expect("job 1000 started", map[string]string{
			"0": "100 user=alice partition=gpu\n",
			"1": "100 user=alice partition=gpu\n1000 user=bob partition=debug\n",
			"2": "1000 user=bob partition=debug\n",
		})
		want := []hpcjobs.Job{{ID: "100", User: "alice", Partition: "gpu"}, {ID: "1000", User: "bob", Partition: "debug"}}
		if got := n.jobs(1); !slices.Equal(got, want) {
			t.Errorf("exporter reads GPU 1 as %+v, want %+v", got, want)
		}

		n.run("epilog", "SLURM_JOB_ID=100") // 100 is a prefix of 1000: only the exact id goes
		n.expect("job 100 ended", map[string]string{
			"1": "1000 user=bob partition=debug\n",
			"2": "1000 user=bob partition=debug\n",
		})
		if got := n.jobs(0); got != nil {
			t.Errorf("exporter reads GPU 0 as %+v after its job ended", got)
		}
		n.run("epilog", "SLURM_JOB_ID=1000")
		n.expect("job 1000 ended", map[string]string{})
		n.run("epilog", "SLURM_JOB_ID=1000") // an epilog run twice is harmless
		n.expect("epilog again", map[string]string{})
	})
}

func TestPrologForms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		env   []string
		want  map[string]string
		stder string // a substring of the script's stderr, if any
		quiet bool   // the script must write nothing to stderr (nor syslog)
	}{
		{name: "no GPUs: nothing written", env: []string{"SLURM_JOB_ID=7"}, want: map[string]string{}},
		{name: "no job id: nothing written", env: []string{"SLURM_JOB_GPUS=0"}, want: map[string]string{}, stder: "SLURM_JOB_ID is missing"},
		{name: "job id with a blank", env: []string{"SLURM_JOB_ID=7 8", "SLURM_JOB_GPUS=0"}, want: map[string]string{}, stder: "not a single word"},
		{name: "SLURM_JOB_GPUS wins over CUDA_VISIBLE_DEVICES", env: []string{"SLURM_JOB_ID=7", "SLURM_JOB_GPUS=3", "CUDA_VISIBLE_DEVICES=0"},
			want: map[string]string{"3": "7\n"}},
		{name: "array and heterogeneous ids", env: []string{"SLURM_JOB_ID=7_3", "SLURM_JOB_GPUS=0"}, want: map[string]string{"0": "7_3\n"}},
		{name: "plain dcgm-exporter lines", env: []string{"SLURM_JOB_ID=7", "SLURM_JOB_USER=alice", "SLURM_JOB_PARTITION=gpu", "SLURM_JOB_GPUS=0", "GPU_JOB_MAPPING_FIELDS=no"},
			want: map[string]string{"0": "7\n"}},
		{name: "a user with a blank is left out", env: []string{"SLURM_JOB_ID=7", "SLURM_JOB_USER=a b", "SLURM_JOB_PARTITION=gpu", "SLURM_JOB_GPUS=0"},
			want: map[string]string{"0": "7 partition=gpu\n"}},
		{name: "GPU UUIDs are skipped", env: []string{"SLURM_JOB_ID=7", "CUDA_VISIBLE_DEVICES=GPU-8f1c2d3e,1"},
			want: map[string]string{"1": "7\n"}, stder: "'GPU-8f1c2d3e' is neither an index nor a MIG UUID"},
		// MIG (issue 30, defect 3): the MIG UUID of CUDA_VISIBLE_DEVICES
		// names the slice, never SLURM_JOB_GPUS' number; on a MIG node a
		// bare number names no GPU.
		{name: "MIG slice by UUID, not by Slurm's number", env: []string{"SLURM_JOB_ID=7", "SLURM_JOB_GPUS=2", "CUDA_VISIBLE_DEVICES=MIG-6c80966f-629d-5379-803b-55424fc1a0bc"},
			want: map[string]string{"MIG-6c80966f-629d-5379-803b-55424fc1a0bc": "7\n"}},
		{name: "a bad MIG UUID is skipped", env: []string{"SLURM_JOB_ID=7", "CUDA_VISIBLE_DEVICES=MIG-6c80966f-629d-5379-803b-55424fc1a0bz,MIG-abc"},
			want: map[string]string{}, stder: "'MIG-6c80966f-629d-5379-803b-55424fc1a0bz' is not a MIG UUID"},
		{name: "legacy MIG id is skipped", env: []string{"SLURM_JOB_ID=7", "SLURM_JOB_GPUS=0", "CUDA_VISIBLE_DEVICES=MIG-GPU-838f60d9-651f-9166-ea42-f9da674a6947/1/0"},
			want: map[string]string{}, stder: "legacy MIG id"},
		{name: "a number next to a MIG UUID is skipped", env: []string{"SLURM_JOB_ID=7", "SLURM_JOB_GPUS=0,3", "CUDA_VISIBLE_DEVICES=MIG-6c80966f-629d-5379-803b-55424fc1a0bc,3"},
			want: map[string]string{"MIG-6c80966f-629d-5379-803b-55424fc1a0bc": "7\n"}, stder: "'3' on a node with MIG instances"},
		// gres.conf File= (issue 30, defect 4): Slurm's number is the minor.
		{name: "minor numbering writes device names", env: []string{"SLURM_JOB_ID=7", "SLURM_JOB_GPUS=0,01", "GPU_JOB_MAPPING_SLURM_INDEX=minor"},
			want: map[string]string{"nvidia0": "7\n", "nvidia1": "7\n"}},
		{name: "unknown numbering: nothing written", env: []string{"SLURM_JOB_ID=7", "SLURM_JOB_GPUS=0", "GPU_JOB_MAPPING_SLURM_INDEX=pci"},
			want: map[string]string{}, stder: "neither nvml nor minor"},
		{name: "leading zeros", env: []string{"SLURM_JOB_ID=7", "SLURM_JOB_GPUS=08,00"}, want: map[string]string{"8": "7\n", "0": "7\n"}},
		// Slurm sets NoDevFiles when gres.conf names no device files
		// (common_gres_set_env in src/plugins/gres/common/gres_common.c):
		// no GPU to record, and nothing to log for every job.
		{name: "NoDevFiles in CUDA_VISIBLE_DEVICES", env: []string{"SLURM_JOB_ID=7", "CUDA_VISIBLE_DEVICES=NoDevFiles"}, want: map[string]string{}, quiet: true},
		{name: "NoDevFiles in SLURM_JOB_GPUS", env: []string{"SLURM_JOB_ID=7", "SLURM_JOB_GPUS=NoDevFiles"}, want: map[string]string{}, quiet: true},
		{name: "a glob is no GPU", env: []string{"SLURM_JOB_ID=7", "SLURM_JOB_GPUS=*"}, want: map[string]string{}, stder: "'*' is neither an index nor a MIG UUID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachShell(t, func(t *testing.T, n *node) {
				stderr := n.run("prolog", tc.env...)
				if got := n.files(); !maps.Equal(got, tc.want) {
					t.Errorf("files %q, want %q (stderr %q)", n.files(), tc.want, stderr)
				}
				if tc.stder != "" && !strings.Contains(stderr, tc.stder) {
					t.Errorf("stderr %q, want %q", stderr, tc.stder)
				}
				if tc.quiet && stderr != "" {
					t.Errorf("stderr %q, want nothing", stderr)
				}
			})
		})
	}
}

// A prolog run twice for one job keeps one line; the epilog leaves files
// that are not GPU files alone; the lock of a killed script is broken.
func TestPrologEpilogRobustness(t *testing.T) {
	t.Parallel()
	forEachShell(t, func(t *testing.T, n *node) {
		env := []string{"SLURM_JOB_ID=9", "SLURM_JOB_USER=carol", "SLURM_JOB_GPUS=0"}
		n.run("prolog", env...)
		n.run("prolog", env...)
		n.expect("prolog twice", map[string]string{"0": "9 user=carol\n"})

		if err := os.WriteFile(filepath.Join(n.dir, "README"), []byte("9\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(n.dir, ".lock"), 0o755); err != nil { // a killed script's lock
			t.Fatal(err)
		}
		stderr := n.run("epilog", "SLURM_JOB_ID=9")
		if !strings.Contains(stderr, "breaking a stale lock") {
			t.Errorf("stderr %q, want the stale lock noted", stderr)
		}
		n.expect("epilog", map[string]string{"README": "9\n"})
	})
}

// The prolog's files are world-readable (the exporter may run as another
// user, e.g. the systemd unit's transient user) and no temporary file is
// left behind.
func TestPrologFileModes(t *testing.T) {
	t.Parallel()
	forEachShell(t, func(t *testing.T, n *node) {
		n.run("prolog", "SLURM_JOB_ID=5", "SLURM_JOB_GPUS=0,1")
		for _, name := range []string{"", "0", "1"} {
			st, err := os.Stat(filepath.Join(n.dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm()&0o044 != 0o044 {
				t.Errorf("%s mode %v: not readable by others", filepath.Join(n.dir, name), st.Mode())
			}
		}
		n.expect("no temporary files", map[string]string{"0": "5\n", "1": "5\n"})
	})
}

// A directory that cannot be created does not fail the job.
func TestPrologUnwritableDirectory(t *testing.T) {
	t.Parallel()
	forEachShell(t, func(t *testing.T, n *node) {
		blocker := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(blocker, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		n.dir = filepath.Join(blocker, "gpu-jobs") // under a regular file
		if stderr := n.run("prolog", "SLURM_JOB_ID=5", "SLURM_JOB_GPUS=0"); !strings.Contains(stderr, "cannot create") {
			t.Errorf("stderr %q", stderr)
		}
		n.run("epilog", "SLURM_JOB_ID=5")
	})
}

// TestPrologEnvCorpus runs the prolog over every file of
// testdata/prolog-env: the environment slurmd gives a Prolog on whole-GPU,
// MIG and mixed nodes (see its README). The files it writes are read back
// with the exporter's reader, and the epilog removes them. Adding a capture
// is adding a file.
func TestPrologEnvCorpus(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("testdata", "prolog-env", "*.env"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var env, caps, logs []string
			want := map[string]string{}
			for _, line := range strings.Split(string(data), "\n") {
				switch {
				case strings.HasPrefix(line, "# caps "):
					caps = append(caps, strings.TrimPrefix(line, "# caps "))
				case strings.HasPrefix(line, "# want "):
					file, content, _ := strings.Cut(strings.TrimPrefix(line, "# want "), " ")
					want[file] += content + "\n"
				case strings.HasPrefix(line, "# log "):
					logs = append(logs, strings.TrimPrefix(line, "# log "))
				case strings.HasPrefix(line, "# setting "):
					env = append(env, strings.TrimPrefix(line, "# setting "))
				case line == "" || strings.HasPrefix(line, "#"):
				default:
					env = append(env, line)
				}
			}
			forEachShell(t, func(t *testing.T, n *node) {
				capsDir := filepath.Join(t.TempDir(), "capabilities")
				for _, c := range caps {
					if err := os.MkdirAll(filepath.Join(capsDir, c), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				// A copy: the shells' subtests run in parallel, and appending
				// to the shared env would write its spare capacity from each.
				stderr := n.run("prolog", slices.Concat(env, []string{"GPU_JOB_MAPPING_NVIDIA_CAPS=" + capsDir})...)
				n.expect("prolog", want)
				for _, l := range logs {
					if !strings.Contains(stderr, l) {
						t.Errorf("stderr %q, want %q", stderr, l)
					}
				}
				if len(want) > 0 {
					var names []string
					for _, k := range n.table().Keys() {
						names = append(names, k.Name())
					}
					wantNames := slices.Sorted(maps.Keys(want))
					slices.Sort(names)
					if !slices.Equal(names, wantNames) {
						t.Errorf("exporter reads files %v, want %v", names, wantNames)
					}
				}
				var job string
				for _, e := range env {
					if v, ok := strings.CutPrefix(e, "SLURM_JOB_ID="); ok {
						job = v
					}
				}
				n.run("epilog", "SLURM_JOB_ID="+job)
				if len(want) > 0 {
					n.expect("epilog", map[string]string{})
				}
			})
		})
	}
}

// table reads the directory with the exporter's reader.
func (n *node) table() *hpcjobs.Table {
	n.t.Helper()
	r, err := hpcjobs.New(hpcjobs.Config{Dir: n.dir, RefreshInterval: time.Hour}, nil, nil)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := r.Refresh(context.Background()); err != nil {
		n.t.Fatal(err)
	}
	return r.Table()
}
