package build

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTypeSymbolNamesInALibrary(t *testing.T) {
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
	t.Logf("dynamic symbols: %d in the library, %d in the view for a cell using fmt, io, errors, strings", len(nLib), len(nView))
	if len(nView)*10 > len(nLib) {
		t.Errorf("the view holds %d of the library's %d symbols", len(nView), len(nLib))
	}
	if !nView["fmt.Fprint.abiinternal"] || nView["fmt.Sscanf.abiinternal"] || !nLib["fmt.Sscanf.abiinternal"] {
		t.Errorf("the view does not hold the fmt functions the cell calls but not the others")
	}

	// A cell importing the first and a package new to the session: its
	// view holds what both refer to (the first is linked in too).
	second := withSymbols("goaccel.cells/test/view2", []string{"net/http"},
		"var req http.Request\n", `map[string]any{"f": func() string { req.Method = "GET"; return req.Method }}`)
	second.Imports = append(second.Imports, first.Path)
	second.Source = bytes.Replace(second.Source, []byte("import (\n"), []byte("import (\n\t_ \""+first.Path+"\"\n"), 1)
	built2, err := b.Build(ctx, second, nil)
	if err != nil {
		t.Fatal(err)
	}
	view2 := b.views.linked
	syms2 := dynamicSymbols(t, view2)
	if view2 == view1 || !syms2[mangledTypeName("type:net/http.Request")] || !syms2["fmt.Fprint.abiinternal"] || syms2["net/http.(*Client).Do.abiinternal"] || b.views.fallbacks != 0 {
		t.Fatalf("the second cell linked against %q (%d fallbacks)", view2, b.views.fallbacks)
	}
	if got := call(t, built2); got != "GET" {
		t.Fatalf("got %q", got)
	}

	// A view that lacks what a link needs (the runtime's symbols only):
	// the link is done again against the library.
	third := withSymbols("goaccel.cells/test/view3", []string{"encoding/json"}, "",
		`map[string]any{"f": func() string { b, _ := json.Marshal([]int{1}); return string(b) }}`)
	var broken string
	b.views.selectSymbols = func(x *libIndex, names []string) []int32 {
		runtimeOnly := x.selectSymbols(nil)
		broken = viewName(runtimeOnly)
		return runtimeOnly
	}
	// The libraries' directory is shared with every kernel: no bad view
	// may stay there.
	t.Cleanup(func() {
		if broken != "" {
			_ = os.RemoveAll(filepath.Join(filepath.Dir(lib), "views", broken))
		}
	})
	built, err := b.Build(ctx, third, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.views.selectSymbols = nil
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
