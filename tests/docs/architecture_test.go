// Package docs checks what the project's documents say about the code.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const root = "../.."

// topDirs are the repository's top directories a path in the document may
// start with.
var topDirs = []string{"cmd/", "pkg/", "internal/", "etc/", "rules/", "dashboards/", "deployment/", "docs/", "tests/"}

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	// fileThenIdent is "`render.go`: `Renderer`": the file declares it.
	fileThenIdent = regexp.MustCompile("`([A-Za-z0-9_]+\\.go)`: `([A-Z][A-Za-z0-9_]*)`")
)

// TestArchitectureNamesWhatExists: every path docs/architecture.md names
// exists; every Go file a row of its package table names is in that row's
// package; an identifier it places in a file ("`render.go`: `Renderer`") is
// declared there. The document drifted before (families said to be
// declared in a file that no longer held them) with nothing to catch it.
func TestArchitectureNamesWhatExists(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for n, line := range strings.Split(string(doc), "\n") {
		where := "docs/architecture.md:" + strconv.Itoa(n+1)
		for _, m := range backticked.FindAllStringSubmatch(line, -1) {
			checkPath(t, where, m[1])
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		rows++
		dirs := packageDirs(line)
		for _, m := range backticked.FindAllStringSubmatch(line, -1) {
			name := m[1]
			if !strings.HasSuffix(name, ".go") || strings.Contains(name, "/") {
				continue
			}
			if _, ok := findFile(dirs, name); !ok {
				t.Errorf("%s: %s is in none of %v", where, name, dirs)
			}
		}
		for _, m := range fileThenIdent.FindAllStringSubmatch(line, -1) {
			file, ok := findFile(dirs, m[1])
			if ok && !declares(t, file, m[2]) {
				t.Errorf("%s: %s does not declare %s", where, file, m[2])
			}
		}
	}
	if rows < 10 {
		t.Fatalf("found %d package rows: the table's shape changed, update this test", rows)
	}
}

// checkPath fails when a backticked repository path does not exist.
func checkPath(t *testing.T, where, p string) {
	t.Helper()
	p = strings.TrimSuffix(strings.Fields(p + " ")[0], ",")
	known := false
	for _, d := range topDirs {
		known = known || strings.HasPrefix(p, d)
	}
	if !known || strings.ContainsAny(p, "<>{}$") {
		return
	}
	matches, err := filepath.Glob(filepath.Join(root, p))
	if err != nil || len(matches) == 0 {
		t.Errorf("%s: %s does not exist", where, p)
	}
}

// packageDirs reads a package table row's first cell: "`pkg/source/dcgm`,
// `nvml`, `sim`" names three directories.
func packageDirs(line string) []string {
	cell := strings.SplitN(strings.TrimPrefix(line, "|"), "|", 2)[0]
	var dirs []string
	base := ""
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		d := strings.TrimSuffix(m[1], "/")
		if strings.Contains(d, "/") {
			base = filepath.Dir(d)
		} else if base != "" {
			d = filepath.Join(base, d)
		}
		dirs = append(dirs, filepath.Join(root, d))
	}
	return dirs
}

// findFile looks for name in dirs and their subdirectories one level down
// (a row may name a file of a subpackage it owns).
func findFile(dirs []string, name string) (string, bool) {
	for _, d := range dirs {
		for _, pattern := range []string{filepath.Join(d, name), filepath.Join(d, "*", name)} {
			if m, _ := filepath.Glob(pattern); len(m) > 0 {
				return m[0], true
			}
		}
	}
	return "", false
}

// declares reports whether the Go file declares ident at top level (a
// type, function, method's receiver type aside, constant or variable).
func declares(t *testing.T, file, ident string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Name == ident {
				return true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.Name == ident {
						return true
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.Name == ident {
							return true
						}
					}
				}
			}
		}
	}
	return false
}
