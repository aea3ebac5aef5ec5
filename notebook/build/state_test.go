package build

import (
	"context"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goaccel/goaccel/internal/modtest"
)

// A second Builder (a launched worker's) that adopts the first's State
// imports what the first imports: the modules it added at their versions,
// and local packages at the versions the first's imports mean, without
// going back to the go command for what is built.
func TestAdoptStateImportsWhatTheKernelImports(t *testing.T) {
	hermetic(t)
	ctx := context.Background()
	kernel := newBuilder(t)
	if err := kernel.Get(ctx, nil, "example.com/gxfix/dep@v1.0.0"); err != nil {
		t.Fatal(err)
	}
	dir := modtest.CopyDir(t, filepath.Join("testdata", "localmod"))
	if _, err := kernel.Use(ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	if err := kernel.Resolve(ctx, nil, "example.com/gxlocal", "example.com/gxfix/dep"); err != nil {
		t.Fatal(err)
	}
	st := kernel.State()
	if st.Local["example.com/gxlocal"] != "example.com/gxlocal~1" {
		t.Fatalf("State's local versions: %v", st.Local)
	}

	worker := newBuilder(t)
	if err := worker.AdoptState(ctx, st); err != nil {
		t.Fatal(err)
	}
	mod, _ := worker.GoMod()
	for _, want := range []string{"example.com/gxfix/dep v1.0.0", "example.com/gxlocal => " + dir, ModulePath + " => " + worker.Host().SourceDir} {
		if !strings.Contains(mod, want) {
			t.Errorf("the worker's go.mod lacks %q:\n%s", want, mod)
		}
	}
	worker.mu.Lock()
	known := worker.known("example.com/gxlocal")
	worker.mu.Unlock()
	if !known {
		t.Error("the worker does not know the local package the kernel resolved")
	}
	pkg, err := worker.Importer(token.NewFileSet()).Import("example.com/gxlocal")
	if err != nil || pkg.Path() != "example.com/gxlocal~1" {
		t.Fatalf("the worker's import of example.com/gxlocal: %v %v", pkg, err)
	}

	// On a machine without the local module's directory, the error names it.
	other := newBuilder(t)
	st.GoMod = strings.ReplaceAll(st.GoMod, dir, filepath.Join(dir, "elsewhere"))
	err = other.AdoptState(ctx, st)
	if err == nil || !strings.Contains(err.Error(), "example.com/gxlocal => "+filepath.Join(dir, "elsewhere")) || !strings.Contains(err.Error(), "%use DIR") {
		t.Fatalf("adopting a State whose local module is missing: %v", err)
	}
	if mod, _ := other.GoMod(); strings.Contains(mod, "gxlocal") {
		t.Errorf("a refused State left its go.mod behind:\n%s", mod)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
