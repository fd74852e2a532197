package deploy

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	// inlineLink is a Markdown inline link or image: [text](target "title").
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// refLink is a link reference definition: [label]: target.
	refLink = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// codePath is a path in backticks that leaves the directory upward.
	codePath = regexp.MustCompile("`(\\.\\./[^`\\s]+)`")
	// fence opens or closes a fenced code block.
	fence = regexp.MustCompile("^\\s*(```|~~~)")
)

// markdownFiles lists the repository's Markdown files, skipping version
// control, built tools and other repositories' files fetched for tests.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "vendor", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// headingAnchors returns the anchors GitHub gives a Markdown file's
// headings: lower case, punctuation other than '-' and '_' dropped, spaces
// as '-', a repeated one suffixed -1, -2, ...
func headingAnchors(data []byte) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// TestMarkdownLinksResolve: every relative link in the repository's
// Markdown names a file or directory inside the repository (a clone, or
// the source of a packaged release, has nothing beside it), and a link to
// a heading of a Markdown file names a heading that exists.
func TestMarkdownLinksResolve(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	files := markdownFiles(t)
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files under %s, want the repository's", len(files), root)
	}
	anchorsOf := map[string]map[string]bool{}
	anchors := func(path string) map[string]bool {
		if a, ok := anchorsOf[path]; ok {
			return a
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		anchorsOf[path] = headingAnchors(data)
		return anchorsOf[path]
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		var targets []string
		inFence := false
		for _, line := range strings.Split(string(data), "\n") {
			if fence.MatchString(line) {
				inFence = !inFence
				continue
			}
			if inFence {
				continue
			}
			for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
			for _, m := range refLink.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
			for _, m := range codePath.FindAllStringSubmatch(line, -1) {
				targets = append(targets, m[1])
			}
		}
		for _, target := range targets {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
				if strings.HasPrefix(path, "/") {
					dest = filepath.Join(root, filepath.FromSlash(path))
				}
			}
			if r, err := filepath.Rel(root, dest); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				t.Errorf("%s: %q points outside the repository", rel, target)
				continue
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: %q: no such file in the repository", rel, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") && !anchors(dest)[strings.ToLower(anchor)] {
				t.Errorf("%s: %q: %s has no heading with that anchor", rel, target, filepath.Base(dest))
			}
		}
	}
}

// chartNamespace is the one namespace the documentation installs into:
// the kustomize base's and every documented helm install's.
const chartNamespace = "gpu-exporter"

// helmNamespace finds the namespace of a `helm install` command.
var helmNamespace = regexp.MustCompile(`(?:-n|--namespace)[ =]([a-z0-9-]+)`)

// TestInstallCommandsArePodSecurityReady: each documented `helm install`
// installs into gpu-exporter, after a command that labels that namespace
// for the Pod Security level `privileged` (the pod's hostPath is refused
// by baseline and restricted), and none creates the namespace unlabelled
// with --create-namespace.
func TestInstallCommandsArePodSecurityReady(t *testing.T) {
	t.Parallel()
	label := "kubectl label namespace " + chartNamespace + " pod-security.kubernetes.io/enforce=privileged"
	installs := 0
	for _, file := range markdownFiles(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		rel, _ := filepath.Rel(repoRoot, file)
		for off := 0; ; {
			i := strings.Index(text[off:], "helm install ")
			if i < 0 {
				break
			}
			at := off + i
			off = at + 1
			// The command, with its continuation lines.
			end := at
			for {
				nl := strings.IndexByte(text[end:], '\n')
				if nl < 0 {
					end = len(text)
					break
				}
				end += nl
				if !strings.HasSuffix(strings.TrimRight(text[:end], " "), "\\") {
					break
				}
				end++
			}
			cmd := text[at:end]
			if !strings.Contains(cmd, "deployment/helm/gpu-exporter") {
				continue
			}
			installs++
			if strings.Contains(cmd, "--create-namespace") {
				t.Errorf("%s: %q creates the namespace without the Pod Security label", rel, cmd)
			}
			if m := helmNamespace.FindStringSubmatch(cmd); m == nil || m[1] != chartNamespace {
				t.Errorf("%s: %q: want namespace %s", rel, cmd, chartNamespace)
			}
			if !strings.Contains(text[:at], label) {
				t.Errorf("%s: %q is not preceded by %q", rel, cmd, label)
			}
		}
	}
	if installs < 2 {
		t.Errorf("found %d documented helm installs of the chart, want README's and docs/deployment.md's", installs)
	}
	ns, err := os.ReadFile(filepath.Join(repoRoot, "deployment", "kubernetes", "base", "namespace.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"name: " + chartNamespace, "pod-security.kubernetes.io/enforce: privileged"} {
		if !strings.Contains(string(ns), want) {
			t.Errorf("the kustomize base's Namespace lacks %q", want)
		}
	}
}

// TestChartREADMEIsSelfContained: the chart's README travels inside the
// packaged chart, where nothing of the repository is beside it, so every
// link is absolute or names a file inside the chart.
func TestChartREADMEIsSelfContained(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(chartDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	links := 0
	for _, m := range inlineLink.FindAllStringSubmatch(string(data), -1) {
		target := m[1]
		links++
		if strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "#") {
			continue
		}
		path, _, _ := strings.Cut(target, "#")
		rel, err := filepath.Rel(chartDir, filepath.Join(chartDir, path))
		if err != nil || strings.HasPrefix(rel, "..") {
			t.Errorf("chart README links %s, outside the packaged chart; link the repository's page absolutely", target)
			continue
		}
		if _, err := os.Stat(filepath.Join(chartDir, path)); err != nil {
			t.Errorf("chart README links %s: %v", target, err)
		}
	}
	for _, m := range codePath.FindAllStringSubmatch(string(data), -1) {
		t.Errorf("chart README names %s, outside the packaged chart", m[1])
	}
	if links == 0 {
		t.Error("chart README has no links; the docs are worth one")
	}
}
