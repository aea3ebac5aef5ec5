package build

import (
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSymbolNamesOfPackagesAndTypes(t *testing.T) {
	// The hash cmd/link gives *net/http.Request's descriptor in a shared
	// library (read from one it linked).
	if got := mangledTypeName("type:*net/http.Request"); got != "type:8Fp1XRzg" {
		t.Errorf("mangledTypeName = %q", got)
	}
	for _, same := range []string{"type:runtime.g_plus_long_name", "type:int", "fmt.Println"} {
		if got := mangledTypeName(same); got != same {
			t.Errorf("mangledTypeName(%q) = %q", same, got)
		}
	}
	if got := symbolPrefix("gopkg.in/yaml.v3"); got != "gopkg.in/yaml%2ev3" {
		t.Errorf("symbolPrefix = %q", got)
	}
	x := &libIndex{}
	x.numberPackages([]string{"fmt", "net/http", "gopkg.in/yaml.v3", "io", "os", "sync/atomic"})
	for name, want := range map[string][]string{
		"fmt.(*pp).doPrint":                       {"fmt"},
		"type:map[string]*net/http.Request":       {"net/http"},
		"go:itab.*os.File,io.Writer":              {"os", "io"},
		"gopkg.in/yaml%2ev3.Marshal":              {"gopkg.in/yaml%2ev3"},
		"sync/atomic.(*Pointer[net/http.x]).Load": {"sync/atomic", "net/http"},
		`type:struct { F int "json:\"a.b\"" }`:    nil,
		"runtime.morestack":                       nil,
	} {
		var got []string
		for _, n := range x.mentions(name, nil) {
			for p, m := range x.pkgIndex {
				if m == int(n) {
					got = append(got, p)
				}
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s mentions %v, want %v", name, got, want)
		}
	}
}

func TestReadRefsRefusesWhatItDidNotWrite(t *testing.T) {
	dir := t.TempDir()
	x := &libIndex{path: "lib.so", syms: make([]rawSym, 3)}
	x.numberPackages([]string{"fmt", "os"})
	x.refs = [][]uint16{{0}, nil, {0, 1}}
	file := filepath.Join(dir, "refs")
	if err := x.writeRefs(file); err != nil {
		t.Fatal(err)
	}
	y := &libIndex{path: "lib.so", syms: make([]rawSym, 3)}
	if err := y.readRefs(file); err != nil || len(y.refs[2]) != 2 || y.pkgIndex["os"] != 1 {
		t.Fatalf("read back: %v %v %v", err, y.refs, y.pkgIndex)
	}
	other := &libIndex{path: "lib.so", syms: make([]rawSym, 4)} // another library
	if err := other.readRefs(file); err == nil {
		t.Fatal("refs of a library with another number of symbols accepted")
	}
	if err := os.WriteFile(file, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := y.readRefs(file); err == nil {
		t.Fatal("garbage accepted")
	}
}

func TestTrimViewsKeepsTheLastUsed(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	for i := 0; i < 5; i++ {
		v := filepath.Join(dir, string(rune('a'+i)))
		if err := os.Mkdir(v, 0o755); err != nil {
			t.Fatal(err)
		}
		when := now.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(v, when, when); err != nil {
			t.Fatal(err)
		}
	}
	trimViews(dir, 3)
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if strings.Join(left, "") != "cde" {
		t.Fatalf("left %v, want the three used last (c d e)", left)
	}
}

func TestCellsLinkAgainstAViewOfTheLibrary(t *testing.T) {
	if !sharedWanted(mustHost(t)) {
		t.Skip("no shared library in this configuration (see sharedWanted)")
	}
	ctx := context.Background()
	b := newBuilder(t)
	// What makes the linker read a library's type descriptors: a global
	// of a library type (its pointer bitmap), an array of them (a GC
	// program), an interface of a library type (an itab), an inlined
	// function that makes a value of an unexported library type.
	first, err := b.Build(ctx, withSymbols("goaccel.cells/test/view1", []string{"errors", "fmt", "io", "strings"},
		"var sb strings.Builder\nvar many [1000]strings.Builder\nvar w io.Writer = &sb\n",
		`map[string]any{"f": func() string { fmt.Fprint(w, "ab", len(many)); return sb.String() + errors.New("!").Error() }}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	view1 := b.views.linked
	if filepath.Base(filepath.Dir(filepath.Dir(view1))) != "views" || b.views.fallbacks != 0 {
		t.Fatalf("linked against %q (%d fallbacks), not a view", view1, b.views.fallbacks)
	}
	if got := call(t, first); got != "ab1000!" {
		t.Fatalf("got %q", got)
	}
	lib, _ := b.SharedLibrary()
	nLib, nView := dynamicSymbols(t, lib), dynamicSymbols(t, view1)
	t.Logf("dynamic symbols: %d in the library, %d in the view for fmt, io, errors, strings", len(nLib), len(nView))
	if len(nView)*3 > len(nLib) {
		t.Errorf("the view holds %d of the library's %d symbols", len(nView), len(nLib))
	}
	if !nView["fmt.Fprint.abiinternal"] || nView["net/http.(*Client).Do.abiinternal"] || !nLib["net/http.(*Client).Do.abiinternal"] {
		t.Errorf("the view does not hold fmt's symbols but not net/http's")
	}
	if !fileExists(filepath.Join(filepath.Dir(lib), "view-refs")) {
		t.Error("the library's refs were not kept beside it")
	}

	// A cell importing the first and a package new to the closure: a view
	// of both.
	second, err := b.Build(ctx, withSymbols("goaccel.cells/test/view2", []string{"goaccel.cells/test/view1", "net/http"},
		"var req http.Request\n", `map[string]any{"f": func() string { req.Method = "GET"; return req.Method }}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	view2 := b.views.linked
	if view2 == view1 || !dynamicSymbols(t, view2)["net/http.(*Client).Do.abiinternal"] || !dynamicSymbols(t, view2)["fmt.Fprint.abiinternal"] || b.views.fallbacks != 0 {
		t.Fatalf("the second cell linked against %q (%d fallbacks)", view2, b.views.fallbacks)
	}
	if got := call(t, second); got != "GET" {
		t.Fatalf("got %q", got)
	}

	// A view that lacks what a link needs: the link is done again against
	// the library.
	third := withSymbols("goaccel.cells/test/view3", []string{"encoding/json"}, "",
		`map[string]any{"f": func() string { b, _ := json.Marshal([]int{1}); return string(b) }}`)
	closure := b.noteClosure(third)
	x, err := b.libIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(filepath.Dir(lib), "views", closure.name, filepath.Base(lib))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// The libraries' directory is shared with every kernel: no bad view
	// may stay there.
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(path)) })
	if err := x.writeView(path, []string{"runtime"}); err != nil {
		t.Fatal(err)
	}
	built, err := b.Build(ctx, third, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b.views.linked != lib || b.views.fallbacks != 1 {
		t.Fatalf("linked against %q after %d fallbacks", b.views.linked, b.views.fallbacks)
	}
	if got := call(t, built); got != "[1]" {
		t.Fatalf("got %q", got)
	}
}

// dynamicSymbols are the names in an ELF file's dynamic symbol table.
func dynamicSymbols(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	names := make(map[string]bool, len(syms))
	for _, s := range syms {
		names[s.Name] = true
	}
	return names
}
