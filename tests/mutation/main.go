// Command mutation runs gremlins (mutation testing) over the packages with
// logic, one package at a time, and writes each package's result into the
// table of docs/testing.md: killed, lived, timed out, not covered,
// efficacy (killed / (killed + lived)) and mutator coverage ((killed +
// lived) / (killed + lived + not covered)). Rows of packages not run keep
// their last measurement. With -diff it mutates only the lines changed
// since a base commit, in the packages those changes touch, and fails when
// a package's efficacy is below -threshold: the CI form (make
// mutation-diff).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Packages are those whose logic decides what a user sees, smallest first.
var defaultPackages = []string{
	"./pkg/hpcjobs", "./pkg/config", "./pkg/fields", "./pkg/rightsize", "./pkg/podresources",
	"./pkg/processes", "./pkg/collector", "./pkg/exposition", "./pkg/podlabels", "./pkg/source",
	"./pkg/source/nvml", "./pkg/source/dcgm", "./pkg/sim", "./pkg/bounded", "./pkg/logthrottle",
	"./pkg/server", "./pkg/sourceopen", "./pkg/doctor",
}

// excluded holds, per package, the regexp (gremlins' --exclude-files,
// matched against the path relative to the package's directory) of the
// files its row does not mutate. Gremlins walks a package's directory
// recursively, so ./pkg/source would otherwise mutate its subpackages a
// second time. In the DCGM and NVML sources only the pure-Go planning,
// option and text code is mutated: every mutant rebuilds the cgo package
// and runs its tests against the fake libdcgm or go-nvml's mock, 12 s
// (dcgm) and 11 s (nvml) a mutant on the shared two cores, so the ~160 and
// ~190 mutants of the files that call the library would take over half an
// hour each, past -package-timeout.
var excluded = map[string]string{
	"./pkg/source":      `^(cgocall|dcgm|nvml)/`,
	"./pkg/source/dcgm": `_cgo\.go$`,
	"./pkg/source/nvml": `^(available|events|fabric|inventory|library|mig|read|source)_cgo\.go$`,
}

const (
	beginMark = "<!-- mutation-table:begin -->"
	endMark   = "<!-- mutation-table:end -->"
)

func main() {
	var (
		gremlins    = flag.String("gremlins", "tests/tools/bin/gremlins", "gremlins binary")
		pkgs        = flag.String("packages", strings.Join(defaultPackages, ","), "comma-separated packages to mutate")
		doc         = flag.String("doc", "docs/testing.md", "file whose mutation table is updated; empty: none")
		coefficient = flag.Int("timeout-coefficient", 10, "gremlins' --timeout-coefficient: a mutant's test run may take this many times the coverage run")
		workers     = flag.Int("workers", 1, "gremlins' --workers")
		timeout     = flag.Duration("package-timeout", 30*time.Minute, "give up on one package after this long (its row says so)")
		diff        = flag.String("diff", "", "mutate only the lines changed since this commit, in the packages they touch")
		threshold   = flag.Float64("threshold", 90, "with -diff: fail when a package's efficacy is below this percent")
	)
	flag.Parse()
	list := strings.Split(*pkgs, ",")
	if *diff != "" {
		changed, err := changedPackages(*diff, list)
		if err != nil {
			fatal(err)
		}
		if len(changed) == 0 {
			fmt.Println("mutation: no package with logic changed since", *diff)
			return
		}
		list = changed
	}
	var rows []row
	failed := false
	for _, pkg := range list {
		r := run(*gremlins, pkg, *coefficient, *workers, *timeout, *diff)
		fmt.Println(r.line())
		rows = append(rows, r)
		if *diff != "" && r.err == "" && r.killed+r.lived > 0 && r.efficacy() < *threshold {
			fmt.Printf("mutation: %s: efficacy %.1f %% on the changed lines, below %.0f %%\n", pkg, r.efficacy(), *threshold)
			failed = true
		}
		if r.err != "" && *diff != "" {
			failed = true
		}
	}
	if *doc != "" && *diff == "" {
		if err := updateDoc(*doc, rows); err != nil {
			fatal(err)
		}
	}
	if failed {
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mutation:", err)
	os.Exit(1)
}

// row is one package's result.
type row struct {
	pkg                                     string
	killed, lived, timedOut, notCovered, nv int
	elapsed                                 time.Duration
	lives                                   []string // file:line:col TYPE of each lived mutant
	err                                     string
}

func (r row) efficacy() float64 {
	if r.killed+r.lived == 0 {
		return 0
	}
	return 100 * float64(r.killed) / float64(r.killed+r.lived)
}

func (r row) coverage() float64 {
	n := r.killed + r.lived + r.notCovered
	if n == 0 {
		return 0
	}
	return 100 * float64(r.killed+r.lived) / float64(n)
}

func (r row) line() string {
	if r.err != "" {
		return fmt.Sprintf("| `%s` | not measured: %s |||||||", r.pkg, r.err)
	}
	return fmt.Sprintf("| `%s` | %d | %d | %d | %d | %.1f %% | %.1f %% | %s |", r.pkg, r.killed, r.lived, r.timedOut, r.notCovered,
		r.efficacy(), r.coverage(), r.elapsed.Round(time.Second))
}

// report is the part of gremlins' -o JSON this reads.
type report struct {
	Files []struct {
		FileName  string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
	Elapsed float64 `json:"elapsed_time"`
}

// run runs gremlins on one package. A test run that takes longer than
// coefficient times the coverage run is TIMED OUT: gremlins counts it in
// neither killed nor lived.
func run(bin, pkg string, coefficient, workers int, timeout time.Duration, diff string) row {
	r := row{pkg: pkg}
	out, err := os.CreateTemp("", "gremlins-*.json")
	if err != nil {
		r.err = err.Error()
		return r
	}
	out.Close()
	defer os.Remove(out.Name())
	args := []string{"unleash", "--workers", fmt.Sprint(workers), "--test-cpu", "1",
		"--timeout-coefficient", fmt.Sprint(coefficient), "-o", out.Name()}
	if diff != "" {
		args = append(args, "--diff", diff)
	}
	if re, ok := excluded[pkg]; ok {
		args = append(args, "--exclude-files", re)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd, err := gremlinsCmd(ctx, bin, pkg, diff != "", args)
	if err != nil {
		r.err = err.Error()
		return r
	}
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	start := time.Now()
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			r.err = fmt.Sprintf("gave up after %s", timeout)
		} else {
			r.err = fmt.Sprintf("gremlins: %v: %s", err, lastLine(log.String()))
		}
		return r
	}
	r.elapsed = time.Since(start)
	data, err := os.ReadFile(out.Name())
	if err != nil {
		r.err = err.Error()
		return r
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		r.err = fmt.Sprintf("gremlins' report: %v", err)
		return r
	}
	for _, f := range rep.Files {
		for _, m := range f.Mutations {
			switch m.Status {
			case "KILLED":
				r.killed++
			case "LIVED":
				r.lived++
				r.lives = append(r.lives, fmt.Sprintf("%s:%d:%d %s", f.FileName, m.Line, m.Column, m.Type))
			case "TIMED OUT":
				r.timedOut++
			case "NOT COVERED":
				r.notCovered++
			case "NOT VIABLE":
				r.nv++
			}
		}
	}
	slices.Sort(r.lives)
	return r
}

// gremlinsCmd is gremlins run with args on pkg.
//
// Gremlins times each mutant's test run out at coefficient times its
// coverage run; a coverage run answered from Go's test cache takes a
// second, which would time out every mutant of a package whose tests take
// longer. GOFLAGS=-count=1 makes the coverage run (and so the timeout)
// real.
//
// With --diff, gremlins v0.6.0 keys the changed lines by git diff's paths
// (from the repository root: pkg/x/a.go) but looks them up by paths from
// the package's directory (a.go), so in any package below the root no
// mutant is ever on a changed line and every run passes with none. The
// diff form therefore runs gremlins in the package's directory, on its
// absolute path, with git's diff.relative set: git diff then names the
// files from there.
func gremlinsCmd(ctx context.Context, bin, pkg string, diff bool, args []string) (*exec.Cmd, error) {
	env := append(os.Environ(), "GOFLAGS=-count=1 "+os.Getenv("GOFLAGS"))
	dir := ""
	if diff {
		abs, err := filepath.Abs(pkg)
		if err != nil {
			return nil, err
		}
		if bin, err = filepath.Abs(bin); err != nil {
			return nil, err
		}
		dir, pkg = abs, abs
		env = append(env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=diff.relative", "GIT_CONFIG_VALUE_0=true")
	}
	cmd := exec.CommandContext(ctx, bin, append(slices.Clone(args), pkg)...)
	cmd.Dir, cmd.Env = dir, env
	return cmd, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// changedPackages returns the packages of list with a non-test Go file
// changed since base.
func changedPackages(base string, list []string) ([]string, error) {
	out, err := exec.Command("git", "diff", "--name-only", base, "--", "*.go").Output()
	if err != nil {
		return nil, fmt.Errorf("git diff %s: %w", base, err)
	}
	var changed []string
	for _, f := range strings.Fields(string(out)) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		pkg := "./" + filepath.Dir(f)
		if slices.Contains(list, pkg) && !slices.Contains(changed, pkg) {
			changed = append(changed, pkg)
		}
	}
	return changed, nil
}

// updateDoc replaces the rows of rows' packages in the table between the
// marks of doc, keeping the other rows, and the list of lived mutants of
// each package run.
func updateDoc(doc string, rows []row) error {
	data, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	text := string(data)
	i, j := strings.Index(text, beginMark), strings.Index(text, endMark)
	if i < 0 || j < i {
		return errors.New(doc + ": no mutation table marks")
	}
	old, lived := map[string]string{}, map[string]string{}
	var order []string
	for _, l := range strings.Split(text[i+len(beginMark):j], "\n") {
		switch {
		case strings.HasPrefix(l, "| `"):
			pkg := strings.Trim(strings.SplitN(l, "|", 3)[1], " `")
			old[pkg] = l
			order = append(order, pkg)
		case strings.HasPrefix(l, "- `"):
			pkg, _, _ := strings.Cut(strings.TrimPrefix(l, "- `"), "`")
			lived[pkg] = l
		}
	}
	for _, r := range rows {
		if _, ok := old[r.pkg]; !ok {
			order = append(order, r.pkg)
		}
		old[r.pkg] = r.line()
		if r.err == "" {
			delete(lived, r.pkg)
		}
		if len(r.lives) > 0 {
			lived[r.pkg] = fmt.Sprintf("- `%s`: %s", r.pkg, strings.Join(r.lives, "; "))
		}
	}
	var b strings.Builder
	b.WriteString(beginMark + "\n")
	b.WriteString("| package | killed | lived | timed out | not covered | efficacy | mutator coverage | time |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, pkg := range order {
		b.WriteString(old[pkg] + "\n")
	}
	b.WriteString("\nLived mutants at each package's last run (gremlins' file:line:column and mutator):\n\n")
	for _, pkg := range order {
		if l, ok := lived[pkg]; ok {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString(endMark)
	return os.WriteFile(doc, []byte(text[:i]+b.String()+text[j+len(endMark):]), 0o644)
}
