package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// exporterFlags returns the flag names `gpu-exporter --help` lists.
func exporterFlags(t *testing.T) map[string]bool {
	t.Helper()
	cmd := exec.Command(exporterBinary(t), "--help")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gpu-exporter --help: %v\n%s", err, out)
	}
	flags := map[string]bool{}
	line := regexp.MustCompile(`^\s+(?:-[a-zA-Z], )?--([a-z0-9][a-z0-9.-]*)`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := line.FindStringSubmatch(sc.Text()); m != nil {
			flags[m[1]] = true
		}
	}
	if len(flags) < 10 {
		t.Fatalf("parsed only %d flags from --help:\n%s", len(flags), out)
	}
	return flags
}

// envName is the exporter's environment twin of a flag.
func envName(flag string) string {
	return "GPU_EXPORTER_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(flag))
}

// checkAccepted runs the exporter with args and env and --version: it
// parses and validates every flag and exits before opening anything.
func checkAccepted(t *testing.T, what string, args, env []string) {
	t.Helper()
	cmd := exec.Command(exporterBinary(t), append(append([]string{}, args...), "--version")...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("gpu-exporter, version")) {
		t.Errorf("%s: the exporter refuses args %q env %q: %v\n%s", what, args, env, err, out)
	}
}

// checkArgNames fails for an argument that is not one of the exporter's flags.
func checkArgNames(t *testing.T, what string, args []string, flags map[string]bool) {
	t.Helper()
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			t.Errorf("%s: argument %q is not a --flag", what, a)
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !flags[name] {
			t.Errorf("%s: --%s is not a gpu-exporter flag", what, name)
		}
	}
}

// TestDeploymentFlagsAreReal checks every exporter flag the chart, the
// manifests and the systemd files pass, against the built binary: the
// names must exist and the values must pass its validation.
func TestDeploymentFlagsAreReal(t *testing.T) {
	t.Parallel()
	flags := exporterFlags(t)

	t.Run("chart", func(t *testing.T) {
		t.Parallel()
		chart := fixtureChart(t)
		renderings := map[string]map[string]any{"defaults": nil}
		for _, tg := range toggles {
			if tg.name != "webConfig" { // rbacProxy excludes it; rendered below
				for k, v := range tg.values {
					if renderings["all"] == nil {
						renderings["all"] = map[string]any{}
					}
					renderings["all"][k] = v
				}
			}
		}
		renderings["webConfig"] = toggles[3].values
		renderings["counters+noAttribution+pprof"] = map[string]any{
			"counters":   map[string]any{"csv": "DCGM_FI_DEV_GPU_TEMP, gauge, t"},
			"kubernetes": map[string]any{"attribution": false},
			"exporter":   map[string]any{"enablePprof": true, "logFormat": "json", "source": "sim"},
		}
		renderings["attribution options"] = map[string]any{
			"kubernetes": map[string]any{"refreshInterval": "30s", "gpuIdType": "uid", "resourceNames": []any{"example.com/gpu*", "nvidia.com/a100"}},
		}
		for name, values := range renderings {
			_, objs := render(t, chart, values)
			exp := exporterContainer(t, objs)
			args := stringList(exp, "args")
			checkArgNames(t, "chart "+name, args, flags)
			checkAccepted(t, "chart "+name, args, nil)
		}
	})

	t.Run("kustomize", func(t *testing.T) {
		t.Parallel()
		for _, dir := range []string{"base", "overlays/remote-hostengine", "overlays/process-accounting"} {
			_, objs := kustomizeBuild(t, filepath.Join(kustomizeDir, dir))
			args := stringList(exporterContainer(t, objs), "args")
			checkArgNames(t, dir, args, flags)
			checkAccepted(t, dir, args, nil)
			if dir == "overlays/process-accounting" {
				checkProcessAccounting(t, dir, objs, args)
			}
		}
	})

	t.Run("systemd env file", func(t *testing.T) {
		t.Parallel()
		env, commented := readEnvFile(t, filepath.Join(repoRoot, "deployment", "systemd", "gpu-exporter.env"))
		known := map[string]bool{"EXTRA_FLAGS": true}
		for f := range flags {
			known[envName(f)] = true
		}
		var extra []string
		var set []string
		for _, kv := range append(append([]string{}, env...), commented...) {
			k, v, _ := strings.Cut(kv, "=")
			if !known[k] {
				t.Errorf("gpu-exporter.env sets %s, which is no flag's environment twin", k)
			}
			if k == "EXTRA_FLAGS" {
				extra = strings.Fields(v)
			}
		}
		for _, kv := range env {
			if !strings.HasPrefix(kv, "EXTRA_FLAGS=") {
				set = append(set, kv)
			}
		}
		checkArgNames(t, "EXTRA_FLAGS", extra, flags)
		checkAccepted(t, "gpu-exporter.env as shipped", extra, set)
		// Each commented example must work once uncommented.
		for _, kv := range commented {
			checkAccepted(t, "gpu-exporter.env with "+kv, extra, append(append([]string{}, set...), kv))
		}
	})

	t.Run("documentation", func(t *testing.T) {
		t.Parallel()
		checkMentionedFlags(t, flags)
	})
}

// readEnvFile returns an environment file's assignments, and those of its
// commented-out examples (lines "#KEY=value").
func readEnvFile(t *testing.T, path string) (set, commented []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	assign := regexp.MustCompile(`^(#?)([A-Z][A-Z0-9_]*)=(.*)$`)
	for _, line := range strings.Split(string(data), "\n") {
		m := assign.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		kv := m[2] + "=" + strings.Trim(m[3], `"`)
		if m[1] == "#" {
			commented = append(commented, kv)
		} else {
			set = append(set, kv)
		}
	}
	if len(set) == 0 {
		t.Fatalf("%s sets nothing", path)
	}
	return set, commented
}

// mentionedFlag and mentionedEnv find exporter flags and their
// environment twins in prose and comments.
var (
	mentionedFlag = regexp.MustCompile(`--((?:web|collect|sim|kubernetes|dcgm|log)\.[a-z0-9.-]*[a-z0-9])`)
	mentionedEnv  = regexp.MustCompile(`\bGPU_EXPORTER_[A-Z0-9_]*[A-Z0-9]\b`)
)

// checkMentionedFlags fails for a flag or environment variable named in
// the deployment files or docs that the exporter does not have.
func checkMentionedFlags(t *testing.T, flags map[string]bool) {
	t.Helper()
	envs := map[string]bool{}
	for f := range flags {
		envs[envName(f)] = true
	}
	var files []string
	for _, root := range []string{filepath.Join(repoRoot, "deployment"), filepath.Join(repoRoot, "docs", "deployment.md"), filepath.Join(repoRoot, "Dockerfile")} {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.Contains(p, string(filepath.Separator)+"files"+string(filepath.Separator)) {
				files = append(files, p)
			}
			return nil
		})
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot, f)
		for _, m := range mentionedFlag.FindAllStringSubmatch(string(data), -1) {
			if !flags[m[1]] {
				t.Errorf("%s mentions --%s, which is not a gpu-exporter flag", rel, m[1])
			}
		}
		for _, m := range mentionedEnv.FindAllString(string(data), -1) {
			if !envs[m] {
				t.Errorf("%s mentions %s, which is no flag's environment twin", rel, m)
			}
		}
	}
}

// checkProcessAccounting checks that a process accounting deployment turns
// it on, reads the host's /proc where it mounts it, and shares the host's
// PID namespace (NVML reports host PIDs).
func checkProcessAccounting(t *testing.T, what string, objs []object, args []string) {
	t.Helper()
	if !slices.Contains(args, "--collect.processes=container") {
		t.Errorf("%s: args %q do not turn on container accounting", what, args)
	}
	procfs := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--path.procfs="); ok {
			procfs = v
		}
	}
	pod := get(only(t, objs, "DaemonSet"), "spec", "template", "spec")
	mounted := false
	for _, m := range list(exporterContainer(t, objs), "volumeMounts") {
		if get(m, "mountPath") == procfs && get(m, "readOnly") == true {
			mounted = get(byName(list(pod, "volumes"), fmt.Sprint(m["name"])), "hostPath", "path") == "/proc"
		}
	}
	if procfs == "" || !mounted {
		t.Errorf("%s: --path.procfs=%q is not the host's /proc mounted read-only in the exporter", what, procfs)
	}
	if get(pod, "hostPID") != true {
		t.Errorf("%s: the pod does not share the host's PID namespace (hostPID)", what)
	}
}
