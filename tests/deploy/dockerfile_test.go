package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// No container engine runs here, so the Dockerfile is never built in the
// tests: this lints its structure instead.

// instruction is one Dockerfile instruction with continuations joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
	line int
}

// stage is a FROM and the instructions under it.
type stage struct {
	image, name string
	body        []instruction
}

func parseDockerfile(t *testing.T, path string) (globalArgs map[string]string, stages []stage) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ins []instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(trimmed, "#") {
			continue // comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`) + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(strings.TrimSpace(cur.String()), " ")
		ins = append(ins, instruction{strings.ToUpper(cmd), strings.TrimSpace(args), start})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	globalArgs = map[string]string{}
	for _, in := range ins {
		if in.cmd == "FROM" {
			fields := strings.Fields(in.args)
			s := stage{image: fields[0]}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				s.name = fields[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			if in.cmd == "ARG" {
				k, v, _ := strings.Cut(in.args, "=")
				globalArgs[k] = v
			}
			continue
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	return globalArgs, stages
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	args, stages := parseDockerfile(t, filepath.Join(repoRoot, "Dockerfile"))
	if len(stages) < 2 {
		t.Fatalf("want a multi-stage build, got %d stages", len(stages))
	}
	expand := regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)
	pinned := regexp.MustCompile(`^[a-z0-9./_-]+(:[0-9]+)?/?[a-z0-9._/-]*:[A-Za-z0-9._-]+$`)
	for i, s := range stages {
		img := expand.ReplaceAllStringFunc(s.image, func(m string) string {
			return args[expand.FindStringSubmatch(m)[1]]
		})
		stages[i].image = img
		_, tag, _ := strings.Cut(img[strings.LastIndex(img, "/")+1:], ":")
		if !pinned.MatchString(img) || tag == "" || strings.Contains(tag, "latest") {
			t.Errorf("stage %d FROM %s (%s): want a pinned tag, not latest or none", i, s.image, img)
		}
	}

	build, final := stages[0], stages[len(stages)-1]
	if build.name == "" {
		t.Error("the build stage has no name to COPY --from")
	}
	goMod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go ([0-9.]+)$`).FindSubmatch(goMod)
	if goVersion == nil || build.image != "golang:"+string(goVersion[1])+"-bookworm" {
		t.Errorf("builder FROM %s: want golang:<go.mod's go version>-bookworm (go.mod says %s)", build.image, goVersion)
	}
	buildRun := joined(build.body, "RUN")
	if !strings.Contains(buildRun, "CGO_ENABLED=1") {
		t.Error("the build does not set CGO_ENABLED=1 (go-dcgm needs cgo)")
	}
	// The version ldflags of the Makefile's LDFLAGS.
	makefile, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	// The Makefile's GCFLAGS: every package pattern of COLD_PKGS.
	cold := regexp.MustCompile(`(?s)\nCOLD_PKGS := (.*?[^\\])\n`).FindSubmatch(makefile)
	if cold == nil {
		t.Fatal("no COLD_PKGS in the Makefile")
	}
	patterns := strings.Fields(strings.ReplaceAll(string(cold[1]), "\\", ""))
	if len(patterns) == 0 {
		t.Fatal("COLD_PKGS in the Makefile is empty")
	}
	for _, p := range patterns {
		if want := "-gcflags=" + p + "=-l"; !strings.Contains(buildRun, want) {
			t.Errorf("the build lacks %s (the Makefile's GCFLAGS has it)", want)
		}
	}
	for _, m := range regexp.MustCompile(`-X \$\(VPKG\)\.(\w+)=`).FindAllSubmatch(makefile, -1) {
		want := "-X github.com/prometheus/common/version." + string(m[1]) + "="
		if !strings.Contains(buildRun, want) {
			t.Errorf("build ldflags lack %q (the Makefile sets it)", want)
		}
	}

	user := last(final.body, "USER")
	if uid, _, _ := strings.Cut(user, ":"); user == "" || uid == "0" || uid == "root" {
		t.Errorf("final stage USER = %q, want a non-root user", user)
	}
	if !slices.Contains(strings.Fields(joined(final.body, "EXPOSE")), "9400") {
		t.Error("final stage does not EXPOSE 9400")
	}
	var entry []string
	if err := json.Unmarshal([]byte(last(final.body, "ENTRYPOINT")), &entry); err != nil || len(entry) == 0 || filepath.Base(entry[0]) != "gpu-exporter" {
		t.Errorf("ENTRYPOINT %q: want exec form running gpu-exporter (%v)", last(final.body, "ENTRYPOINT"), err)
	}
	if !strings.Contains(joined(final.body, "COPY"), "--from="+build.name) {
		t.Error("final stage does not COPY the binary from the build stage")
	}
	labels := joined(final.body, "LABEL")
	for _, l := range []string{"org.opencontainers.image.source", "org.opencontainers.image.version", "org.opencontainers.image.revision", "org.opencontainers.image.title"} {
		if !strings.Contains(labels, l+"=") {
			t.Errorf("final stage lacks the OCI label %s", l)
		}
	}
	if !strings.Contains(joined(final.body, "RUN"), "datacenter-gpu-manager-4-core") {
		t.Error("runtime stage does not install DCGM 4 (libdcgm.so.4)")
	}
	// The DCGM in the image is pinned, and the pin is the one
	// docs/deployment.md pairs with the Operator's hostengine.
	pin := regexp.MustCompile(`(?:^|\s)DCGM_VERSION=(4\.\d+\.\d+-\d+)(?:\s|$)`).FindStringSubmatch(joined(final.body, "ARG"))
	if pin == nil {
		t.Error("Dockerfile: ARG DCGM_VERSION has no 4.x.y-z default; an unpinned DCGM drifts from the hostengine it talks to")
	} else if doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "deployment.md")); err != nil || !strings.Contains(string(doc), "`"+pin[1]+"`") {
		t.Errorf("docs/deployment.md does not state the image's DCGM %s (%v)", pin[1], err)
	}
	for _, s := range stages {
		for _, in := range s.body {
			if in.cmd == "ADD" && regexp.MustCompile(`https?://`).MatchString(in.args) {
				t.Errorf("line %d: ADD from a URL; fetch with a checked RUN instead", in.line)
			}
		}
	}
}

func joined(body []instruction, cmd string) string {
	var parts []string
	for _, in := range body {
		if in.cmd == cmd {
			parts = append(parts, in.args)
		}
	}
	return strings.Join(parts, "\n")
}

func last(body []instruction, cmd string) string {
	v := ""
	for _, in := range body {
		if in.cmd == cmd {
			v = in.args
		}
	}
	return v
}

// TestDockerignoreKeepsBuildInputs fails when .dockerignore would hide a
// file the Dockerfile needs.
func TestDockerignoreKeepsBuildInputs(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	needed := []string{"go.mod", "go.sum", "cmd/gpu-exporter/main.go", "pkg/server/server.go", "etc/default-counters.csv", "etc/sim/demo.yaml"}
	for _, line := range strings.Split(string(data), "\n") {
		p := strings.TrimSpace(line)
		if p == "" || strings.HasPrefix(p, "#") || strings.HasPrefix(p, "!") {
			continue
		}
		p = strings.TrimPrefix(p, "/")
		for _, n := range needed {
			if ok, _ := filepath.Match(p, n); ok || strings.HasPrefix(n, strings.TrimSuffix(p, "/")+"/") {
				t.Errorf(".dockerignore pattern %q hides %s, which the build needs", p, n)
			}
		}
	}
}
