package build

import (
	"bytes"
	"context"
	"errors"
	"go/token"
	"os"
	"path/filepath"
	"plugin"
	"strings"
	"testing"
	"time"
)

func newBuilder(t *testing.T) *Builder {
	t.Helper()
	b, err := New(context.Background(), Options{CacheDir: t.TempDir()})
	if err != nil {
		var u *Unavailable
		if errors.As(err, &u) {
			t.Fatalf("plugins unavailable on this machine: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func TestBuildAndLoadCellsThatImportEachOther(t *testing.T) {
	b := newBuilder(t)
	ctx := context.Background()
	c1 := Package{Path: "goaccel.cells/test/c1", Imports: []string{"fmt"}, Source: []byte(`package main
import "fmt"
type point struct{ x, y int }
func (p point) String() string { return fmt.Sprintf("P(%d,%d)", p.x, p.y) }
type GXt_point = point
type GXA struct{}
func (GXA) Mk(x, y int) point { return point{x, y} }
var GXSymbols = map[string]any{"show": func(v any) string { return fmt.Sprintf("%+v %T", v, v) }}
`)}
	start := time.Now()
	b1, err := b.Build(ctx, c1, func(s string) { t.Log(s) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("c1 built in %v (cached %v)", time.Since(start), b1.Cached)
	c2 := Package{Path: "goaccel.cells/test/c2", Imports: []string{"fmt", c1.Path}, Source: []byte(`package main
import (
	"fmt"
	c1 "goaccel.cells/test/c1"
)
type point = c1.GXt_point
type circle struct{ point; r int }
var GXSymbols = map[string]any{"show": func(v any) string { return fmt.Sprintf("%+v %T", circle{c1.GXA{}.Mk(1, 2), 3}, circle{}) }}
`)}
	b2, err := b.Build(ctx, c2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, so := range []string{b1.Plugin, b2.Plugin} {
		p, err := plugin.Open(so)
		if err != nil {
			t.Fatal(err)
		}
		sym, err := p.Lookup("GXSymbols")
		if err != nil {
			t.Fatal(err)
		}
		show := (*sym.(*map[string]any))["show"].(func(any) string)
		got := show(struct{ a int }{1})
		t.Log(got)
		if so == b2.Plugin && got != "P(1,2) main.circle" {
			t.Fatalf("c2 says %q", got)
		}
	}
	// The same package again comes from the cache.
	again, err := b.Build(ctx, c1, nil)
	if err != nil || !again.Cached || again.Plugin != b1.Plugin {
		t.Fatalf("rebuild: %+v %v", again, err)
	}
}

func TestCompileErrorsAndBadImports(t *testing.T) {
	hermetic(t)
	b := newBuilder(t)
	ctx := context.Background()
	_, err := b.Build(ctx, Package{Path: "goaccel.cells/test/bad", Imports: []string{"fmt"}, Source: []byte("package main\n//line cell[4]:1:1\nvar x int = \"s\"\n")}, nil)
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Output, "cell[4]:1:13") {
		t.Fatalf("want a compile error at cell[4]:1:13, got %v", err)
	}
	err = b.Resolve(ctx, nil, "no.such.host/pkg")
	var ie *ImportError
	if !errors.As(err, &ie) || ie.Path != "no.such.host/pkg" {
		t.Fatalf("want an import error, got %v", err)
	}
	// The importer reads export data of resolved packages.
	fset := token.NewFileSet()
	pkg, err := b.Importer(fset).Import("strings")
	if err != nil || pkg.Scope().Lookup("ToUpper") == nil {
		t.Fatalf("importer: %v %v", pkg, err)
	}
}

func TestBuildIsCancelled(t *testing.T) {
	b := newBuilder(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.Build(ctx, Package{Path: "goaccel.cells/test/cancel", Imports: []string{"fmt"}, Source: []byte("package main\n")}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

// A cell package built again (its cache entry trimmed) must come out the
// same, or cached plugins of later cells built against the first build no
// longer load beside the new one ("different version of package").
func TestCellBuildsAreReproducible(t *testing.T) {
	b := newBuilder(t)
	ctx := context.Background()
	pkg := Package{Path: "goaccel.cells/test/repro", Imports: []string{"fmt"}, Source: []byte("package main\nimport \"fmt\"\nfunc Hello() { fmt.Println(\"hi\") }\n")}
	first, err := b.Build(ctx, pkg, nil)
	if err != nil {
		t.Fatal(err)
	}
	a1, err := os.ReadFile(first.Archive)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Dir(first.Archive)); err != nil {
		t.Fatal(err)
	}
	again, err := b.Build(ctx, pkg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Cached {
		t.Fatal("the second build came from the cache")
	}
	a2, err := os.ReadFile(again.Archive)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a1, a2) {
		t.Fatalf("two builds of the same cell differ (%d and %d bytes)", len(a1), len(a2))
	}
}
