// Command kubevalidate checks Kubernetes manifests offline, the way an API
// server would reject them before any controller sees them: every YAML
// document is decoded strictly into its k8s.io/api (or prometheus-operator)
// Go type, so an unknown or misspelt field, a wrong type or a duplicate key
// is an error, and a few server-side validations that decoding misses
// (object, container and port names, label syntax, selector vs template
// labels) are applied on top.
//
// It exists because kubeconform needs JSON schemas downloaded from the
// internet; the Go types carry the same facts and come from the module proxy.
//
// Usage: kubevalidate [FILE...]   (no FILE or "-": standard input)
//
// It prints "ok <apiVersion> <kind> <name>" per object on stdout, every
// problem on stderr, and exits 1 when there was one.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		args = []string{"-"}
	}
	v := newValidator()
	failed := false
	for _, name := range args {
		r := stdin
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				fmt.Fprintf(stderr, "kubevalidate: %v\n", err)
				failed = true
				continue
			}
			defer f.Close()
			r = f
		}
		if name == "-" {
			name = "<stdin>"
		}
		if !v.file(name, r, stdout, stderr) {
			failed = true
		}
	}
	if failed {
		return 1
	}
	return 0
}

// validator decodes objects with a scheme that knows every kind the
// project's manifests use.
type validator struct {
	codec *kjson.Serializer
}

func newValidator() *validator {
	scheme := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(scheme))
	utilruntime.Must(appsv1.AddToScheme(scheme))
	utilruntime.Must(rbacv1.AddToScheme(scheme))
	utilruntime.Must(policyv1.AddToScheme(scheme))
	utilruntime.Must(monitoringv1.AddToScheme(scheme))
	codec := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, scheme, scheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})
	return &validator{codec: codec}
}

// file validates every document of one multi-document YAML stream and
// reports whether all of them passed.
func (v *validator) file(name string, r io.Reader, stdout, stderr io.Writer) bool {
	reader := kyaml.NewYAMLReader(bufio.NewReader(r))
	ok := true
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return ok
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: document %d: %v\n", name, doc, err)
			return false
		}
		if isEmpty(raw) {
			continue
		}
		id, problems := v.object(raw)
		if len(problems) == 0 {
			fmt.Fprintf(stdout, "ok %s\n", id)
			continue
		}
		ok = false
		for _, p := range problems {
			fmt.Fprintf(stderr, "%s: document %d (%s): %v\n", name, doc, id, p)
		}
	}
}

// object decodes one document strictly and validates it. id names the
// object for messages.
func (v *validator) object(raw []byte) (id string, problems []error) {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(raw, &meta); err != nil {
		return "unparsable", []error{err}
	}
	id = fmt.Sprintf("%s %s %s", meta.APIVersion, meta.Kind, meta.Metadata.Name)
	obj, _, err := v.codec.Decode(raw, nil, nil)
	if err != nil {
		// A strict decoding error still yields the object; report the
		// unknown or duplicate fields and go on with the other checks.
		if !runtime.IsStrictDecodingError(err) || obj == nil {
			return id, []error{err}
		}
		problems = append(problems, err)
	}
	return id, append(problems, validate(obj)...)
}

func isEmpty(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
			return false
		}
	}
	return true
}
