package build

import (
	"context"
	"errors"
	"go/token"
	"os"
	"path/filepath"
	"plugin"
	"strings"
	"sync"
	"testing"

	"github.com/goaccel/goaccel/internal/modtest"
	"github.com/goaccel/goaccel/notebook/gxrt"
	"github.com/goaccel/goaccel/notebook/shlib"
)

// hermetic points the go command at the fixture proxy in testdata.
func hermetic(t *testing.T) {
	t.Helper()
	modtest.Env(t, modtest.Proxy(t, filepath.Join("testdata", "proxy")))
}

// call loads a built cell plugin and calls its "f" symbol.
func call(t *testing.T, built *Built) string {
	t.Helper()
	return load(t, built)["f"].(func() string)()
}

// load opens a built cell plugin, after the shared library it links
// against, and returns the symbols it registered (see withSymbols).
func load(t *testing.T, built *Built) map[string]any {
	t.Helper()
	if len(built.Shared) > 0 {
		if err := shlib.Load(built.Shared...); err != nil {
			t.Fatal(err)
		}
	}
	gxrt.TakeRegistered()
	if _, err := plugin.Open(built.Plugin); err != nil {
		t.Fatal(err)
	}
	tables := gxrt.TakeRegistered()
	if len(tables) != 1 {
		t.Fatalf("%s registered %d symbol tables", built.Plugin, len(tables))
	}
	return tables[0]
}

// withSymbols is a test cell: its source registers table (a map literal)
// with gxrt, as generated cells do.
func withSymbols(path string, imports []string, decls, table string) Package {
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n\tgxrt \"" + CellRuntimePath + "\"\n")
	for _, p := range imports {
		if !strings.HasPrefix(p, "goaccel.cells/") {
			src.WriteString("\t\"" + p + "\"\n")
		}
	}
	src.WriteString(")\n\n" + decls + "\nfunc init() { gxrt.Register(" + table + ") }\n")
	return Package{Path: path, Imports: append([]string{CellRuntimePath}, imports...), Source: []byte(src.String())}
}

// notes collects progress messages.
type notes struct {
	mu sync.Mutex
	l  []string
}

func (n *notes) add(s string) { n.mu.Lock(); n.l = append(n.l, s); n.mu.Unlock() }
func (n *notes) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.l, "\n")
}

func TestUseLocalModuleAndPickUpEdits(t *testing.T) {
	hermetic(t)
	b := newBuilder(t)
	ctx := context.Background()
	dir := modtest.CopyDir(t, filepath.Join("testdata", "localmod"))
	path, err := b.Use(ctx, dir, nil)
	if err != nil || path != "example.com/gxlocal" {
		t.Fatalf("Use: %q %v", path, err)
	}
	if mod, _ := b.GoMod(); !strings.Contains(mod, "example.com/gxlocal => "+dir) {
		t.Fatalf("go.mod lacks the replace:\n%s", mod)
	}
	imp := b.Importer(token.NewFileSet())
	pkg, err := imp.Import("example.com/gxlocal")
	if err != nil || pkg.Path() != "example.com/gxlocal~1" || pkg.Scope().Lookup("Hello") == nil {
		t.Fatalf("import: %v %v", pkg, err)
	}
	cell := func(path string) Package {
		return withSymbols(path, []string{"example.com/gxlocal", "example.com/gxlocal/sub"}, "",
			`map[string]any{"f": func() string { return gxlocal.Hello() + " / " + sub.Hello() }}`)
	}
	b1, err := b.Build(ctx, cell("goaccel.cells/test/use1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := call(t, b1); got != "v1 / sub of v1" {
		t.Fatalf("first version: %q", got)
	}

	// Edit the module. Without %use the kernel keeps the version it has.
	hello := filepath.Join(dir, "hello.go")
	src, _ := os.ReadFile(hello)
	if err := os.WriteFile(hello, []byte(strings.Replace(string(src), `"v1"`, `"v2"`, 1)+"\n// Added is new.\nfunc Added() int { return 2 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := b.Build(ctx, cell("goaccel.cells/test/use1"), nil)
	if err != nil || !again.Cached {
		t.Fatalf("before %%use again: %+v %v", again, err)
	}
	// %use again: the new version gets a path of its own, and cells built
	// against it are new builds (the cache key covers the module's
	// content), loadable beside the first version.
	if _, err := b.Use(ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	pkg, err = imp.Import("example.com/gxlocal")
	if err != nil || pkg.Path() != "example.com/gxlocal~2" || pkg.Scope().Lookup("Added") == nil {
		t.Fatalf("import after the edit: %v %v", pkg, err)
	}
	same, err := b.Build(ctx, cell("goaccel.cells/test/use1"), nil)
	if err != nil || same.Cached || same.Plugin == b1.Plugin {
		t.Fatalf("the same cell after the edit: %+v %v", same, err)
	}
	b2, err := b.Build(ctx, cell("goaccel.cells/test/use2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := call(t, b2); got != "v2 / sub of v2" {
		t.Fatalf("after the edit: %q", got)
	}
	// %use without changes keeps the version.
	if _, err := b.Use(ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	if again, err := b.Build(ctx, cell("goaccel.cells/test/use2"), nil); err != nil || !again.Cached {
		t.Fatalf("unchanged module: %+v %v", again, err)
	}
	// A compile error in the module names the package and the file.
	if err := os.WriteFile(hello, []byte("package gxlocal\nfunc Hello() string { return 1 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Use(ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	err = b.Resolve(ctx, nil, "example.com/gxlocal")
	if err == nil || !strings.Contains(err.Error(), hello+":2") || !strings.Contains(err.Error(), "example.com/gxlocal") {
		t.Fatalf("want a compile error in hello.go, got %v", err)
	}
}

func TestUseRefusesWhatIsNotAModule(t *testing.T) {
	hermetic(t)
	b := newBuilder(t)
	_, err := b.Use(context.Background(), t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "no go.mod") {
		t.Fatalf("want a missing go.mod error, got %v", err)
	}
}

func TestGoWorkBesideTheNotebook(t *testing.T) {
	hermetic(t)
	b := newBuilder(t)
	ctx := context.Background()
	if used, err := b.GoWork(ctx, t.TempDir(), nil); err != nil || used != nil {
		t.Fatalf("no go.work: %v %v", used, err)
	}
	dir := t.TempDir()
	mod := modtest.CopyDir(t, filepath.Join("testdata", "workmod"))
	if err := os.Rename(mod, filepath.Join(dir, "workmod")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.work"), []byte("go 1.22\n\nuse ./workmod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	used, err := b.GoWork(ctx, dir, nil)
	if err != nil || len(used) != 1 || used[0] != "example.com/gxwork" {
		t.Fatalf("go.work: %v %v", used, err)
	}
	built, err := b.Build(ctx, withSymbols("goaccel.cells/test/work", []string{"example.com/gxwork"}, "",
		`map[string]any{"f": gxwork.Name}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := call(t, built); got != "from go.work" {
		t.Fatalf("got %q", got)
	}
}

func TestImportFetchesTheModule(t *testing.T) {
	hermetic(t)
	b := newBuilder(t)
	ctx := context.Background()
	var n notes
	if err := b.Resolve(ctx, n.add, "example.com/gxfix/dep"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(n.String(), "fetching the module that provides example.com/gxfix/dep") ||
		!strings.Contains(n.String(), "added example.com/gxfix/dep v1.1.0 to the session module") {
		t.Errorf("progress:\n%s", n.String())
	}
	if mod, _ := b.GoMod(); !strings.Contains(mod, "example.com/gxfix/dep v1.1.0") {
		t.Errorf("go.mod:\n%s", mod)
	}
	// Cells may have loaded v1.1.0 now: another version is refused.
	err := b.Get(ctx, nil, "example.com/gxfix/dep@v1.0.0")
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Moves) != 1 || ce.Moves[0].Kernel || ce.Moves[0].Have != "v1.1.0" ||
		!strings.Contains(err.Error(), "restart the kernel") {
		t.Fatalf("want a conflict with the loaded version, got %v", err)
	}
	if mod, _ := b.GoMod(); !strings.Contains(mod, "example.com/gxfix/dep v1.1.0") {
		t.Errorf("the refused change stayed:\n%s", mod)
	}
}

func TestVersionConflictWithTheKernel(t *testing.T) {
	hermetic(t)
	host, err := CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	// Pretend the kernel links dep v1.0.0.
	host.Deps = map[string]string{"example.com/gxfix/dep": "v1.0.0"}
	b, err := New(context.Background(), Options{CacheDir: t.TempDir(), Host: &host})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx := context.Background()
	var ce *ConflictError
	// A first import picks the latest version, which the kernel does not have.
	err = b.Resolve(ctx, nil, "example.com/gxfix/dep")
	if !errors.As(err, &ce) || !ce.Moves[0].Kernel || !strings.Contains(err.Error(), "%go get example.com/gxfix/dep@VERSION") {
		t.Fatalf("want a conflict with the kernel, got %v", err)
	}
	// Another version of it asked for outright is refused before the go
	// command runs.
	err = b.Get(ctx, nil, "example.com/gxfix/dep@v1.1.0")
	if !errors.As(err, &ce) || !ce.Moves[0].Kernel || ce.Moves[0].Want != "v1.1.0" {
		t.Fatalf("want a conflict with the kernel, got %v", err)
	}
	// Pinning the kernel's version works, and the import with it.
	if err := b.Get(ctx, nil, "example.com/gxfix/dep@v1.0.0"); err != nil {
		t.Fatal(err)
	}
	built, err := b.Build(ctx, withSymbols("goaccel.cells/test/dep", []string{"example.com/gxfix/dep"}, "",
		`map[string]any{"f": dep.Version}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := call(t, built); got != "dep v1.0.0" {
		t.Fatalf("got %q", got)
	}
	// A module that needs a newer dep is refused, and go.mod is left as it was.
	before, _ := b.GoMod()
	err = b.Get(ctx, nil, "example.com/gxfix/needsnew@v1.0.0")
	if !errors.As(err, &ce) || ce.What != "%go get example.com/gxfix/needsnew@v1.0.0" ||
		!strings.Contains(err.Error(), "example.com/gxfix/dep v1.1.0 (the kernel is built with v1.0.0)") {
		t.Fatalf("want a conflict naming dep, got %v", err)
	}
	if after, _ := b.GoMod(); after != before {
		t.Errorf("go.mod changed:\n%s", after)
	}
}

func TestIsVersion(t *testing.T) {
	for v, want := range map[string]bool{"v1.2.3": true, "v0.0.0-20240101000000-abcdef123456": true, "v2.0.0+incompatible": true,
		"v1.2": false, "latest": false, "upgrade": false, "master": false, "v1.2.x": false, "": false} {
		if isVersion(v) != want {
			t.Errorf("isVersion(%q) = %v", v, !want)
		}
	}
}

func TestFetchErrorsSayWhatToDo(t *testing.T) {
	hermetic(t)
	ctx := context.Background()
	for _, c := range []struct{ proxy, want string }{
		{"off", "GOPROXY=off"},
		{"http://127.0.0.1:1", "cannot be reached"},
	} {
		t.Setenv("GOPROXY", c.proxy)
		b := newBuilder(t)
		err := b.Resolve(ctx, nil, "example.com/gxfix/dep")
		var fe *FetchError
		if !errors.As(err, &fe) || !strings.Contains(fe.Hint, c.want) || !strings.Contains(err.Error(), "example.com/gxfix/dep") {
			t.Errorf("GOPROXY=%s: want a fetch error saying %q, got %v", c.proxy, c.want, err)
		}
		if p := b.ImportProblem("example.com/gxfix/dep"); p == nil || !errors.As(p, &fe) {
			t.Errorf("GOPROXY=%s: ImportProblem: %v", c.proxy, p)
		}
		err = b.Get(ctx, nil, "example.com/gxfix/dep@v1.0.0")
		if !errors.As(err, &fe) || !strings.Contains(fe.Hint, c.want) {
			t.Errorf("GOPROXY=%s: %%go get: want a fetch error saying %q, got %v", c.proxy, c.want, err)
		}
	}
}
