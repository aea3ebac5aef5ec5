package build

import (
	"bytes"
	"context"
	"errors"
	"go/token"
	"os"
	"path/filepath"
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
	c1 := withSymbols("goaccel.cells/test/c1", []string{"fmt"}, `type point struct{ x, y int }
func (p point) String() string { return fmt.Sprintf("P(%d,%d)", p.x, p.y) }
type GXt_point = point
type GXA struct{}
func (GXA) Mk(x, y int) point { return point{x, y} }
`, `map[string]any{"show": func(v any) string { return fmt.Sprintf("%+v %T", v, v) }}`)
	start := time.Now()
	b1, err := b.Build(ctx, c1, func(s string) { t.Log(s) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("c1 built in %v (cached %v)", time.Since(start), b1.Cached)
	c2 := withSymbols("goaccel.cells/test/c2", []string{"fmt", c1.Path}, `import c1 "goaccel.cells/test/c1"
type point = c1.GXt_point
type circle struct{ point; r int }
`, `map[string]any{"show": func(v any) string { return fmt.Sprintf("%+v %T", circle{c1.GXA{}.Mk(1, 2), 3}, circle{}) }}`)
	b2, err := b.Build(ctx, c2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, built := range []*Built{b1, b2} {
		show := load(t, built)["show"].(func(any) string)
		got := show(struct{ a int }{1})
		t.Log(got)
		if built == b2 && got != "P(1,2) main.circle" {
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

// A cell links against the shared library and carries only its own code;
// with GOACCEL_SHARED_LIB=0 it carries every package it uses, as before.
func TestCellsLinkAgainstTheSharedLibrary(t *testing.T) {
	if !sharedWanted(mustHost(t)) {
		t.Skip("no shared library in this configuration (see sharedWanted)")
	}
	ctx := context.Background()
	cell := func(path string) Package {
		return withSymbols(path, []string{"fmt", "strings"}, "",
			`map[string]any{"f": func() string { return fmt.Sprint(strings.Repeat("ab", 2), 3) }}`)
	}
	b := newBuilder(t)
	built, err := b.Build(ctx, cell("goaccel.cells/test/shared"), nil)
	if err != nil {
		t.Fatal(err)
	}
	lib, whyNot := b.SharedLibrary()
	if len(built.Shared) != 1 || built.Shared[0] != lib || whyNot != nil {
		t.Fatalf("built %+v, library %q (%v)", built, lib, whyNot)
	}
	if got := call(t, built); got != "abab3" {
		t.Fatalf("got %q", got)
	}
	t.Setenv("GOACCEL_SHARED_LIB", "0")
	classic := newBuilder(t)
	cb, err := classic.Build(ctx, cell("goaccel.cells/test/classic"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cb.Shared) != 0 {
		t.Fatalf("GOACCEL_SHARED_LIB=0 built against %v", cb.Shared)
	}
	small, big := fileSize(t, built.Plugin), fileSize(t, cb.Plugin)
	t.Logf("plugin: %d bytes against the library, %d carrying its packages", small, big)
	// The runtime alone is over a megabyte: a plugin without it is far
	// smaller than one with it.
	if small*10 > big {
		t.Fatalf("the plugin linked against the library (%d bytes) is not much smaller than one carrying its packages (%d)", small, big)
	}
}

func mustHost(t *testing.T) Host {
	t.Helper()
	h, err := CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
