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
func TestBinaryLinksNoHeavyKubernetesPackages(t *testing.T) {
	t.Parallel()
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	heavy := []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers", "k8s.io/client-go/listers", "k8s.io/client-go/applyconfigurations"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, h := range heavy {
			if pkg == h || strings.HasPrefix(pkg, h+"/") {
				t.Errorf("the binary links %s", pkg)
			}
		}
	}
}
