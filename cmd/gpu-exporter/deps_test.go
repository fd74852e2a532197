package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoHeavyKubernetesPackages keeps client-go's clientset and
// informer factory out of the binary: they link every API group's types,
// clients, listers and informers, and a reflective method call the binary
// also links (html/template, through golang.org/x/net/trace) keeps all
// their methods. With them the stripped binary was 63 MB and its mapped
// pages 55 MiB of resident memory; without, 27 MB (docs/PERFORMANCE.md).
// Nor does it link an API group's types (k8s.io/api/...): core/v1 alone
// was the largest package left, and the pod informer decodes the few pod
// fields it reads into a type of its own (pkg/podlabels/pod.go).
func TestBinaryLinksNoHeavyKubernetesPackages(t *testing.T) {
	t.Parallel()
	heavy := []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers", "k8s.io/client-go/listers", "k8s.io/client-go/applyconfigurations", "k8s.io/api"}
	for _, pkg := range linkedPackages(t) {
		for _, h := range heavy {
			if pkg == h || strings.HasPrefix(pkg, h+"/") {
				t.Errorf("the binary links %s", pkg)
			}
		}
	}
}

// TestBinaryLinksNoTestHelpers keeps the test helpers under
// internal/testutil (poll, flagtest) out of the binary: only _test.go
// files may import them.
func TestBinaryLinksNoTestHelpers(t *testing.T) {
	t.Parallel()
	const helpers = "github.com/gpu-exporter/gpu-exporter/internal/testutil"
	for _, pkg := range linkedPackages(t) {
		if pkg == helpers || strings.HasPrefix(pkg, helpers+"/") {
			t.Errorf("the binary links the test helper %s", pkg)
		}
	}
}

// linkedPackages lists the packages the binary links (go list -deps); it
// skips t where the go command cannot run.
func linkedPackages(t *testing.T) []string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	return strings.Fields(string(out))
}
