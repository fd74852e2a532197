// Command benchcompare runs the repository's benchmarks on a base commit
// and on the working tree in the same run, alternating one round of each so
// that a noisy machine slows both alike, and prints benchstat's comparison.
// The base is checked out with `git worktree add` in a temporary directory,
// removed at the end.
//
//	go run ./tests/benchcompare -benchstat tests/tools/bin/benchstat [-base main] [-count 6]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
)

// maxCount bounds the rounds, so that a typo does not run for hours.
const maxCount = 20

func main() {
	base := flag.String("base", "", "commit to compare with (default: the merge base of HEAD and main)")
	bench := flag.String("bench", ".", "benchmarks to run (go test -bench)")
	pkgs := flag.String("pkgs", "./pkg/...", "packages, space-separated")
	count := flag.Int("count", 6, "rounds on each side (at most 20)")
	benchtime := flag.String("benchtime", "", "go test -benchtime (default: go test's)")
	benchstat := flag.String("benchstat", "tests/tools/bin/benchstat", "benchstat binary")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *base, *bench, strings.Fields(*pkgs), *count, *benchtime, *benchstat); err != nil {
		fmt.Fprintln(os.Stderr, "bench-compare:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, base, bench string, pkgs []string, count int, benchtime, benchstat string) error {
	if count < 1 || count > maxCount {
		return fmt.Errorf("-count must be 1..%d, got %d", maxCount, count)
	}
	if _, err := os.Stat(benchstat); err != nil {
		return fmt.Errorf("-benchstat %s: %w (make -C tests/tools $(pwd)/tests/tools/bin/benchstat builds it)", benchstat, err)
	}
	if base == "" {
		out, err := git(ctx, "", "merge-base", "HEAD", "main")
		if err != nil {
			return fmt.Errorf("merge base of HEAD and main: %w", err)
		}
		base = out
	}
	rev, err := git(ctx, "", "rev-parse", "--verify", base+"^{commit}")
	if err != nil {
		return fmt.Errorf("-base %s: %w", base, err)
	}
	tmp, err := os.MkdirTemp("", "bench-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, "base")
	if _, err := git(ctx, "", "worktree", "add", "--detach", tree, rev); err != nil {
		return fmt.Errorf("check out %s: %w", base, err)
	}
	defer func() { _, _ = git(context.Background(), "", "worktree", "remove", "--force", tree) }()

	args := []string{"test", "-run", "^$", "-bench", bench, "-benchmem", "-count", "1"}
	if benchtime != "" {
		args = append(args, "-benchtime", benchtime)
	}
	args = append(args, pkgs...)
	var baseOut, headOut bytes.Buffer
	for i := range count {
		for _, side := range []struct {
			name, dir string
			out       *bytes.Buffer
		}{{"base " + rev[:12], tree, &baseOut}, {"HEAD (working tree)", ".", &headOut}} {
			fmt.Fprintf(os.Stderr, "round %d/%d: %s\n", i+1, count, side.name)
			cmd := exec.CommandContext(ctx, "go", args...)
			cmd.Dir = side.dir
			cmd.Stdout, cmd.Stderr = side.out, os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("benchmarks on %s: %w", side.name, err)
			}
		}
	}
	basePath, headPath := filepath.Join(tmp, "base.txt"), filepath.Join(tmp, "head.txt")
	if err := errors.Join(os.WriteFile(basePath, baseOut.Bytes(), 0o600), os.WriteFile(headPath, headOut.Bytes(), 0o600)); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, benchstat, "base="+basePath, "head="+headPath)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// git runs git in dir and returns its trimmed output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
