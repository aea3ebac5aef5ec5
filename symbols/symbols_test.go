package symbols

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// generatedPackages reads the import paths named by symbols.go's
// go:generate lines.
func generatedPackages(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("symbols.go")
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for _, line := range strings.Split(string(src), "\n") {
		rest, ok := strings.CutPrefix(line, "//go:generate go run github.com/traefik/yaegi/cmd/yaegi extract -name symbols ")
		if !ok {
			continue
		}
		pkgs = append(pkgs, strings.Fields(rest)...)
	}
	if len(pkgs) == 0 {
		t.Fatal("no go:generate lines found in symbols.go")
	}
	return pkgs
}

// TestTablesAreCurrent checks that every exported, non-generic name of
// goaccel's cell-facing packages is in the tables. A name added to one of
// them without `go generate ./symbols` would be missing in cells; a removed
// or changed one already breaks the build.
func TestTablesAreCurrent(t *testing.T) {
	const mod = "github.com/goaccel/goaccel"
	for _, pkg := range generatedPackages(t) {
		rel, ok := strings.CutPrefix(pkg, mod)
		if !ok {
			continue // third-party packages change only with go.mod
		}
		dir := filepath.Join("..", filepath.FromSlash(strings.TrimPrefix(rel, "/")))
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		if err != nil {
			t.Fatalf("parsing %s: %v", dir, err)
		}
		key := pkg + "/" + pkg[strings.LastIndex(pkg, "/")+1:]
		table := Symbols[key]
		if table == nil {
			t.Errorf("no table for %s: run `go generate ./symbols`", pkg)
			continue
		}
		for _, p := range pkgs {
			for name, f := range p.Files {
				if strings.Contains(name, "_other.go") || strings.Contains(name, "nocgo") {
					continue // files for other platforms or builds
				}
				for _, d := range f.Decls {
					for _, n := range exportedNames(d) {
						if _, ok := table[n]; !ok {
							t.Errorf("%s.%s is missing from the yaegi tables: run `go generate ./symbols`", pkg, n)
						}
					}
				}
			}
		}
	}
}

// exportedNames lists the exported, non-generic top-level names d declares
// (methods are reached through their types).
func exportedNames(d ast.Decl) []string {
	var out []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil && d.Name.IsExported() && d.Type.TypeParams == nil {
			out = append(out, d.Name.Name)
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() && s.TypeParams == nil {
					out = append(out, s.Name.Name)
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						out = append(out, n.Name)
					}
				}
			}
		}
	}
	return out
}

func TestGonumIsExposed(t *testing.T) {
	for _, k := range []string{"gonum.org/v1/gonum/mat/mat", "gonum.org/v1/gonum/floats/floats", "gonum.org/v1/gonum/stat/stat"} {
		if len(Symbols[k]) == 0 {
			t.Errorf("no symbols for %s", k)
		}
	}
	if _, ok := Symbols["gonum.org/v1/gonum/mat/mat"]["NewDense"]; !ok {
		t.Error("mat.NewDense is not exposed")
	}
}
