package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-exporter/gpu-exporter/tests/testbin"
)

// repoRoot is the repository's top directory.
var repoRoot = testbin.Root()

// chartDir is the Helm chart under test.
var chartDir = filepath.Join(repoRoot, "deployment", "helm", "gpu-exporter")

// tool returns the path of a test tool (testbin.Tool).
func tool(t *testing.T, name string) string { t.Helper(); return testbin.Tool(t, name) }

// run runs a command and returns its stdout; stderr comes back in err.
func run(stdin io.Reader, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// object is one decoded Kubernetes manifest.
type object map[string]any

func (o object) kind() string { s, _ := o["kind"].(string); return s }

func (o object) name() string { s, _ := get(o, "metadata", "name").(string); return s }

// parseObjects decodes a multi-document YAML stream, skipping empty documents.
func parseObjects(t *testing.T, data []byte) []object {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var objs []object
	for {
		// Into a plain map: yaml.v3 would give nested maps the named type.
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("decoding rendered YAML: %v\n%s", err, data)
		}
		if o != nil {
			objs = append(objs, object(o))
		}
	}
}

// find returns the objects of one kind.
func find(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.kind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// only returns the single object of a kind, failing unless there is exactly one.
func only(t *testing.T, objs []object, kind string) object {
	t.Helper()
	found := find(objs, kind)
	if len(found) != 1 {
		t.Fatalf("want exactly one %s, got %d", kind, len(found))
	}
	return found[0]
}

// get walks nested maps by key and lists by int index; nil when absent.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				if o, isObj := v.(object); isObj {
					m, ok = map[string]any(o), true
				}
			}
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// list returns get(...) as a list of maps.
func list(v any, path ...any) []map[string]any {
	l, _ := get(v, path...).([]any)
	out := make([]map[string]any, 0, len(l))
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// byName returns the element of a list of maps whose "name" is name.
func byName(items []map[string]any, name string) map[string]any {
	for _, it := range items {
		if it["name"] == name {
			return it
		}
	}
	return nil
}

// strings returns get(...) as a list of strings.
func stringList(v any, path ...any) []string {
	l, _ := get(v, path...).([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// mustYAML decodes a YAML literal used as an expectation.
func mustYAML(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad expectation YAML: %v", err)
	}
	return v
}

// kubevalidate strictly decodes every object of a YAML stream into its
// Kubernetes Go type.
func kubevalidate(t *testing.T, rendered []byte) {
	t.Helper()
	out, err := run(bytes.NewReader(rendered), tool(t, "kubevalidate"))
	if err != nil {
		t.Fatalf("kubevalidate rejected the manifests: %v\nstdout:\n%s", err, out)
	}
}

var (
	exporterOnce sync.Once
	exporterBin  string
	exporterErr  error
)

// exporterBinary builds cmd/gpu-exporter once per test run, or returns
// $EXPORTER_BINARY when set (a binary built beforehand).
func exporterBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("EXPORTER_BINARY"); p != "" {
		return p
	}
	exporterOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gpu-exporter-deploy-test")
		if err != nil {
			exporterErr = err
			return
		}
		exporterBin, exporterErr = testbin.BuildExporter(dir)
	})
	if exporterErr != nil {
		t.Fatal(exporterErr)
	}
	return exporterBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if exporterBin != "" {
		_ = os.RemoveAll(filepath.Dir(exporterBin))
	}
	os.Exit(code)
}
