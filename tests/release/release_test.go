// Package release checks what `make release` builds. The check runs the
// whole release (two cgo builds), so it runs only under `make
// release-check` (RELEASE_CHECK=1), which CI calls.
package release

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gpu-exporter/gpu-exporter/tests/testbin"
)

// TestRelease runs make release into a temporary directory and checks the
// artifacts: every file is in SHA256SUMS and verifies; one tarball per
// architecture holds a binary of that architecture, built with cgo (the
// DCGM and NVML sources), whose SBOM lists go.mod's requirements at their
// versions; the host's binary runs --version and reports the release
// version; the packaged chart passes helm lint --strict.
func TestRelease(t *testing.T) {
	if os.Getenv("RELEASE_CHECK") == "" {
		t.Skip("runs make release (two cgo builds): make release-check")
	}
	root := testbin.Root()
	dist := t.TempDir()
	version := "9.8.7-check.1"
	cmd := exec.Command("make", "-s", "release", "DIST="+dist, "RELEASE_VERSION="+version)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}

	sums := verifySums(t, dist)
	for _, arch := range []string{"amd64", "arm64"} {
		base := "gpu-exporter-" + version + ".linux-" + arch
		if !sums[base+".tar.gz"] || !sums[base+".spdx.json"] {
			t.Errorf("SHA256SUMS lacks %s.tar.gz or its SBOM", base)
			continue
		}
		bin := extract(t, filepath.Join(dist, base+".tar.gz"), base+"/gpu-exporter", t.TempDir())
		checkELF(t, bin, arch)
		checkSBOM(t, filepath.Join(dist, base+".spdx.json"), root)
		if arch == runtime.GOARCH {
			out, err := exec.Command(bin, "--version").CombinedOutput()
			if err != nil || !strings.Contains(string(out), version) {
				t.Errorf("%s --version: %v\n%s\nwant the release version %s", base, err, out, version)
			}
		}
	}
	chart := filepath.Join(dist, "gpu-exporter-"+version+".tgz")
	if !sums[filepath.Base(chart)] {
		t.Errorf("SHA256SUMS lacks the packaged chart %s", filepath.Base(chart))
	}
	if out, err := exec.Command(testbin.Tool(t, "helm"), "lint", "--strict", chart).CombinedOutput(); err != nil {
		t.Errorf("helm lint --strict %s: %v\n%s", chart, err, out)
	}
	if out, err := exec.Command(testbin.Tool(t, "helm"), "show", "chart", chart).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "version: "+version) || !strings.Contains(string(out), "appVersion: "+version) {
		t.Errorf("packaged Chart.yaml (%v):\n%s\nwant version and appVersion %s", err, out, version)
	}
}

// verifySums checks every line of SHA256SUMS against its file and that
// every file of dist is listed; it returns the listed names.
func verifySums(t *testing.T, dist string) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not '<sha256>  <file>'", sc.Text())
		}
		data, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s: sha256 %s, SHA256SUMS says %s", name, got, want)
		}
		listed[name] = true
	}
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "SHA256SUMS" && !listed[e.Name()] {
			t.Errorf("%s is in the release but not in SHA256SUMS", e.Name())
		}
	}
	return listed
}

// extract writes one member of a .tar.gz to dir and returns its path.
func extract(t *testing.T, archive, member, dir string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("%s has no %s", archive, member)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != member {
			continue
		}
		out := filepath.Join(dir, filepath.Base(member))
		w, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, io.LimitReader(tr, 1<<30)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// checkELF: the binary is for arch and dynamically linked (cgo: it needs
// the C loader to dlopen libdcgm and libnvidia-ml).
func checkELF(t *testing.T, path, arch string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != want {
		t.Errorf("%s: machine %v, want %v", path, f.Machine, want)
	}
	if f.Section(".interp") == nil {
		t.Errorf("%s: statically linked; a cgo build (DCGM, NVML) has an interpreter", path)
	}
}

// checkSBOM: the SPDX document describes the binary and lists every module
// go.mod requires at its version (those the binary links), and the build
// settings show CGO_ENABLED=1.
func checkSBOM(t *testing.T, path, root string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SPDXVersion string `json:"spdxVersion"`
		Packages    []struct {
			Name        string `json:"name"`
			VersionInfo string `json:"versionInfo"`
			Comment     string `json:"comment"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || len(doc.Packages) < 10 {
		t.Fatalf("%s: %s with %d packages, want an SPDX-2.3 module list", path, doc.SPDXVersion, len(doc.Packages))
	}
	if !strings.Contains(doc.Packages[0].Comment, "CGO_ENABLED=1") {
		t.Errorf("%s: build settings %q lack CGO_ENABLED=1", path, doc.Packages[0].Comment)
	}
	have := map[string]string{}
	for _, p := range doc.Packages {
		have[p.Name] = p.VersionInfo
	}
	// go.mod's requirements as the Go toolchain reads them.
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var mf struct {
		Require []struct {
			Path, Version string
			Indirect      bool
		}
	}
	if err := json.Unmarshal(out, &mf); err != nil {
		t.Fatal(err)
	}
	for _, r := range mf.Require {
		if r.Indirect {
			continue
		}
		if v, ok := have[r.Path]; ok && v != r.Version {
			t.Errorf("%s: %s at %s, go.mod requires %s", path, r.Path, v, r.Version)
		}
	}
	for _, m := range []string{"github.com/NVIDIA/go-dcgm", "github.com/NVIDIA/go-nvml", "github.com/prometheus/client_golang"} {
		if _, ok := have[m]; !ok {
			t.Errorf("%s does not list %s", path, m)
		}
	}
}
