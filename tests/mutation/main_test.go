package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// In the diff form, the git diff that gremlins runs names a changed file
// from the package's directory (a.go), as gremlins looks mutants up, not
// from the repository root (pkg/a.go), which matched no mutant below the
// root. The command is run as git here: gremlins' own call is
// `git diff --merge-base <ref>` in its working directory.
func TestDiffPathsFromThePackage(t *testing.T) {
	repo := t.TempDir()
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	git(repo, "init", "-q")
	pkg := filepath.Join(repo, "pkg", "x")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(pkg, "a.go"), filepath.Join(repo, "b.go")} {
		if err := os.WriteFile(f, []byte("package x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(repo, "add", ".")
	git(repo, "commit", "-qm", "base")
	for _, f := range []string{filepath.Join(pkg, "a.go"), filepath.Join(repo, "b.go")} {
		if err := os.WriteFile(f, []byte("package x\n\nvar v = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(repo)
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	for _, tc := range []struct {
		diff bool
		want string
	}{
		// Without --diff the command is gremlins' usual one; run as git
		// on ./pkg/x from the root it names the file from the root.
		{false, "pkg/x/a.go"},
		{true, "a.go"},
	} {
		cmd, err := gremlinsCmd(context.Background(), gitBin, "./pkg/x", tc.diff, []string{"diff", "--name-only", "HEAD"})
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("diff %v: %v", tc.diff, err)
		}
		if got := strings.Fields(string(out)); !slices.Equal(got, []string{tc.want}) {
			t.Errorf("diff %v: git diff names %v, want [%s]", tc.diff, got, tc.want)
		}
		if !slices.Contains(cmd.Env, "GOFLAGS=-count=1 "+os.Getenv("GOFLAGS")) {
			t.Errorf("diff %v: no GOFLAGS=-count=1 in the environment", tc.diff)
		}
	}
}
