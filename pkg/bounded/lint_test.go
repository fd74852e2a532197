package bounded

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// unbounded lists the calls that read from outside the process with no
// deadline or no size cap, by import path and name ("" for every name of
// the package).
var unbounded = map[string]map[string]bool{
	"os":            {"Open": true, "OpenFile": true, "ReadFile": true, "ReadDir": true, "NewFile": true, "Stat": true, "Lstat": true, "Readlink": true},
	"io":            {"ReadAll": true},
	"io/ioutil":     {"": true},
	"path/filepath": {"Glob": true, "Walk": true, "WalkDir": true, "EvalSymlinks": true},
}

// exemptMark on the line of a call lets it through, with the reason after
// it: an open that reads nothing (a device node opened to test
// permission), bounded by a Call around it.
const exemptMark = "bounded:exempt"

// TestNoUnboundedReads fails when code the binary links (cmd, pkg,
// internal; not tests) reads a file, a directory, a file's metadata
// (stat, lstat, readlink: they block on a hung mount as reads do),
// standard input or a reply body other than through this package: such a read can block past
// every deadline (a named pipe, a process stuck in the kernel, a hung
// mount) or fill the memory (/dev/zero, a reply of gigabytes).
func TestNoUnboundedReads(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	var found []string
	for _, top := range []string{"cmd", "pkg", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == "testdata" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			if filepath.Dir(path) == filepath.Join(root, "pkg", "bounded") {
				return nil // the one place that may
			}
			found = append(found, unboundedReads(t, path)...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range found {
		t.Errorf("%s: read it through pkg/bounded (a deadline from the context and a size cap), or mark a call that reads nothing with %q and the reason", f, exemptMark)
	}
}

// unboundedReads parses one file and lists its unbounded reads as
// "file:line: call".
func unboundedReads(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string]string{} // local name -> import path
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = p
	}
	exempt := map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.Contains(c.Text, exemptMark) {
				exempt[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		line := fset.Position(sel.Pos()).Line
		pkg := imports[x.Name]
		names := unbounded[pkg]
		bad := names[""] || names[sel.Sel.Name] || (pkg == "os" && sel.Sel.Name == "Stdin")
		if bad && !exempt[line] {
			out = append(out, path+":"+strconv.Itoa(line)+": "+x.Name+"."+sel.Sel.Name)
		}
		return true
	})
	return out
}

// TestUnboundedReadsFound: the check sees each kind of unbounded read and
// lets a marked one through.
func TestUnboundedReadsFound(t *testing.T) {
	t.Parallel()
	src := `package p

import (
	"io"
	myos "os"
	"io/ioutil"
	fp "path/filepath"
)

func f(r io.Reader) {
	_, _ = myos.ReadFile("/proc/1/stat")
	_, _ = myos.Open("/proc/1/cgroup")
	_, _ = io.ReadAll(r)
	_, _ = ioutil.ReadFile("x")
	_ = myos.Stdin
	_, _ = myos.OpenFile("/dev/nvidia0", myos.O_RDWR, 0) // bounded:exempt reads nothing
	_, _ = myos.Stat("x")
	_, _ = myos.Lstat("x")
	_, _ = fp.Glob("/dev/nvidia*")
	_ = fp.Join("a", "b")
}
`
	path := filepath.Join(t.TempDir(), "p.go")
	if err := writeFile(path, src); err != nil {
		t.Fatal(err)
	}
	got := unboundedReads(t, path)
	want := []string{"myos.ReadFile", "myos.Open", "io.ReadAll", "ioutil.ReadFile", "myos.Stdin", "myos.Stat", "myos.Lstat", "fp.Glob"}
	if len(got) != len(want) {
		t.Fatalf("found %q, want %q", got, want)
	}
	for i, w := range want {
		if !strings.HasSuffix(got[i], ": "+w) {
			t.Errorf("finding %d = %q, want %q", i, got[i], w)
		}
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
